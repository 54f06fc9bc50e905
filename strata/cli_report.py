"""`strata report usage` and `strata report audit`: Pebble's reports (Section 7.3.5) from the CLI.

Registered by `strata/cli.py` (`report` is a group). Both trace a captured run with
`capture.tracing.trace` and hand the backtraces to the tracing code's reports:

* `usage`: one trace per tree pattern (arguments, or lines of a `--workload` file: bare patterns
  or whole `TRACE ['run'] MATCH '...' [LIMIT n]` statements), then the data-usage heatmap of one
  input dataset (items x attributes: contributed / influenced / unused counts) as a table or JSON,
  and as an HTML page (`--html`) or PNG picture (`--png`, needs matplotlib: the `reports` extra).
* `audit`: per input item one trace reaches, the attributes the result exposes and those that
  only influenced it.

Every pattern is parsed before Spark runs, so a typo fails at once with its position (exit 2).
Data goes to stdout, progress and warnings to stderr.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from capture.storing import read_head
from capture.tracing import PatternError, heatmap, heatmap_html, heatmap_png, item_hex, parse_pattern
from capture.tracing import audit as audit_rows
from capture.tracing import item_element_id as element_id
from capture.tracing import trace as run_trace
from iql import Form
from iql.errors import IqlError
from store.errors import StrataError, UserError
from strata.app import store_of

DEFAULT_LIMIT = 100
_STATEMENT = re.compile(r"\s*(trace|explain|select)\b", re.IGNORECASE)
_COMMENT = ("#", "--")


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One trace of a workload: where it came from, the run (None = the last), the parsed pattern."""

    origin: str  # "PATTERN 2", "workload.txt, line 3": where errors point
    run: str | None
    text: str  # the pattern's text
    pattern: object  # capture.tracing.Pattern
    limit: int


# ---- parsing: pure, before any Spark work --------------------------------------------------------
def _located(origin: str, err: StrataError) -> StrataError:
    """``err`` with where it came from in front of its message; position and hint are kept, so
    it renders with its caret line like any other error."""
    return dataclasses.replace(err, message=f"{origin}: {err.message}")


def parse_job(text: str, origin: str, run: str | None, limit: int) -> TraceJob:
    """A trace from a bare tree pattern or a TRACE statement (whose run and LIMIT win)."""

    text = text.strip()
    if _STATEMENT.match(text):
        from iql.binder import trace_pattern  # deferred: the binder loads for a query text only
        from iql.parser import parse  # deferred: it loads lark

        try:
            stmt = parse(text)
            if stmt.form is not Form.TRACE or stmt.explain:
                raise UserError(f"{origin}: not a trace: {text}",
                                hint="give a tree pattern (/user/id_str = 'lp') or a statement "
                                     "TRACE ['run'] MATCH 'pattern' [LIMIT n]")
            source = stmt.query.from_[0].source
            pattern = trace_pattern(source, text)
        except IqlError as e:
            raise _located(origin, e) from None
        return TraceJob(origin, source.run if source.run is not None else run, source.pattern,
                        pattern, source.limit if source.limit is not None else limit)
    try:
        pattern = parse_pattern(text)
    except PatternError as e:
        raise _located(origin, e) from None
    return TraceJob(origin, run, text, pattern, limit)


