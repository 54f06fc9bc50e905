"""Committed capture runs: naming, the stored annotated result, reading a run back.

A run's provenance is stored *compressed* (PROVision's lazy/compressed provenance): the annotated
result -- every visible column plus the hidden id, position and collected-id columns the tracked
pipeline carried -- is kept as the run's own table ``capture_result/<run>``, and the run's row in
``capture_runs`` records which hidden column holds each operator's associations (its slots).
Pebble's P (Table 6) is a *view* of that table (:meth:`StoredRun.associations`): the same rows
``capture.materialize`` derives from a live tracked DataFrame. The backtracer never needs the
whole view: it derives the associations of the matched result rows alone.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.types import StructType

from capture.model import InRef, Manipulation, OperatorProv, OpInput, OpType, Slot
from store.errors import UserError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

RUNS, OPERATORS = "capture_runs", "capture_operators"
RESULT_PREFIX = "capture_result/"


def result_table(run: str) -> str:
    """The store table holding run ``run``'s annotated result (one folder: characters a file
    system or Hadoop path could trip on become ``_``; run ids end in a unique random part)."""
    return RESULT_PREFIX + re.sub(r"[^A-Za-z0-9_.-]|^\.+", "_", run)


# ---- slots as JSON (capture_runs.slots) -------------------------------------------------------
def slots_json(slots: tuple[Slot, ...]) -> str:
    return json.dumps([
        {"oid": s.oid, "out_col": s.out_col, "in_col": s.in_ref.id_col, "input": s.in_ref.input,
         "nest": list(s.nest), "when": [list(w) for w in s.when], "array": s.array, "pos_col": s.pos_col,
         "distinct": s.distinct, "first": None if s.first is None else [list(f) for f in s.first]}
        for s in slots
    ])


def slots_from_json(text: str) -> tuple[Slot, ...]:
    return tuple(
        Slot(d["oid"], d["out_col"], InRef(d["in_col"], d["input"]), tuple(d["nest"]),
             tuple((w[0], w[1], w[2]) for w in d["when"]), d["array"], d["pos_col"], d["distinct"],
             None if d["first"] is None else tuple((f[0], f[1]) for f in d["first"]))
        for d in json.loads(text)
    )


# ---- reading a committed run -----------------------------------------------------------------
@dataclass(frozen=True)
class StoredRun:
    """A committed capture run: its operators, result operator and annotated result."""

    run: str
    operators: tuple[OperatorProv, ...]
    result_oid: int
    result: DataFrame  # the annotated result (visible + hidden columns), no job run yet
    id_col: str  # the hidden column of ``result`` holding each result item's id
    slots: tuple[Slot, ...]
    output: tuple[str, str, str] | None = None  # the written result: path, format, finished (ISO)

    @property
    def visible(self) -> list[str]:
        from capture.plan import is_hidden

        return [c for c in self.result.columns if not is_hidden(c)]

    def stored_associations(self) -> DataFrame:
        """P for the operators that change ids (``oid, out_id, input, in_id, pos``)."""
        from capture.materialize import assoc_frame

        return assoc_frame(self.result, self.slots)

    def associations(self) -> DataFrame:
        """Pebble's P for every operator (Table 6), derived from the stored annotated result."""
        from capture.materialize import identity_frame

        stored = self.stored_associations()
        ids = self.result.select(self.id_col)
        return stored.unionByName(identity_frame(stored, self.operators, self.result_oid, ids))


def require_current_format(store) -> None:
    """Refuse capture tables written before runs stored their annotated result (no job)."""
    entry = store.manifest.tables.get(RUNS)
    if entry is not None and "slots" not in StructType.fromJson(json.loads(entry.schema)).fieldNames():
        raise UserError(f"the capture tables of store {store.root} were written by an older Strata "
                        "(runs without a stored annotated result)",
                        hint="capture the pipeline again into a new store")


def run_name(store, run: str | None) -> str:
    """``run``, or the store's last captured run when None (no Spark job)."""
    if not store.has_table(RUNS):
        raise UserError(f"store {store.root} has no captured runs",
                        hint="capture a pipeline with capture.Tracker(spark, store).write(...) first")
    if run is None:
        run = (store.meta("capture.last_run") or {}).get("run")
        if run is None:
            raise UserError(f"store {store.root} records no last captured run",
                            hint="name the run: TRACE '<run id>' MATCH '...' (see table capture_runs)")
    return run


def _local_rows(store, table: str, run: str) -> list[dict] | None:
    """The rows of ``table`` for ``run`` read with pyarrow on the driver (a local store: no Spark
    job; row-group statistics skip other runs' rows), or None for a store on a cluster path."""
    entry = store.manifest.tables.get(table)
    if entry is None:
        return []
    folders = [store.storage.local_path(seg) for seg in entry.segments]
    if any(f is None for f in folders):
        return None
    import pyarrow.dataset as ds

    files = [os.path.join(f, n) for f in folders for n in sorted(os.listdir(f)) if n.endswith(".parquet")]
    if not files:
        return []
    return ds.dataset(files, format="parquet").to_table(filter=ds.field("run") == run).to_pylist()


def _spark_rows(store, run: str) -> list[dict]:
    """One Spark job: the run's operators joined with its run row."""
    from pyspark.sql import functions as F

    this = F.col("run") == F.lit(run)
    head = store.table(RUNS).filter(this).select(*_HEAD)
    return [r.asDict(recursive=True) for r in store.table(OPERATORS).filter(this).join(head, "run").collect()]


_HEAD = ("run", "result_oid", "output_path", "output_format", "finished", "id_column", "slots")


def load_run(store, run: str | None = None) -> StoredRun:
    """Read a committed run (default: the store's last capture run): its operators and run row --
    with pyarrow on a local store, else in ONE Spark job; the result table is not read."""
    run = run_name(store, run)
    require_current_format(store)
    heads = _local_rows(store, RUNS, run)
    if heads is None:
        rows = _spark_rows(store, run)
    else:
        rows = _local_rows(store, OPERATORS, run) if heads else []
        rows = [{**r, **{k: heads[0][k] for k in _HEAD}} for r in rows]
    if not rows or not store.has_table(result_table(run)):
        known = [r.run for r in store.table(RUNS).select("run").limit(20).collect()]
        raise UserError(f"no captured run {run!r} in store {store.root}",
                        hint=f"known runs: {', '.join(known) or 'none'}")
    ops = []
    for r in rows:
        inputs = tuple(OpInput(i["pred"], tuple(i["accessed"]) if i["accessed"] is not None else None)
                       for i in sorted(r["inputs"], key=lambda i: i["input"]))
        manip = (tuple(Manipulation(m["input"], m["src"], m["dst"]) for m in r["manipulated"])
                 if r["manipulated"] is not None else None)
        ops.append(OperatorProv(r["oid"], OpType(r["type"]), r["method"], inputs, manip, r["detail"] or "",
                                r["dataset"]))
    head = rows[0]
    output = (head["output_path"], head["output_format"], head["finished"])
    return StoredRun(run, tuple(sorted(ops, key=lambda o: o.oid)), head["result_oid"],
                     store.table(result_table(run)), head["id_column"], slots_from_json(head["slots"]), output)
