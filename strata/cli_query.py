"""`strata query "IQL" [--format table|json|csv]` (docs/cli.md): run one IQL statement.

Registered by `strata/cli.py`; the store comes from the global options (`strata.cli.store_of`).
Data goes to stdout, warnings to stderr; errors are raised and strata/cli.py prints them (a query
error: exit code 2 and the positioned message).
"""

from __future__ import annotations

import click

import iql
from iql.result import format_csv, format_json, format_table, trace_tree
from strata.cli import store_of


def render(result: iql.Result, fmt: str) -> str:
    """The text `strata query` prints on stdout for `result` (pure once rows are collected)."""
    rows = result.rows()
    if fmt == "json":
        return format_json(result.columns, rows, result.warnings)
    if fmt == "csv":
        return format_csv(result.columns, rows).rstrip("\n")
    if result.explain:
        return "\n".join(str(r[0]) for r in rows)
    if result.form is iql.Form.TRACE:  # a TRACE statement's rows read best as indented trees
        return trace_tree(rows)
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
    if show_ast:
        from iql.parser import parse

        click.echo(repr(parse(text)))
        return
    st = store_of(ctx)
    if show_plan and not text.lstrip().lower().startswith("explain"):
        text = "explain " + text
    result = iql.run(st, text)
    out = render(result, fmt)
    click.echo(out)
    if fmt != "json":
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