def read_workload(path: str, run: str | None, limit: int) -> list[TraceJob]:
    """One trace per line of ``path``; blank lines and lines starting with # or -- are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read workload file {path}: {e}",
                        hint="one tree pattern or TRACE statement per line") from None
    jobs = [parse_job(line, f"{path}, line {n}", run, limit)
            for n, line in enumerate(lines, 1) if line.strip() and not line.strip().startswith(_COMMENT)]
    if not jobs:
        raise UserError(f"workload file {path} holds no traces",
                        hint="one tree pattern (/user/id_str = 'lp') or TRACE statement per line")
    return jobs


def _check_output(path: str | None, option: str) -> None:
    if path is not None and not Path(path).expanduser().resolve().parent.is_dir():
        raise UserError(f"{option} {path}: no such folder {Path(path).parent}",
                        hint="create the folder first, or write the file elsewhere")


def _check_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("--png needs matplotlib, which is not installed",
                        hint="pip install 'strata-prov[reports]' (the reports extra), or use --html") from None


# ---- running -------------------------------------------------------------------------------------
def run_jobs(store, jobs: Sequence[TraceJob]) -> list:
    """The traces of ``jobs`` (capture Traces), in order; progress on stderr."""

    if store.version == 0:
        raise UserError(f"no store at {store.root} (nothing committed there)",
                        hint="pass --store PATH (or set $STRATA_STORE) to a store holding a captured run")

    traces = []
    for k, job in enumerate(jobs, 1):
        t0 = time.perf_counter()
        trace = run_trace(store, job.run, job.pattern, job.limit)
        click.echo(f"trace {k}/{len(jobs)} {job.text}: {plural(trace.matched, 'result item')} matched, "
                   f"{plural(len(trace.items), 'input item')} reached ({time.perf_counter() - t0:.1f} s)", err=True)
        traces.append(trace)
    return traces


def _source_datasets(store, runs: set[str | None]) -> list[str]:
    """The input datasets of the runs (their source operators; no Spark job on a local store)."""

    names: dict[str, None] = {}
    for run in runs:
        for op in read_head(store, run).operators:
            if getattr(op, "dataset", None):
                names.setdefault(op.dataset, None)
    return sorted(names)


def choose_dataset(store, jobs: Sequence[TraceJob], traces: Sequence, dataset: str | None) -> str | None:
    """``dataset``, checked against the runs' inputs when no trace reached it; else the one dataset
    the traces reach (None when they reach none)."""
    reached = sorted({item.dataset for t in traces for item in t.items})
    if dataset is not None:
        if dataset not in reached:
            known = _source_datasets(store, {j.run for j in jobs})
            if dataset not in known:
                raise UserError(f"the traced run has no input dataset {dataset!r}",
                                hint=f"its input datasets: {', '.join(known) or 'none'}")
            click.echo(f"strata: warning: no trace reached an item of {dataset}", err=True)
        return dataset
    if len(reached) > 1:
        raise UserError(f"the traces reach {len(reached)} input datasets ({', '.join(reached)})",
                        hint="choose one with --dataset")
    return reached[0] if reached else None


# ---- output (pure) -------------------------------------------------------------------------------
def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cell(c) -> dict:
    return {"contributed": c.contributed, "influenced": c.influenced, "unused": c.unused}


def usage_json(hm, jobs: Sequence[TraceJob], traces: Sequence) -> str:
    """The heatmap as one JSON object (--format json); ``hm`` None: no trace reached an item."""

    runs = [{"pattern": j.text, "run": j.run, "limit": j.limit, "matched": t.matched, "items": len(t.items)}
            for j, t in zip(jobs, traces, strict=True)]
    if hm is None:
        return json.dumps({"dataset": None, "traces": runs, "attributes": [], "items": [], "totals": {}},
                          indent=2)
    return json.dumps({
        "dataset": hm.dataset,
        "traces": runs,
        "attributes": list(hm.attributes),
        "items": [{"item": element_id(hm.dataset, i), "item_id": i,
                   "cells": {a: _cell(hm.cells[(i, a)]) for a in hm.attributes}} for i in ordered_items(hm)],
        "totals": {a: _cell(c) for a, c in hm.totals().items()},
    }, indent=2)


def _counts(c) -> str:
    return f"{c.contributed}/{c.influenced}/{c.unused}"


def ordered_items(hm) -> list[int]:
    """The heatmap's items in the order of their printed (unsigned hex) ids."""
    return sorted(hm.items, key=lambda i: i & 0xFFFFFFFFFFFFFFFF)


def usage_table(hm):
    """The heatmap as a rich table: a row per item, a column per attribute, cells
    contributed/influenced/unused, and a total row."""
    from rich.table import Table  # deferred: only this path needs rich
    from rich.text import Text  # deferred: only this path needs rich

    def style(c) -> str:
        return "green" if c.contributed else "yellow" if c.influenced else "dim"

    totals = hm.totals()
    items = ordered_items(hm)
    table = Table(title=f"data usage of {hm.dataset} over {plural(hm.traces, 'trace')} "
                        "(cells: contributed/influenced/unused)", title_justify="left")
    table.add_column(Text("item"), no_wrap=True)
    for a in hm.attributes:
        # long paths fold over header lines (not cut to a common prefix); counts never wrap
        width = max(len(_counts(c)) for c in [totals[a], *(hm.cells[(i, a)] for i in items)])
        table.add_column(Text(a), justify="center", overflow="fold", min_width=width)
    for i in items:
        cells = [hm.cells[(i, a)] for a in hm.attributes]
        table.add_row(Text(item_hex(i)), *[Text(_counts(c), style=style(c)) for c in cells])
    table.add_section()
    table.add_row(Text("total", style="bold"), *[Text(_counts(totals[a]), style="bold") for a in hm.attributes])
    return table


def audit_json(rows, job: TraceJob, trace) -> str:

    return json.dumps({
        "pattern": job.text, "run": job.run, "limit": job.limit, "matched": trace.matched,
        "items": [{"dataset": d, "item": element_id(d, i), "item_id": i, "exposes": list(exposed),
                   "influenced_by": list(influencing)} for d, i, exposed, influencing in rows],
    }, indent=2)


