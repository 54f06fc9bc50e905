"""Committed capture runs: naming, the stored annotated result, reading a run back.

A run's provenance is stored *compressed* (PROVision's lazy/compressed provenance): the annotated
result -- every visible column plus the hidden id, position and collected-id columns the tracked
pipeline carried, except the ids that can be computed again (capture/ids.py) -- is kept as the
run's own table ``capture_result/<run>``, and the run's row in ``capture_runs`` records which
hidden column holds each operator's associations (its slots) and how to compute the derived ids.
Pebble's P (Table 6) is a *view* of that table (``StoredRun.associations``): the same rows
``capture.storing.materialize`` derives from a live tracked DataFrame. The backtracer never needs the
whole view: it derives the associations of the matched result rows alone.

This module reads a run's head (:class:`RunHead`, :func:`read_head`: operators and run row) and a
local store's rows with pyarrow, and imports no pyspark (a store on a cluster path is read through
the store's DataFrames); the run's result tables opened as Spark DataFrames (``StoredRun``,
``load_run``) are in capture/storing/stored.py.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from capture import ids as drv
from capture.ids import is_hidden, item_hex, operator_id
from capture.operators import InRef, Manipulation, OperatorProv, OpInput, OpType, Slot
from capture.storing import assoc_columns
from capture.storing.tables import OPERATORS, PROGRAMS, RUNS, output_table, part_of, result_table
from store.errors import UserError
from store.segments import parquet_files

ROW_KEY = "__strata_row"  # a split result's row: part number << 40 | row index in the part's file


def rows_by_key(files: dict[int, str], keys: list[int], derived: tuple[drv.Derived, ...] = ()) -> list[dict]:
    """The rows with the given ``ROW_KEY``s of a split copy's hidden files (part number -> local
    Parquet file), each a dict with its key and the ``derived`` ids computed (:func:`take`):
    pyarrow reads only the row groups that hold them."""
    wanted: dict[int, list[int]] = {}
    for k in keys:
        wanted.setdefault(k >> 40, []).append(k & ((1 << 40) - 1))
    out: list[dict] = []
    for part, rows in sorted(wanted.items()):
        if part not in files:
            raise UserError(f"the run's stored hidden columns have no file for output part {part}",
                            hint="the store is damaged: capture the pipeline again")
        got = take(files[part], rows, derived=derived)
        out += [{**row, ROW_KEY: (part << 40) | r} for r, row in zip(rows, got, strict=True)]
    return out


def take(path: str, rows: list[int], columns: list[str] | None = None,
         derived: tuple[drv.Derived, ...] = ()) -> list[dict]:
    """Rows ``rows`` (indexes in the file) of a Parquet file (``columns`` only, if given), reading
    only their row groups; the ids of ``derived`` that the rows do not hold computed column-wise
    (``assoc_columns.hydrate_columns``: what ``capture.ids.hydrate_rows`` gives, without a Python
    hash call per id — a trace of an aggregate can take 60,000 rows)."""

    pf = pq.ParquetFile(path)
    sizes = [pf.metadata.row_group(g).num_rows for g in range(pf.metadata.num_row_groups)]
    starts = list(accumulate(sizes, initial=0))
    group_of = [bisect_right(starts, r) - 1 for r in rows]
    groups = sorted(set(group_of))
    read_at = dict(zip(groups, accumulate((sizes[g] for g in groups), initial=0), strict=False))
    index = [read_at[g] + r - starts[g] for r, g in zip(rows, group_of, strict=True)]
    table = pf.read_row_groups(groups, columns=columns).take(pa.array(index, pa.int64()))
    return (assoc_columns.hydrate_columns(table, derived) if derived else table).to_pylist()


# ---- slots and derived ids as JSON (capture_runs.slots) ----------------------------------------
def slots_json(slots: tuple[Slot, ...], derived: tuple[drv.Derived, ...] = ()) -> str:
    """``{"slots": [...], "derived": [...]}`` (runs stored before derived ids hold the list alone)."""
    return json.dumps({"slots": [
        {"oid": s.oid, "out_col": s.out_col, "in_col": s.in_ref.id_col, "input": s.in_ref.input,
         "nest": list(s.nest), "when": [list(w) for w in s.when], "array": s.array, "pos_col": s.pos_col,
         "distinct": s.distinct, "first": None if s.first is None else [list(f) for f in s.first]}
        for s in slots
    ], "derived": drv.to_json(derived)})


def slots_from_json(text: str) -> tuple[tuple[Slot, ...], tuple[drv.Derived, ...]]:
    """The slots and derived ids of ``slots_json``'s text."""
    doc = json.loads(text)
    items, derived = (doc, []) if isinstance(doc, list) else (doc["slots"], doc["derived"])
    slots = tuple(
        Slot(d["oid"], d["out_col"], InRef(d["in_col"], d["input"]), tuple(d["nest"]),
             tuple((w[0], w[1], w[2]) for w in d["when"]), d["array"], d["pos_col"], d["distinct"],
             None if d["first"] is None else tuple((f[0], f[1]) for f in d["first"]))
        for d in items
    )
    return slots, drv.from_json(derived)


