"""Where traced input items live, and their values read back: TRACE's ``source`` and ``value``.

A source item's id is a hash (capture/tracking/sources.py), so it does not say where the item is.
Each captured source records a :class:`~capture.locator.Locator` (table
``capture_sources``): the input's files with their lengths and modification times, the reader and
its options. Finding an item again computes the ids the capture computed, for the input as it is
now, and keeps the traced ones -- PROVision's lazy provenance: nothing per item is stored.

* JSON Lines read with the offset reader and Parquet files, on a local file system: on the driver,
  no JVM (the DuckDB wing: capture/tracing/duckdb/locate.py).
* Every other file input (CSV, text, ORC: ids by row position), and the two above on other file
  systems: one Spark job reads the input again (the Spark wing: capture/tracing/spark/locate.py).
  Under ``--engine local`` no job runs and the source says so.
* Rows the program made (``createDataFrame``, ``range``, literals, ``Tracker.track``): the source
  names them; there is nothing to read back.

An input whose files changed since the run (other length or time, or missing) is not guessed at:
its items' ``source`` says it changed and ``value`` is null. A catalog table's items show the
table and the file and row they sit in.

:func:`locate` reads each traced input through the wing that can: the driver (capture/tracing/
duckdb/locate.py: local JSON Lines and Parquet files, no JVM) whenever it can, whatever engine
traced the run -- it is the cheaper read -- and one Spark job (capture/tracing/spark/locate.py)
for any other file input, unless the store's engine is set to local (then the source says so).
That rule is decided once per input here; the wings do not ask. capture/tracing/places.py holds
what the wings share (a :class:`Place`, the value at a path, the texts of unread items).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from contextlib import contextmanager

import numpy as np
import pyarrow as pa

from capture.ids import dataset_element_id, item_element_ids
from capture.locator import Locator
from capture.operators import OpType
from capture.storing.runs import local_rows, read_head
from capture.storing.tables import SOURCES
from capture.tracing import duckdb
from capture.tracing.places import Key, Place, every, json_column, place_of_input
from store.engine import Engine


# ---- entry point -------------------------------------------------------------------------------
def read_locators(store, run: str) -> dict[int, Locator]:
    """The locators of run ``run``'s source operators (pyarrow on a local store, else one job)."""
    if not store.has_table(SOURCES):
        return {}
    rows = local_rows(store, SOURCES, run)
    if rows is None:  # a store on a cluster path: one job, through the store's DataFrame
        table = store.table(SOURCES)
        rows = [r.asDict() for r in table.filter(table["run"] == run).collect()]
    return {r["oid"]: Locator.from_json(r["locator"]) for r in rows}


def locate(store, head, keys: Iterable[Key], values: bool = True) -> dict[Key, Place]:
    """Where each traced input item ``(dataset, item id)`` of run ``head`` lives, and (``values``)
    its record read back from the unchanged input."""
    spark_allowed = store.engine is not Engine.LOCAL
    locators = read_locators(store, head.run)
    by_dataset: dict[str, Locator] = {}
    detail: dict[str, str] = {}
    for op in head.operators:
        if op.type is OpType.SOURCE and op.dataset is not None:
            detail.setdefault(op.dataset, op.detail or op.method)
            if op.oid in locators:
                by_dataset.setdefault(op.dataset, locators[op.oid])
    wanted: dict[str, dict[int, list[Key]]] = {}
    for key in keys:
        wanted.setdefault(key[0], {}).setdefault(key[1], []).append(key)
    out: dict[Key, Place] = {}
    for dataset, items in wanted.items():
        loc = by_dataset.get(dataset)
        if loc is None:
            found = every(items, f"{detail.get(dataset, dataset)} "
                                  "(where its items live was not recorded with this run)")
        elif loc.ids == "program":
            found = every(items, f"rows the program made ({detail.get(dataset, loc.format)}): nothing to read back")
        else:
            found = duckdb.read_input(dataset, loc, items, values)
            if found is None and not spark_allowed:
                found = every(items, f"{place_of_input(loc)} (finding its rows needs Spark: not with --engine local)")
            elif found is None:
                from capture.tracing import spark  # deferred: the Spark wing imports pyspark

                found = spark.read_input(store.spark, dataset, loc, items, values)
        out.update(found)
    return out


