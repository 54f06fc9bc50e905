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
    phases: dict[str, float] = field(default_factory=dict)  # seconds per commit phase


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


class _Phases:
    """Wall-clock seconds per phase of a commit (``RunInfo.phases``; see the benchmark)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._t = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._t
        self._t = now


def write_and_commit(tracker: Tracker, tdf: TrackedDataFrame, path: str, fmt: str, mode: str,
                     message: str | None, options: dict[str, Any]) -> RunInfo:
    """Compute the annotated result ONCE (cached while it is read) and read everything from it:
    the visible result (written straight to ``path``), the id associations and the result items.

    Spark jobs: the result write (it fills the cache), the ``capture_assoc`` append (its row count
    is observed, no extra count job), the ``capture_result_items`` append and the two one-file
    appends of ``capture_operators``/``capture_runs``; with ``model=True`` the bundle ingest too.
    """
    if tracker.store is None:
        raise UserError("tracker.write needs a store to commit the provenance to",
                        hint="create the tracker with Tracker(spark, Store.open(path))")
    cap = tracker.capture(tdf)
    ops = list(cap.operators)
    run = new_run_id(tracker.pipeline)
    started = _now()
    spark = tracker.spark
    phases = _Phases()
    annotated = cap.annotated.persist(StorageLevel.MEMORY_AND_DISK)
    stored: DataFrame | None = None
    try:
        annotated.select(*tdf.visible()).write.format(fmt).mode(mode).options(**options).save(path)
        phases.done("result")
        stored = cap.stored_associations(annotated)
        if tracker.model:  # read twice: by the append and by the bundle
            stored = stored.persist(StorageLevel.MEMORY_AND_DISK)
        counted = Observation(f"strata_capture_{uuid.uuid4().hex[:8]}")
        info_out = {"path": str(path), "format": fmt}
        with tracker.store.transaction(message or f"capture {run}") as tx:
            rows = stored.select(F.lit(run).alias(RUN), "*").observe(counted, F.count(F.lit(1)).alias("n"))
            tx.append(ASSOC, rows)
            n_assoc = int(counted.get["n"])
            phases.done("associations")
            # The result items with their ids, so TRACE can match patterns on this run later.
            tx.append(RESULT_ITEMS, result_item_rows(run, annotated, tdf.visible(), tdf.id_column))
            phases.done("result_items")
            finished = _now()
            tx.append(OPERATORS, spark.createDataFrame(operator_rows(run, ops), OPERATORS_SCHEMA), files=1)
            run_row = (run, tracker.pipeline, cap.result_oid, str(path), fmt, started, finished, len(ops), n_assoc)
            tx.append(RUNS, spark.createDataFrame([run_row], RUNS_SCHEMA), files=1)
            phases.done("run_tables")
            run_attrs = {"started": started, "finished": finished, "output": str(path), "format": fmt}
            if tracker.model:
                full = stored.unionByName(
                    identity_frame(stored, ops, cap.result_oid, annotated.select(tdf.id_column)))
                existing = tx.table("vertices").select("id")
                tx.ingest(bundle.sections(spark, run, tracker.pipeline, ops, full, existing, run_attrs, info_out))
                phases.done("model")
            tx.set_meta("capture.last_run", {"run": run, "pipeline": tracker.pipeline, "output": str(path)})
        phases.done("commit")
    finally:
        if stored is not None and tracker.model:
            stored.unpersist()
        annotated.unpersist()
    sec = phases.seconds
    return RunInfo(run, tracker.store.version, str(path), len(ops), n_assoc, sec["result"],
                   sum(v for k, v in sec.items() if k != "result"), dict(sec))