# ---- reading a committed run -----------------------------------------------------------------
def require_current_format(store) -> None:
    """Refuse capture tables written before runs stored their annotated result (no job)."""
    entry = store.manifest.tables.get(RUNS)
    if entry is not None and "slots" not in [f["name"] for f in json.loads(entry.schema)["fields"]]:
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
                            hint=f"name the run: TRACE '<run id>' MATCH '...' (see table {RUNS})")
    return run


def local_rows(store, table: str, run: str) -> list[dict] | None:
    """The rows of ``table`` for ``run`` read with pyarrow on the driver (a local store: no Spark
    job; row-group statistics skip other runs' rows), or None for a store on a cluster path."""
    entry = store.manifest.tables.get(table)
    if entry is None:
        return []
    folders = [store.storage.file_path(seg) for seg in entry.segments]
    if any(f is None for f in folders):
        return None

    files = [os.path.join(f, n) for f in folders for n in sorted(os.listdir(f)) if n.endswith(".parquet")]
    if not files:
        return []
    return ds.dataset(files, format="parquet").to_table(filter=ds.field("run") == run).to_pylist()


def _spark_rows(store, run: str) -> list[dict]:
    """One Spark job: the run's operators joined with its run row (DataFrame methods only: this
    module imports no pyspark)."""
    runs, ops = store.table(RUNS), store.table(OPERATORS)
    head = runs.filter(runs["run"] == run).select(*_HEAD)
    return [r.asDict(recursive=True) for r in ops.filter(ops["run"] == run).join(head, "run").collect()]


_HEAD = ("run", "result_oid", "output_path", "output_format", "finished", "id_column", "slots", "items")


def _known_runs(store, n: int = 20) -> list[str]:
    """Up to ``n`` run ids of the store (for a message): pyarrow on a local store, else one job."""
    entry = store.manifest.tables.get(RUNS)
    folders = [store.storage.file_path(seg) for seg in entry.segments] if entry is not None else []
    if all(f is not None for f in folders):
        files = [os.path.join(f, x) for f in folders for x in sorted(os.listdir(f)) if x.endswith(".parquet")]
        return [r for f in files for r in pq.read_table(f, columns=["run"]).column("run").to_pylist()][:n]
    return [r.run for r in store.table(RUNS).select("run").limit(n).collect()]


@dataclass(frozen=True)
class RunHead:
    """A committed run as its ``capture_runs`` row and operators describe it; none of the run's
    own tables is opened (``capture_result/<run>``, and ``capture_output/<run>`` when ``split``)."""

    run: str
    operators: tuple[OperatorProv, ...]
    result_oid: int
    id_col: str
    slots: tuple[Slot, ...]
    output: tuple[str, str, str]
    derived: tuple[drv.Derived, ...]
    items: int | None  # result items, as the run row counts them
    split: bool  # the stored copy is split: the visible columns are the linked output files


def read_head(store, run: str | None = None) -> RunHead:
    """A committed run's operators and run row (default: the store's last capture run) -- with
    pyarrow on a local store, else in ONE Spark job; the run's result tables are not read."""
    run = run_name(store, run)
    require_current_format(store)
    heads = local_rows(store, RUNS, run)
    if heads is None:
        rows = _spark_rows(store, run)
    else:
        rows = local_rows(store, OPERATORS, run) if heads else []
        rows = [{**r, **{k: heads[0].get(k) for k in _HEAD}} for r in rows]
    if not rows or not store.has_table(result_table(run)):
        raise UserError(f"no captured run {run!r} in store {store.root}",
                        hint=f"known runs: {', '.join(_known_runs(store)) or 'none'}")
    ops = []
    for r in rows:
        inputs = tuple(OpInput(i["pred"], tuple(i["accessed"]) if i["accessed"] is not None else None)
                       for i in sorted(r["inputs"], key=lambda i: i["input"]))
        manip = (tuple(Manipulation(m["input"], m["src"], m["dst"]) for m in r["manipulated"])
                 if r["manipulated"] is not None else None)
        ops.append(OperatorProv(r["oid"], OpType(r["type"]), r["method"], inputs, manip, r["detail"] or "",
                                r["dataset"]))
    head = rows[0]
    slots, derived = slots_from_json(head["slots"])
    return RunHead(run, tuple(sorted(ops, key=lambda o: o.oid)), head["result_oid"], head["id_column"], slots,
                   (head["output_path"], head["output_format"], head["finished"]), derived, head.get("items"),
                   store.has_table(output_table(run)))


