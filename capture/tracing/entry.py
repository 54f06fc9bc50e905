"""The entry points over a store: :func:`trace` and :func:`describe`, on the engine chosen once.

A trace reads the run's head (operators and run row: pyarrow on a local store, else one job),
then asks ONE wing for the matched rows -- capture/tracing/duckdb/ (the local engine: on the
driver, no Spark job, no JVM) or capture/tracing/spark/ (one Spark job) -- and backtraces them
the same way (capture/tracing/backtrace.py ``backtrace_rows``). Which wing: the ``engine`` the
caller passes (IQL passes the engine it chose for the statement), or, when None, :func:`choose`:
the store's rule (``store.choose`` over the run's result items) with the run's capability check
folded in (a run the driver cannot read goes to Spark, with the reason). Nothing below asks again.
"""

from __future__ import annotations

import time
from dataclasses import replace

from capture.storing.runs import RunHead, read_head
from capture.tracing import duckdb
from capture.tracing.backtrace import Backtrace, backtrace_rows, no_cyclic_gc, walk
from capture.tracing.pattern import Pattern
from store.engine import Choice, Engine
from store.errors import UserError


def choose(store, head: RunHead | str | None) -> Choice:
    """The engine that traces run ``head`` (a run's head, its name, or None: the last captured
    run), and why: the store's choice for a question reading
    the run's result items, unless the local engine was chosen automatically and the driver
    cannot read the run (a column type or table layout: Spark, saying so). Forced to local
    (``--engine local``) on such a run, a UserError says why."""
    if not isinstance(head, RunHead):
        head = read_head(store, head)
    choice = store.choose(head.items)
    if choice.engine is not Engine.LOCAL:
        return choice
    why = duckdb.unreadable(store, head)
    if why is None:
        return choice
    if store.engine is Engine.LOCAL:
        raise UserError(f"run {head.run!r} cannot be traced by the local engine: {why}",
                        hint="trace it with --engine spark")
    return Choice(Engine.SPARK, f"the driver cannot read the run: {why}")


def trace_reads(store, run: str | None) -> int | None:
    """What a trace of run ``run`` counts for the engine rule of store/engine.py, for a caller
    that chooses one engine for a whole question (IQL): the run's result items; None when the
    driver cannot read the run (only Spark can trace it)."""
    head = read_head(store, run)
    return head.items if duckdb.unreadable(store, head) is None else None


def wing(store, head: RunHead, engine: Engine | None):
    """The wing of the engine given (auto counts as not given), else of :func:`choose`'s."""
    given = None if engine is None else Engine.parse(engine)
    chosen = choose(store, head).engine if given in (None, Engine.AUTO) else given
    if chosen is Engine.LOCAL:
        return duckdb
    from capture.tracing import spark  # deferred: the Spark wing imports pyspark, a local trace needs none

    return spark


def trace(store, run: str | None, pattern: Pattern, limit: int | None = None, *,
          engine: Engine | None = None, timings: dict | None = None, compiled: bool = True) -> Backtrace:
    """Trace run ``run`` (None: the store's last captured run): match ``pattern`` on its stored
    annotated result and backtrace at most ``limit`` matched result items to the input items and
    attributes that made or influenced them.

    ``engine`` (``Engine.LOCAL`` or ``Engine.SPARK``) says which wing matches; None: :func:`choose`
    decides. ``compiled=False`` matches with the Python matcher instead of the compiled Spark
    expression (on the driver: over the items' ``to_json`` values). ``timings`` (if given)
    receives the phases' seconds: ``run`` (the run's head), ``match`` (on Spark also opening the
    run's tables), ``associations``, ``backtrace`` and ``total``."""
    t = timings if timings is not None else {}
    t0 = time.perf_counter()
    head = read_head(store, run)
    found = wing(store, head, engine)
    t["run"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    with no_cyclic_gc():  # the matched rows' members can be 150,000 dicts (backtrace_rows pauses it too)
        rows = found.matched_rows(store, head, pattern, limit, compiled)
    t["match"] = time.perf_counter() - t1
    out = backtrace_rows(rows, head.slots, head.operators, head.result_oid, t)
    t["total"] = time.perf_counter() - t0
    return replace(out, run=head.run)


def describe(store, run: str | None, pattern: Pattern, limit: int | None = None, *,
             engine: Engine | None = None) -> list[str]:
    """How :func:`trace` would trace: the run, how the pattern is matched (on the driver, or
    compiled to Spark expressions or not, and why), the operators the backtrace walks and which
    associations it reads. Reads the run's operators (no job on a local store; no JVM either on
    the local engine); matches nothing."""
    head = read_head(store, run)
    found = wing(store, head, engine)
    lines = [f"Trace run {head.run!r}" + (f", the first {limit} matching result items" if limit else "")]
    lines += ["  " + line for line in found.plan_lines(store, head, pattern)]
    lines.append("  backtrace (Pebble Algorithms 1-4), from the result operator back to the sources:")
    for op, how in walk(head.operators, head.result_oid):
        preds = ",".join(str(i.pred) for i in op.inputs)
        lines.append(f"    {op.oid} {op.type.value} ({op.method}{' <- ' + preds if preds else ''}): {how}")
    return lines