def trace_rows(store, bt, where: bool = True, values: bool = True) -> list[tuple]:
    """The rows of TRACE (dataset, item, item_id, path, role, accessed_by, manipulated_by, source,
    value: ``iql.TRACE_COLUMNS``) as tuples: :func:`trace_table`'s rows."""
    table = trace_table(store, bt, where, values)
    with _no_cyclic_gc():
        return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


_NAMES = pa.dictionary(pa.int32(), pa.string())  # a text repeated row after row: each stored once
TRACE_SCHEMA = pa.schema([("dataset", _NAMES), ("item", _NAMES), ("item_id", pa.int64()),
                          ("path", _NAMES), ("role", _NAMES), ("accessed_by", pa.list_(pa.int32())),
                          ("manipulated_by", pa.list_(pa.int32())), ("source", _NAMES),
                          ("value", _NAMES)])


def trace_table(store, bt, where: bool = True, values: bool = True) -> pa.Table:
    """The rows of TRACE as an Arrow table (:data:`TRACE_SCHEMA`): one per node of each traced
    input item's tree, with the item's store element, its ``source`` (when ``where``) and the value
    at the node's path (when ``values``); input items are located only when one of the two is
    asked for.

    Built column by column: the items that share a tree (the members of a group) share its node
    columns, and the values of a path are written for all records of a file at once
    (:func:`~capture.tracing.places.json_column`) -- a trace of one aggregate over 150,000 input
    rows is millions of rows."""
    with _no_cyclic_gc():
        places: dict[Key, Place] = {}
        if (where or values) and bt.items and bt.run is not None:
            places = locate(store, read_head(store, bt.run), {(i.dataset, i.item_id) for i in bt.items}, values)
        return table_of(bt.items, places, where, values)


def table_of(items, places: dict[Key, Place], where: bool, values: bool) -> pa.Table:
    """TRACE's rows of traced ``items`` whose inputs live at ``places`` (see :func:`trace_table`)."""
    with _no_cyclic_gc():
        shape_of: dict[int, int] = {}
        flat: list = []  # the nodes of every distinct tree, one after the other
        first: list[int] = []  # where each distinct tree's nodes start in ``flat``
        item_shape = np.empty(len(items), dtype=np.int64)
        for i, item in enumerate(items):
            s = shape_of.get(id(item.nodes))
            if s is None:
                s = shape_of[id(item.nodes)] = len(first)
                first.append(len(flat))
                flat.extend(item.nodes)
            item_shape[i] = s
        sizes = np.diff(np.append(np.asarray(first, dtype=np.int64), len(flat)))
        counts = sizes[item_shape] if len(items) else np.zeros(0, dtype=np.int64)
        item_of_row = np.repeat(np.arange(len(items), dtype=np.int64), counts)
        row_start = np.cumsum(counts) - counts
        node_of_row = (np.asarray(first, dtype=np.int64)[item_shape][item_of_row]
                       + np.arange(len(item_of_row), dtype=np.int64) - row_start[item_of_row])
        node_paths = [n.path for n in flat]
        node_columns = {
            "path": pa.array(node_paths, pa.string()),
            "role": pa.array([n.role for n in flat], pa.string()),
            "accessed_by": pa.array([list(n.accessed) for n in flat], pa.list_(pa.int32())),
            "manipulated_by": pa.array([list(n.manipulated) for n in flat], pa.list_(pa.int32())),
        }
        keys = [(i.dataset, i.item_id) for i in items]
        ids = np.fromiter((i for _, i in keys), dtype=np.int64, count=len(keys))
        item_columns = {
            "dataset": pa.array([d for d, _ in keys], pa.string()),
            "item": item_element_ids(pa.array([dataset_element_id(d) for d, _ in keys], pa.string()), ids),
            "item_id": pa.array(ids),
            "source": pa.array([p.source if where and (p := places.get(k)) is not None else None for k in keys],
                               pa.string()),
        }
        node_take, item_take = pa.array(node_of_row.astype(np.int32)), pa.array(item_of_row.astype(np.int32))
        columns = {}
        for field in TRACE_SCHEMA:
            name, coded = field.name, pa.types.is_dictionary(field.type)
            if name in node_columns:
                at, column = node_take, node_columns[name]
            elif name in item_columns:
                at, column = item_take, item_columns[name]
            else:
                columns[name] = (_values(keys, places, node_paths, item_of_row, node_of_row) if values
                                 else pa.nulls(len(item_of_row), field.type))
                continue
            columns[name] = pa.DictionaryArray.from_arrays(at, column) if coded else column.take(at)
        return pa.table(columns, schema=TRACE_SCHEMA)


