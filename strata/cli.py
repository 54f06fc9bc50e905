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

# name -> ("module:attribute", short help) of the commands that live next to their subsystem. The
# short help is what `strata --help` lists, so that listing the commands imports none of them (a
# test checks each against its command's own help).
LAZY_COMMANDS = {
    "capture": ("strata.cli_capture:capture",
                "Run an unmodified PySpark script and capture every write it makes (one run per write)."),
    "diff": ("strata.cli_verify:diff", "Compare two runs (captured run ids or OpenLineage runIds) or a dataset "
                                       "at two versions (NAME@1 NAME@2)."),
    "export": ("strata.cli_export:export", "Export a subgraph of the store to other tools."),
    "index": ("strata.cli_index:index",
              "Build or update the component index (components, connected sets, set dependencies)."),
    "lineage": ("strata.cli_index:lineage",
                "Lineage of ITEM: every value with a path to it (or from it, with --forward)."),
    "model": ("strata.cli_capture:model",
              "Map runs captured with --no-model into the multi-granularity model (default: every such run)."),
    "query": ("strata.cli_query:query", 'Run one IQL statement, e.g. strata query "select p.id from WebPage p".'),
    "repl": ("strata.repl:repl", "Interactive IQL shell: statements end with ;, \\? lists commands, Ctrl-D quits."),
    "report": ("strata.cli_report:report",
               "Data-usage heatmap and audit report over traces of a captured run (docs/tracing.md)."),
    "serve": ("strata.serve.command:serve", "Serve the store as a lineage service: OpenLineage events in "
                                            "(POST /api/v1/lineage), Marquez's lineage API and Strata's own out, "
                                            "until SIGTERM or Ctrl-C."),
    "show": ("strata.cli_export:show", "Draw the lineage of ITEM (or --query / --id / --component) as a "
                                       "self-contained HTML page."),
    "trace": ("strata.cli_query:trace", "Where the result items matching PATTERN come from: each input item "
                                        "that made or influenced them, where it lives (file:line, file#row, "
                                        "catalog table) and its values."),
    "ui": ("strata.serve.command:ui", "Browse the store's lineage in a web page: a read-only server on the "
                                      "store (no writer lock), its URL printed and opened in the browser, "
                                      "until Ctrl-C (docs/ui.md)."),
    "verify": ("strata.cli_verify:verify", "Recompute the commits' hash chain and report tampering (exit code 3)."),
}


class StrataGroup(click.Group):
    """Lazy subcommands plus one place that turns errors into messages and exit codes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            module, attr = LAZY_COMMANDS[name][0].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `--help`, the lazy commands' lines from LAZY_COMMANDS (no import)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            if name in LAZY_COMMANDS:
                rows.append((name, click.Command(name, short_help=LAZY_COMMANDS[name][1]).get_short_help_str(limit)))
            else:
                rows.append((name, super().get_command(ctx, name).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

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
    from pathlib import Path  # deferred: `strata --help` starts without pathlib

    missing = [f for f in files if not Path(f).exists()]
    if missing:
        raise UserError(f"no such file: {missing[0]}", hint="check the path")
    if fmt in ("openlineage", "prov"):
        from strata.cli_interop import ingest_interop  # deferred: `strata --help` starts without it

        return ingest_interop(app, files, fmt)
    commit = app.writer().ingest(*files, fmt=fmt)
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
    from strata.render import render_info  # deferred: it loads rich

    render_info(data)


@main.command()
@click.option("--fresh/--keep", default=True, help="Rebuild the demo store from scratch.")
@click.pass_obj
def demo(app: App, fresh: bool) -> None:
    """Build a demo store from the bundled examples and show what it can do."""
    from strata.demo import run_demo  # deferred: it loads rich

    run_demo(app, fresh=fresh)


if __name__ == "__main__":  # pragma: no cover - `python -m strata.cli`
    from strata.cli import main as imported  # the module subcommands import, so they share its App class

    imported()