def audit_table(rows, job: TraceJob, trace):
    """Per input item: the attributes the result exposes, and those that only influenced it."""
    from rich.table import Table  # deferred: only this path needs rich
    from rich.text import Text  # deferred: only this path needs rich

    table = Table(title=f"audit of {job.text} ({plural(trace.matched, 'result item')} matched)", title_justify="left",
                  show_lines=True)
    for name in ("dataset", "item", "exposes", "only influenced"):
        table.add_column(Text(name), no_wrap=name in ("dataset", "item"), overflow="fold")
    for d, i, exposed, influencing in rows:
        table.add_row(Text(d), Text(item_hex(i)), Text("\n".join(exposed), style="green"),
                      Text("\n".join(influencing), style="yellow"))
    return table


# ---- commands ------------------------------------------------------------------------------------
@click.group("report")
def report() -> None:
    """Data-usage heatmap and audit report over traces of a captured run (docs/tracing.md)."""


_RUN = click.option("--run", metavar="RUN", default=None,
                    help="Captured run to trace (see table capture_runs) [default: the last run].")
_LIMIT = click.option("--limit", type=click.IntRange(min=1), metavar="N", default=DEFAULT_LIMIT, show_default=True,
                      help="Trace at most N matching result items per pattern.")
_FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
                       show_default=True)


@report.command("usage", short_help="Data-usage heatmap over traces (table, JSON, HTML, PNG).")
@click.argument("patterns", nargs=-1, metavar="[PATTERN]...")
@click.option("--workload", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Traces, one per line: a tree pattern or TRACE ['run'] MATCH '...' [LIMIT n] "
                   "(# and -- start comments).")
@click.option("--dataset", metavar="NAME", help="Input dataset to report on [default: the one the traces reach].")
@_RUN
@_LIMIT
@click.option("--attribute", "extra", multiple=True, metavar="PATH",
              help="Also list this attribute (unused where no trace touched it); repeatable.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the heatmap as a self-contained HTML page.")
@click.option("--png", "png_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the heatmap as a PNG picture (needs matplotlib: the reports extra).")
@_FORMAT
@click.pass_context
def usage(ctx, patterns, workload, dataset, run, limit, extra, html_path, png_path, fmt) -> None:
    """Data-usage heatmap: per input item x attribute, in how many traces it contributed, only
    influenced, or was unused. One trace per PATTERN (and per line of --workload), e.g.

    \b
      strata report usage "//id_str = 'lp'" "/tweets/text = 'Hello @lp'" --html usage.html
    """

    jobs = read_workload(workload, run, limit) if workload else []
    jobs += [parse_job(p, f"PATTERN {k}", run, limit) for k, p in enumerate(patterns, 1)]
    if not jobs:
        raise click.UsageError("give tree patterns or --workload FILE, e.g. "
                               "strata report usage \"/user/id_str = 'lp'\"", ctx)
    _check_output(html_path, "--html")
    _check_output(png_path, "--png")
    if png_path:
        _check_matplotlib()
    st = store_of(ctx)
    traces = run_jobs(st, jobs)
    name = choose_dataset(st, jobs, traces, dataset)
    if name is None:
        click.echo("strata: warning: no trace matched any result item; nothing to report", err=True)
        if fmt == "json":
            click.echo(usage_json(None, jobs, traces))
        return
    hm = heatmap(traces, name, attributes=extra)
    for path, write in ((html_path, lambda p: Path(p).write_text(heatmap_html(hm), encoding="utf-8")),
                        (png_path, lambda p: heatmap_png(hm, p))):
        if path:
            try:
                write(path)
            except OSError as e:
                raise UserError(f"cannot write {path}: {e.strerror or e}", hint="check the path") from None
            click.echo(f"wrote {path}", err=True)
    if fmt == "json":
        click.echo(usage_json(hm, jobs, traces))
        return
    from strata.render import console  # deferred: it loads rich

    console().print(usage_table(hm))
    click.echo(f"{plural(len(hm.items), 'item')} of {name} x {plural(len(hm.attributes), 'attribute')} over "
               f"{plural(hm.traces, 'trace')}", err=True)


@report.command("audit", short_help="What one trace's result exposes of each input item.")
@click.argument("pattern", metavar="PATTERN")
@_RUN
@_LIMIT
@_FORMAT
@click.pass_context
def audit(ctx, pattern, run, limit, fmt) -> None:
    """Audit report of one trace: per input item, the attributes the result exposes and those
    that only influenced it. PATTERN is a tree pattern or a TRACE statement, e.g.

    \b
      strata report audit "/tweets/text = 'Hello @lp'"
    """

    job = parse_job(pattern, "PATTERN", run, limit)
    (trace,) = run_jobs(store_of(ctx), [job])
    rows = sorted(audit_rows(trace), key=lambda r: (r[0], r[1] & 0xFFFFFFFFFFFFFFFF))
    if fmt == "json":
        click.echo(audit_json(rows, job, trace))
        return
    from strata.render import console  # deferred: it loads rich

    console().print(audit_table(rows, job, trace))
    click.echo(f"{plural(len(rows), 'input item')}, {plural(trace.matched, 'result item')} matched", err=True)
