"""The match on Spark: ONE job over a run's stored annotated result, the matched rows to the driver.

The pattern is compiled to Spark Column expressions (capture/tracing/spark/compile.py) over the
run's stored result, ``capture_result/<run>``; the job brings the matched rows to the driver
(Arrow) with their hidden id columns. A split copy (Parquet output, docs/capture.md) matches on
the linked output files, ``capture_output/<run>``, and brings back each matched row's key;
:func:`capture.storing.stored.hidden_rows` then reads those rows' hidden columns, and the ids the
copy does not store are computed from them (:func:`capture.ids.hydrate_rows`). The backtrace of
the rows is the shared one (capture/tracing/backtrace.py ``backtrace_rows``).
"""

from __future__ import annotations

import time

from capture.ids import hydrate_rows, is_hidden
from capture.storing.runs import ROW_KEY, RunHead
from capture.storing.stored import StoredRun, hidden_rows, opened
from capture.tracing.backtrace import Backtrace, backtrace_rows
from capture.tracing.pattern import Pattern
from capture.tracing.spark.compile import matched_frame, prepare_items


def stored_rows(stored: StoredRun, pattern: Pattern | str, limit: int | None = None,
                compiled: bool = True) -> list[dict]:
    """The matched rows of ``stored`` (at most ``limit``): ``id``, ``_paths`` (matched node paths)
    and every hidden column (derived ids computed). ONE Spark job whatever the pipeline."""
    if stored.outputs is None:
        result = stored.full
        hidden = tuple(c for c in result.columns if is_hidden(c))
        prep = prepare_items(result, stored.id_col, stored.visible, pattern, compiled, carry=hidden)
        return matched_frame(prep, limit).toArrow().to_pylist()
    prep = prepare_items(*stored.match_source(), stored.visible, pattern, compiled)
    paths = {r["id"]: r["_paths"] for r in matched_frame(prep, limit).select("id", "_paths").toArrow().to_pylist()}
    if not paths:
        return []
    rows = hydrate_rows(hidden_rows(stored.hidden, list(paths)), stored.derived)
    return [{**r, "id": r[stored.id_col], "_paths": paths[r[ROW_KEY]]} for r in rows]


def matched_rows(store, head: RunHead, pattern: Pattern, limit: int | None = None,
                 compiled: bool = True) -> list[dict]:
    """The matched result rows of run ``head`` of ``store`` (as :func:`stored_rows`)."""
    return stored_rows(opened(store, head), pattern, limit, compiled)


def backtrace_run(stored: StoredRun, pattern: Pattern | str, limit: int | None = None, *,
                  compiled: bool = True, timings: dict | None = None) -> Backtrace:
    """Match ``pattern`` on the annotated result of ``stored`` (visible + hidden id columns) and
    backtrace the matches (at most ``limit`` matched result items): :func:`stored_rows`, then the
    associations of those rows alone, derived from their hidden columns
    (:func:`capture.storing.associations.assoc_groups`, grouped ``assoc_frame(...,
    complete=True)``) -- no association table is scanned -- and the backtrace on the driver.
    ``timings`` (if given) receives the phases' seconds."""
    t = timings if timings is not None else {}
    t0 = time.perf_counter()
    rows = stored_rows(stored, pattern, limit, compiled)
    t["match"] = time.perf_counter() - t0
    return backtrace_rows(rows, stored.slots, stored.operators, stored.result_oid, t)


def plan_lines(store, head: RunHead, pattern: Pattern) -> list[str]:
    """How :func:`matched_rows` matches (for EXPLAIN; no job runs)."""
    stored = opened(store, head)
    prep = prepare_items(*stored.match_source(), stored.visible, pattern)
    lines = prep.plan.describe()
    if stored.outputs is not None:
        lines.append("then the matched rows' hidden columns, by row key (the run's stored copy is split): "
                     "pyarrow reads their row groups on a local store, else a broadcast join")
    return lines