def _values(keys: list[Key], places: dict[Key, Place], node_paths: list[str], item_of_row: np.ndarray,
            node_of_row: np.ndarray) -> pa.Array:
    """TRACE's ``value`` column: per row, the JSON text of its item's record at its node's path.
    Records held column-wise (a Parquet file's) are written per (file's records, path) at once;
    other records (JSON lines, text fields, a Spark job's rows) value by value."""
    held = [places.get(k) for k in keys]
    tag = np.fromiter((-1 if p is None or not p.found else -2 if p.rows is None else id(p.rows) for p in held),
                      dtype=np.int64, count=len(held))  # -1: no record; -2: a Python record; else its table
    row_of_item = np.fromiter((p.row if p is not None else 0 for p in held), dtype=np.int64, count=len(held))
    tables, first_of, batch_of_item = np.unique(tag, return_index=True, return_inverse=True)
    batch_of_item = batch_of_item.reshape(-1) - int(np.count_nonzero(tables < 0))
    batch_of_item = np.where(tag < 0, tag, batch_of_item)
    batches = [held[i].rows for t, i in zip(tables.tolist(), first_of.tolist(), strict=True) if t >= 0]
    path_ix: dict[str, int] = {}
    path_of_node = np.fromiter((path_ix.setdefault(p, len(path_ix)) for p in node_paths), dtype=np.int64,
                               count=len(node_paths))
    paths = list(path_ix)
    path_of_row = path_of_node[node_of_row]
    batch_of_row = batch_of_item[item_of_row]
    # The column is dictionary-coded: the texts of each (file's records, path) written once, in
    # one dictionary with the Python records' texts after them; each row points at its text.
    index = np.zeros(len(item_of_row), dtype=np.int32)
    texts: list[pa.Array] = []
    size = 0
    on = np.flatnonzero(batch_of_row >= 0)
    if len(on):
        group = batch_of_row[on] * len(paths) + path_of_row[on]
        order = np.argsort(group.astype(np.uint16) if group.max() < 1 << 16 else group, kind="stable")  # radix
        ordered = group[order]
        cuts = np.flatnonzero(np.diff(ordered)) + 1
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(order)], strict=True):
            g, at = int(ordered[lo]), on[order[lo:hi]]
            b, p = divmod(g, len(paths))
            index[at] = size + row_of_item[item_of_row[at]]
            texts.append(json_column(batches[b], paths[p]))
            size += len(texts[-1])
    python = np.flatnonzero(batch_of_row == -2)
    if len(python):
        index[python] = size + np.arange(len(python), dtype=np.int32)
        texts.append(pa.array([places[keys[i]].value(paths[p]) for i, p in
                               zip(item_of_row[python].tolist(), path_of_row[python].tolist(), strict=True)],
                              pa.string()))
    dictionary = pa.concat_arrays([t.cast(pa.string()) for t in texts]) if texts else pa.array([], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(index, mask=batch_of_row == -1), dictionary)


@contextmanager
def _no_cyclic_gc():
    """Python's cyclic garbage collector paused: a large trace builds millions of rows (no cycles
    among them), and each full collection would walk every record read back so far (without the
    pause they took most of the time of a 150,000-item trace)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
