"""The `strata` command (docs/cli.md). Commands parse options and call the library.

Exit codes: 0 success; 2 the user's input is wrong (syntax, unknown name, invalid bundle) with a
message on stderr saying what and where; 1 anything else; 3 `strata verify` found the store
tampered with. No traceback unless --debug.
Commands raise errors and `StrataGroup.invoke` alone turns them into messages and exit codes.
Subcommands in other modules are imported only when used, so `strata --help` is instant.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import click

from store.arrow import defer_pandas
from store.errors import UserError
from strata import progress
from strata.app import App, report

# name -> "module:attribute" of commands that live next to their subsystem.
LAZY_COMMANDS = {
    "query": "strata.cli_query:query",
    "trace": "strata.cli_query:trace",
    "index": "strata.cli_index:index",
    "lineage": "strata.cli_index:lineage",
    "export": "strata.cli_export:export",
    "show": "strata.cli_export:show",
    "report": "strata.cli_report:report",
    "repl": "strata.repl:repl",
    "verify": "strata.cli_verify:verify",
    "diff": "strata.cli_verify:diff",
    "capture": "strata.cli_capture:capture",
}


class StrataGroup(click.Group):
    """Lazy subcommands plus one place that turns errors into messages and exit codes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            module, attr = LAZY_COMMANDS[name].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001 - the CLI's one broad catch
            report(e, debug=bool(ctx.params.get("debug")))


@click.group(cls=StrataGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--store", "store_path", envvar="STRATA_STORE", metavar="PATH",
              help="Store folder or Hadoop URI [default: $STRATA_STORE, else ./.strata].")
@click.option("--master", metavar="URL", help="Spark master [default: $STRATA_SPARK_MASTER, else local[*]].")
@click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Spark configuration (repeatable).")
@click.option("--engine", type=click.Choice(["auto", "local", "spark"]), envvar="STRATA_ENGINE",
              help="Who answers: DuckDB in this process (local), Spark, or per question (auto) "
                   "[default: $STRATA_ENGINE, else auto].")
@click.option("--as-of", "as_of", type=click.IntRange(min=1), metavar="VERSION",
              help="Answer from committed version VERSION instead of the newest (`strata info` lists them).")
@click.option("--debug", is_flag=True, help="Show tracebacks and Spark's logs.")
@click.version_option(package_name="strata-prov", prog_name="strata")
@click.pass_context
def main(ctx: click.Context, store_path: str | None, master: str | None, conf: tuple[str, ...],
         engine: str | None, as_of: int | None, debug: bool) -> None:
    """Strata: multi-granularity provenance on Apache Spark."""
    if ctx.invoked_subcommand != "capture":  # capture runs the user's program: its pandas is its own
        defer_pandas()  # a question the DuckDB engine answers needs no pandas (store/arrow.py)
    if isinstance(ctx.obj, App):  # embedded around an open store (App.of): keep it
        ctx.obj.debug = ctx.obj.debug or debug
        if as_of is not None:
            ctx.obj._store = ctx.obj.store().at(as_of)
    else:
        ctx.obj = App(store_path, master, conf, debug, engine, as_of)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["bundle", "triples", "openlineage", "prov"]),
              help="How to read FILES: bundle or triples when the extension is ambiguous; OpenLineage "
                   "events or W3C PROV documents (docs/openlineage.md, docs/prov.md).")
@click.pass_obj
@progress.around
def ingest(app: App, files: tuple[str, ...], fmt: str | None) -> None:
    """Ingest bundles (.json, .jsonl, folders of sections), triples (.csv, .parquet), OpenLineage
    events or W3C PROV documents in one commit."""
    from pathlib import Path

    missing = [f for f in files if not Path(f).exists()]
    if missing:
        raise UserError(f"no such file: {missing[0]}", hint="check the path")
    if fmt in ("openlineage", "prov"):
        from strata.cli_interop import ingest_interop

        return ingest_interop(app, files, fmt)
    commit = app.store().ingest(*files, fmt=fmt)
    c = commit.counts
    click.echo(f"committed version {commit.version}: {c.elements} elements, {c.vertices} vertices, "
               f"{c.edges} edges from {len(files)} file(s)", err=True)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_obj
def info(app: App, fmt: str) -> None:
    """Counts per kind, type and granularity; commits; index state."""
    data = app.store().info()
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
        return
    from strata.render import render_info

    render_info(data)


@main.command()
@click.option("--fresh/--keep", default=True, help="Rebuild the demo store from scratch.")
@click.pass_obj
def demo(app: App, fresh: bool) -> None:
    """Build a demo store from the bundled examples and show what it can do."""
    from strata.demo import run_demo

    run_demo(app, fresh=fresh)


if __name__ == "__main__":  # pragma: no cover - `python -m strata.cli`
    from strata.cli import main as imported  # the module subcommands import, so they share its App class

    imported()
