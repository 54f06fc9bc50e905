"""`strata serve` (docs/serve.md, docs/cli.md): the option parsing; strata/serve/run.py serves."""

from __future__ import annotations

import click

from strata.app import App


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback by default; 0.0.0.0 for every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=5000, show_default=True,
              help="Port to listen on (0: any free port; the URL is printed on stderr).")
@click.option("--api-key", envvar="STRATA_API_KEY", metavar="KEY",
              help="Require 'Authorization: Bearer KEY' on every endpoint but health [default: $STRATA_API_KEY].")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="Allow browser requests from ORIGIN (repeatable); CORS is off without it.")
@click.option("--max-body", type=click.IntRange(min=1024), default=None, metavar="BYTES",
              help="Largest request body, after decompression [10 MB].")
@click.option("--index/--no-index", "keep_index", default=True, show_default=True,
              help="Keep the component index current (built in the server's worker once no event "
                   "is waiting, or every 30 s under load).")
@click.pass_obj
def serve(app: App, host: str, port: int, api_key: str | None, cors_origins: tuple[str, ...],
          max_body: int | None, keep_index: bool) -> None:
    """Serve the store as a lineage service: OpenLineage events in (POST /api/v1/lineage),
    Marquez's lineage API and Strata's own out, until SIGTERM or Ctrl-C."""
    from strata.serve.run import serve as run  # deferred: it loads fastapi, uvicorn, pydantic

    if app.as_of is not None:
        raise click.UsageError("strata serve writes the store: drop --as-of (reads take ?as_of=)")
    run(app.store_path, host, port, api_key, cors_origins, app.engine, max_body, keep_index)


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: any free port; the URL is printed on stderr).")
@click.option("--no-browser", is_flag=True, help="Print the URL only; do not open a browser.")
@click.pass_obj
def ui(app: App, host: str, port: int, no_browser: bool) -> None:
    """Browse the store's lineage in a web page: a read-only server on the store (no writer lock),
    its URL printed and opened in the browser, until Ctrl-C (docs/ui.md)."""
    import webbrowser  # deferred: only strata ui opens a browser

    from strata.serve.run import serve as run  # deferred: it loads fastapi, uvicorn, pydantic

    if app.as_of is not None:
        raise click.UsageError("strata ui shows every version: drop --as-of (the page has a version picker)")
    run(app.store_path, host, port, None, (), app.engine, read_only=True,
        on_ready=None if no_browser else lambda url: webbrowser.open(url))
