"""``tracker.write``: write the result and commit its provenance in ONE store commit.

Tables written in the same transaction (schemas in docs/capture.md):

* ``capture_runs``      one row per run (pipeline, output, times, sizes),
* ``capture_operators`` one row per operator: Definition 5.1's <oid, type, I, M> (schema level),
* ``capture_assoc``     Pebble's P: one row per (output item, input item) id association of
                        each operator that changes ids (identity operators' rows are derived),
* ``capture_result_items`` the result items with their ids, as JSON (for TRACE),
* the core tables, through ``tx.ingest`` of the run's multi-granularity bundle (capture/bundle.py).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)
from pyspark.util import inheritable_thread_target

from capture import bundle
from capture.backtrace import RESULT_ITEMS, result_item_rows
from capture.materialize import identity_frame
from capture.model import OperatorProv
from store.errors import UserError

if TYPE_CHECKING:
    from capture.tracked import TrackedDataFrame
    from capture.tracker import Tracker

RUNS, OPERATORS, ASSOC = "capture_runs", "capture_operators", "capture_assoc"
RUN = "run"

_S, _I = StringType(), IntegerType()
OPERATORS_SCHEMA = StructType([
    StructField(RUN, _S, False),
    StructField("oid", _I, False),
    StructField("type", _S, False),
    StructField("method", _S, False),
    StructField("inputs", ArrayType(StructType([
        StructField("input", _I, False),
        StructField("pred", _I, False),
        StructField("accessed", ArrayType(_S, False), True),  # null = undefined (⊥)
    ]), False), False),
    StructField("manipulated", ArrayType(StructType([
        StructField("input", _I, False), StructField("src", _S, False), StructField("dst", _S, False),
    ]), False), True),  # null = undefined (⊥)
    StructField("dataset", _S, True),
    StructField("detail", _S, True),
])
RUNS_SCHEMA = StructType([
    StructField(RUN, _S, False),
    StructField("pipeline", _S, False),
    StructField("result_oid", _I, False),
    StructField("output_path", _S, False),
    StructField("output_format", _S, False),
    StructField("started", _S, False),
    StructField("finished", _S, False),
    StructField("operators", _I, False),
    StructField("associations", LongType(), False),
])


@dataclass(frozen=True)
class RunInfo:
    """What ``tracker.write`` returns."""

    run: str
    version: int
    output_path: str
    operators: int
    associations: int
    seconds_result: float
    seconds_provenance: float
    # seconds per phase: result (pipeline + result write), associations and result_items (in
    # parallel: each its own elapsed time), runs, model (bundle ingest, model=True only)
    phases: dict[str, float] = field(default_factory=dict)


def operator_rows(run: str, ops: list[OperatorProv]) -> list[tuple]:
    out = []
    for o in ops:
        inputs = [(i, inp.pred, list(inp.accessed) if inp.accessed is not None else None)
                  for i, inp in enumerate(o.inputs)]
        manip = [(m.input, m.src, m.dst) for m in o.manipulated] if o.manipulated is not None else None
        out.append((run, o.oid, o.type.value, o.method, inputs, manip, o.dataset, o.detail))
    return out


def new_run_id(pipeline: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{pipeline}/run-{stamp}-{uuid.uuid4().hex[:8]}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def write_and_commit(tracker: Tracker, tdf: TrackedDataFrame, path: str, fmt: str, mode: str,
                     message: str | None, options: dict[str, Any]) -> RunInfo:
    """Compute the annotated result ONCE (cached while it is read) and read everything from it:
    the visible result (written straight to ``path``), the id associations and the result items.

    Spark jobs: the result write (it fills the cache); then, side by side in two threads so their
    fixed costs overlap, the ``capture_assoc`` append (its row count is observed: no count job)
    and the ``capture_result_items`` + one-file ``capture_operators`` appends; then the one-row
    ``capture_runs`` append; with ``model=True`` the bundle ingest too.
    """
    if tracker.store is None:
        raise UserError("tracker.write needs a store to commit the provenance to",
                        hint="create the tracker with Tracker(spark, Store.open(path))")
    cap = tracker.capture(tdf)
    ops = list(cap.operators)
    run = new_run_id(tracker.pipeline)
    started = _now()
    spark = tracker.spark
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    annotated = cap.annotated.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    stored: DataFrame | None = None
    try:
        annotated.select(*tdf.visible()).write.format(fmt).mode(mode).options(**options).save(path)
        t1 = time.perf_counter()
        phases["result"] = t1 - t0
        stored = cap.stored_associations(annotated)
        if tracker.model:  # read twice: by the append and by the bundle
            stored = stored.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        counted = Observation(f"strata_capture_{uuid.uuid4().hex[:8]}")
        assoc_rows = stored.select(F.lit(run).alias(RUN), "*").observe(counted, F.count(F.lit(1)).alias("n"))
        item_rows = result_item_rows(run, annotated, tdf.visible(), tdf.id_column)
        op_rows = spark.createDataFrame(operator_rows(run, ops), OPERATORS_SCHEMA)
        info_out = {"path": str(path), "format": fmt}
        with tracker.store.transaction(message or f"capture {run}") as tx:
            # different tables, so the two threads' appends never touch the same table entry
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="strata-capture") as pool:
                # inheritable: the side thread's jobs keep the caller's job group and tags (cancellation)
                side = pool.submit(inheritable_thread_target(spark)(_timed), lambda: (
                    tx.append(RESULT_ITEMS, item_rows), tx.append(OPERATORS, op_rows, files=1)))
                phases["associations"] = _timed(lambda: tx.append(ASSOC, assoc_rows))
                phases["result_items"] = side.result()
            n_assoc = int(counted.get["n"])
            finished = _now()
            run_row = (run, tracker.pipeline, cap.result_oid, str(path), fmt, started, finished, len(ops), n_assoc)
            phases["runs"] = _timed(lambda: tx.append(RUNS, spark.createDataFrame([run_row], RUNS_SCHEMA), files=1))
            run_attrs = {"started": started, "finished": finished, "output": str(path), "format": fmt}
            if tracker.model:
                full = stored.unionByName(
                    identity_frame(stored, ops, cap.result_oid, annotated.select(tdf.id_column)))
                existing = tx.table("vertices").select("id")
                sections = bundle.sections(spark, run, tracker.pipeline, ops, full, existing, run_attrs, info_out)
                phases["model"] = _timed(lambda: tx.ingest(sections))
            tx.set_meta("capture.last_run", {"run": run, "pipeline": tracker.pipeline, "output": str(path)})
        t2 = time.perf_counter()
    finally:
        if stored is not None and tracker.model:
            stored.unpersist()
        annotated.unpersist()
    return RunInfo(run, tracker.store.version, str(path), len(ops), n_assoc, t1 - t0, t2 - t1, phases)
