"""`strata query "IQL" [--format table|json|csv]` (spec/cli.md): run one IQL statement.

Registered by `strata/cli.py`. The store comes from the group's context object: `ctx.obj`
may be a `store.Store`, a callable returning one, or a mapping/object with a `store` entry or
attribute holding either; without any of these the default store (`$STRATA_STORE`, else
`./.strata`) is opened. Data goes to stdout, warnings and errors to stderr; a query error
exits with code 2 and the positioned message.
"""

from __future__ import annotations

import click

import iql
from iql.errors import IqlError
from iql.result import format_csv, format_json, format_table


def _store(ctx: click.Context):
    obj = ctx.obj
    if isinstance(obj, dict):
        obj = obj.get("store", None)
    elif obj is not None and hasattr(obj, "store") and not hasattr(obj, "catalog"):
        obj = obj.store
    if callable(obj) and not hasattr(obj, "catalog"):
        obj = obj()
    if obj is None:
        from store import Store

        obj = Store.open()
    return obj


def render(result: iql.Result, fmt: str) -> str:
    """The text `strata query` prints on stdout for `result` (pure once rows are collected)."""
    rows = result.rows()
    if fmt == "json":
        return format_json(result.columns, rows, result.warnings)
    if fmt == "csv":
        return format_csv(result.columns, rows).rstrip("\n")
    if result.explain:
        return "\n".join(str(r[0]) for r in rows)
    return format_table(result.columns, rows)


@click.command("query")
@click.argument("text", metavar="IQL")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
              show_default=True, help="output format")
@click.option("--show-ast", is_flag=True, help="print the parsed AST and stop")
@click.option("--show-plan", is_flag=True, help="print the logical plan and strategy (EXPLAIN)")
@click.pass_context
def query(ctx: click.Context, text: str, fmt: str, show_ast: bool, show_plan: bool) -> None:
    """Run one IQL statement, e.g. strata query "select p.id from WebPage p"."""
    try:
        if show_ast:
            from iql.parser import parse

            click.echo(repr(parse(text)))
            return
        st = _store(ctx)
        if show_plan and not text.lstrip().lower().startswith("explain"):
            text = "explain " + text
        result = iql.run(st, text)
        out = render(result, fmt)
    except IqlError as e:
        click.echo(e.render(), err=True)
        ctx.exit(2)
        return
    click.echo(out)
    if fmt != "json":
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