def output_values(store, run: str) -> dict[str, dict] | None:
    """The visible values of each result item of a committed run, by the item's store element
    (``<run>/op<k>/out#<hex>``, capture/storing/to_model.py), read with pyarrow on a local store
    (a split copy: each output file's rows next to the rows of its part's hidden file). None on
    a store on a cluster path, or when ``run`` is not a captured run (an OpenLineage run)."""


    try:
        head = read_head(store, run)
    except UserError:
        return None

    def files(table: str) -> dict[int | None, list[str]] | None:
        entry = store.manifest.tables.get(table)
        folders = [store.storage.file_path(seg) for seg in entry.segments] if entry is not None else []
        if any(f is None for f in folders):
            return None
        out: dict[int | None, list[str]] = {}
        for f in folders:
            for path in parquet_files(f):
                out.setdefault(part_of(os.path.basename(path)) if head.split else None, []).append(path)
        return out

    hidden = files(result_table(head.run))
    visible = files(output_table(head.run)) if head.split else hidden
    if hidden is None or visible is None:
        return None
    rows: list[dict] = []
    for part, paths in sorted(hidden.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        for i, path in enumerate(paths):
            got = pq.read_table(path).to_pylist()
            if head.split:
                seen = visible.get(part, [])
                shown = pq.read_table(seen[i]).to_pylist() if i < len(seen) else [{} for _ in got]
                got = [{**v, **h} for v, h in zip(shown, got, strict=False)]
            rows += got
    drv.hydrate_rows(rows, head.derived)
    prefix = f"{operator_id(head.run, head.result_oid)}/out#"
    return {prefix + item_hex(r[head.id_col]): _visible(r) for r in rows if r.get(head.id_col) is not None}


def _visible(value):
    """A row (or nested value) without its hidden provenance columns and fields."""
    if isinstance(value, dict):
        return {k: _visible(v) for k, v in value.items() if not is_hidden(k)}
    if isinstance(value, list):
        return [_visible(v) for v in value]
    return value


def source_paths(head: RunHead, path: str) -> list[str]:
    """The source attribute paths a result path derives from (``dataset:path``), following the
    run's manipulations (Definition 5.1's M) back from the result operator; positions in the
    result path (``tweets[0].text``) match any position (``tweets.[pos].text``). Operators that
    manipulate nothing (filters, unions) keep the path."""
    by_oid = {o.oid: o for o in head.operators}
    out: set[str] = set()
    stack = [(head.result_oid, re.sub(r"\[\d+\]", ".[pos]", path))]
    seen: set[tuple[int, str]] = set()
    while stack:
        oid, p = stack.pop()
        if (oid, p) in seen or oid not in by_oid:
            continue
        seen.add((oid, p))
        op = by_oid[oid]
        if op.type is OpType.SOURCE:
            out.add(f"{op.dataset}:{p}")
            continue
        for i, inp in enumerate(op.inputs):
            mine = [m for m in op.manipulated or () if m.input == i]
            inside = [m.src + p[len(m.dst):] for m in mine if p == m.dst or p.startswith(m.dst + ".")]
            covers = [m.src for m in mine if m.dst.startswith(p + ".")]  # p is a struct of mapped fields
            if op.manipulated and not inside and not covers:
                continue  # the path is not made from this input
            for q in (inside + covers) or [p]:
                stack.append((inp.pred, q))
    return sorted(out)


def read_program(store, run: str) -> dict | None:
    """The script run ``run`` was captured from (table ``capture_programs``): ``script``, ``args``
    (a list), ``cwd`` and ``write`` (which of its writes made the run); None for a run captured
    otherwise (the ``Tracker`` API, a ``capturing`` block without a script) or before the table
    existed. Read with pyarrow on a local store, else in one Spark job."""
    rows = local_rows(store, PROGRAMS, run)
    if rows is None:
        if not store.has_table(PROGRAMS):
            return None
        table = store.table(PROGRAMS)
        rows = [r.asDict() for r in table.filter(table["run"] == run).collect()]
    if not rows:
        return None
    row = rows[0]
    return {"script": row["script"], "args": json.loads(row["args"]), "cwd": row["cwd"], "write": int(row["write"])}
