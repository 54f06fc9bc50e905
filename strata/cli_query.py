"""`strata query "IQL" [--format table|json|csv]` (docs/cli.md): run one IQL statement.

Registered by `strata/cli.py`; the store comes from the global options (`strata.cli.store_of`).
Data goes to stdout, warnings to stderr; errors are raised and strata/cli.py prints them (a query
error: exit code 2 and the positioned message).
"""

from __future__ import annotations

import json

import click

import iql
from iql.result import format_csv, format_csv_columns, format_json, format_table, trace_tree
from strata.app import App, store_of


def render(result: iql.Result, fmt: str) -> str:
    """The text `strata query` prints on stdout for `result` (pure once rows are collected)."""
    rows = result.rows()
    if result.explain and fmt == "table":
        return "\n".join(str(r[0]) for r in rows)
    # a TRACE statement's rows read best as indented trees
    return render_rows(result.columns, rows, "tree" if fmt == "table" and result.form is iql.Form.TRACE else fmt,
                       result.warnings)


def render_rows(columns, rows, fmt: str, warnings=()) -> str:
    """Rows as `fmt`: json, csv, table, or tree (TRACE rows as indented trees)."""
    if fmt == "json":
        return format_json(columns, rows, warnings)
    if fmt == "csv":
        return format_csv(columns, rows).rstrip("\n")
    if fmt == "tree":
        return trace_tree(rows)
    return format_table(columns, rows)


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
        from iql.parser import parse  # deferred: it loads lark

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


@click.command("trace")
@click.argument("pattern")
@click.option("--run", metavar="RUN", help="the captured run [default: the store's last]")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="trace the first N matched result items")
@click.option("--format", "fmt", type=click.Choice(["tree", "table", "json", "csv"]), default="tree",
              show_default=True, help="output format (tree: one indented tree per input item)")
@click.option("--no-values", is_flag=True, help="do not read the input items' values back (sources only)")
@click.option("--check", is_flag=True,
              help="replay the run's program on each traced item's inputs and check that the item comes out "
                   "again (exit code 1 when one does not)")
@click.option("--sample", type=click.IntRange(min=1), metavar="N",
              help="with --check: check N items drawn from all the matched ones instead of the first")
@click.option("--seed", type=int, default=0, show_default=True, metavar="S",
              help="with --sample: which items are drawn (the same seed draws the same items)")
@click.pass_context
def trace(ctx: click.Context, pattern: str, run: str | None, limit: int | None, fmt: str, no_values: bool,
          check: bool, sample: int | None, seed: int) -> None:
    """Where the result items matching PATTERN come from: each input item that made or
    influenced them, where it lives (file:line, file#row, catalog table) and its values.

    The same rows as `strata query "TRACE ['RUN'] MATCH 'PATTERN' [LIMIT N]"`, e.g.
    strata trace "/tweets/text = 'Hello @lp'".

    With --check, each matched item is checked instead: the run's program (a script captured with
    `strata capture`) runs again on exactly the input items the item's trace names, and the item
    must come out with the same values (docs/tracing.md, "Checking a trace by replay"); with
    --sample N, N items drawn from all the matched ones (--seed S picks which)."""
    from capture.tracing import parse_pattern, trace_table, trace_table_rows  # deferred: lark, numpy, pyarrow
    from capture.tracing import trace as backtrace  # deferred: it loads lark, numpy, pyarrow

    if sample is not None and not check:
        raise click.UsageError("--sample draws the items of a check: use it with --check "
                               "(--limit N traces the first N)")
    if check:
        if fmt not in ("tree", "json") or no_values:
            raise click.UsageError("--check prints its own lines (or JSON with --format json): "
                                   "--format table/csv and --no-values do not apply to it")
        if sample is not None and limit is not None:
            raise click.UsageError("--limit N checks the first N items, --sample N a sample of them: give one")
        _check(ctx, parse_pattern(pattern), run, limit, fmt, sample, seed)
        return
    st = store_of(ctx)
    table = trace_table(st, backtrace(st, run, parse_pattern(pattern), limit), where=True, values=not no_values)
    # CSV written column-wise from the Arrow table (a trace can be millions of rows)
    text = format_csv_columns(table) if fmt == "csv" else None
    click.echo(text.rstrip("\n") if text is not None
               else render_rows(tuple(name for name, _ in iql.TRACE_COLUMNS), trace_table_rows(table), fmt))


def _check(ctx: click.Context, pattern, run: str | None, limit: int | None, fmt: str, sample: int | None,
           seed: int) -> None:
    """`strata trace --check`: a line per item, a summary; exit code 1 when an item failed. The
    replayed script starts its own session as under `strata capture` (`strata.spark.job_spark`)."""
    from capture.tracing import check  # deferred: it loads lark, numpy, pyarrow
    from store.spark.session import parse_conf  # deferred: only a check needs it
    from strata.spark import job_spark  # deferred: only a check starts the job's Spark

    app = ctx.find_object(App) or ctx.ensure_object(App)
    app.job = True  # the store works in the replayed script's session
    st = store_of(ctx)
    with job_spark(app.master, parse_conf(app.conf)):
        done = check(st, run, pattern, limit, sample=sample, seed=seed)
    click.echo(json.dumps(done.as_json(), indent=2, ensure_ascii=False) if fmt == "json" else done.render())
    if not done.passed:
        ctx.exit(1)
