"""``tracker.write``: write the result and commit its provenance in ONE store commit.

Tables written in the same transaction (schemas in docs/capture.md):

* ``capture_runs``      one row per run (pipeline, output, times, sizes),
* ``capture_operators`` one row per operator: Definition 5.1's <oid, type, I, M> (schema level),
* ``capture_assoc``     Pebble's P: one row per (output item, input item) id association,
* the core tables, through ``tx.ingest`` of the run's multi-granularity bundle (capture/bundle.py).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
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
from capture.model import OperatorProv, OpType
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


class _Staged:
    """Compute the annotated result ONCE, then read the visible result and the ids from it.

    By default the annotated result goes to a temporary Parquet folder under the store (the
    ids are then read column-pruned, and the copy of the visible columns is cheap); a pipeline
    with an ``orderBy`` is cached instead, because reading Parquet back does not keep row order.
    """

    def __init__(self, spark, root: str, run: str, ordered: bool):
        self._spark = spark
        self._ordered = ordered
        self._path = f"{root.rstrip('/')}/_capture_tmp/{run.replace('/', '_')}"
        self._cached: DataFrame | None = None

    def materialize(self, annotated: DataFrame) -> DataFrame:
        if self._ordered:
            self._cached = annotated.persist(StorageLevel.MEMORY_AND_DISK)
            return self._cached
        annotated.write.mode("overwrite").parquet(self._path)
        return self._spark.read.parquet(self._path)

    def release(self) -> None:
        if self._cached is not None:
            self._cached.unpersist()
            return
        jvm = self._spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(self._path)
        fs = path.getFileSystem(self._spark._jsc.hadoopConfiguration())
        fs.delete(path, True)


def write_and_commit(tracker: Tracker, tdf: TrackedDataFrame, path: str, fmt: str, mode: str,
                     message: str | None, options: dict[str, Any]) -> RunInfo:
    if tracker.store is None:
        raise UserError("tracker.write needs a store to commit the provenance to",
                        hint="create the tracker with Tracker(spark, Store.open(path))")
    cap = tracker.capture(tdf)
    ops = list(cap.operators)
    run = new_run_id(tracker.pipeline)
    started = _now()
    spark = tracker.spark
    staged = _Staged(spark, tracker.store.root, run, ordered=any(o.type is OpType.SORT for o in ops))
    assoc: DataFrame | None = None
    try:
        t0 = time.perf_counter()
        annotated = staged.materialize(cap.annotated)
        annotated.select(*tdf.visible()).write.format(fmt).mode(mode).options(**options).save(path)
        t1 = time.perf_counter()
        assoc = cap.associations(annotated).persist(StorageLevel.MEMORY_AND_DISK)
        info_out = {"path": str(path), "format": fmt}
        with tracker.store.transaction(message or f"capture {run}") as tx:
            tx.append(ASSOC, assoc.select(F.lit(run).alias(RUN), "*"))
            n_assoc = assoc.count()  # from the cache the append just filled
            tx.append(OPERATORS, spark.createDataFrame(operator_rows(run, ops), OPERATORS_SCHEMA), files=1)
            finished = _now()
            run_row = (run, tracker.pipeline, cap.result_oid, str(path), fmt, started, finished, len(ops), n_assoc)
            tx.append(RUNS, spark.createDataFrame([run_row], RUNS_SCHEMA), files=1)
            # The result items with their ids, so TRACE can match patterns on this run later.
            tx.append(RESULT_ITEMS, result_item_rows(run, annotated, tdf.visible(), tdf.id_column))
            run_attrs = {"started": started, "finished": finished, "output": str(path), "format": fmt}
            if tracker.model:
                existing = tx.table("vertices").select("id")
                tx.ingest(bundle.sections(spark, run, tracker.pipeline, ops, assoc, existing, run_attrs, info_out))
            tx.set_meta("capture.last_run", {"run": run, "pipeline": tracker.pipeline, "output": str(path)})
        t2 = time.perf_counter()
    finally:
        if assoc is not None:
            assoc.unpersist()
        staged.release()
    return RunInfo(run, tracker.store.version, str(path), len(ops), n_assoc, t1 - t0, t2 - t1)
