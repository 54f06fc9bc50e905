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
what the wings share (a :class:`Place`, a :class:`Located`, the value at a path, the texts of
unread items).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from capture.ids import dataset_element_id, item_element_ids
from capture.locator import Locator
from capture.operators import OpType
from capture.storing.runs import local_rows, read_head
from capture.storing.tables import SOURCES
from capture.tracing import duckdb
from capture.tracing.backtrace import by_identity, no_cyclic_gc
from capture.tracing.places import (
    NO_RECORD,
    PYTHON_RECORD,
    Located,
    json_column,
    json_text,
    located,
    located_all,
    place_of_input,
    value_at,
)
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


def locate(store, head, wanted: Mapping[str, np.ndarray], values: bool = True) -> dict[str, Located]:
    """Where the traced input items ``wanted`` (dataset -> distinct item ids) of run ``head`` live, and
    (``values``) their records read back from the unchanged input, per dataset."""
    spark_allowed = store.engine is not Engine.LOCAL
    locators = read_locators(store, head.run)
    by_dataset: dict[str, Locator] = {}
    detail: dict[str, str] = {}
    for op in head.operators:
        if op.type is OpType.SOURCE and op.dataset is not None:
            detail.setdefault(op.dataset, op.detail or op.method)
            if op.oid in locators:
                by_dataset.setdefault(op.dataset, locators[op.oid])
    out: dict[str, Located] = {}
    for dataset, ids in wanted.items():
        ids = np.asarray(ids, np.int64)
        loc = by_dataset.get(dataset)
        if loc is None:
            found = located_all(ids, f"{detail.get(dataset, dataset)} "
                                     "(where its items live was not recorded with this run)")
        elif loc.ids == "program":
            found = located_all(ids, f"rows the program made ({detail.get(dataset, loc.format)}): "
                                     "nothing to read back")
        else:
            found = duckdb.read_input(dataset, loc, ids, values)
            if found is None and not spark_allowed:
                found = located_all(ids, f"{place_of_input(loc)} "
                                         "(finding its rows needs Spark: not with --engine local)")
            elif found is None:
                from capture.tracing import spark  # deferred: the Spark wing imports pyspark

                items = {i: [(dataset, i)] for i in ids.tolist()}
                found = located(spark.read_input(store.spark, dataset, loc, items, values)).get(dataset)
        if found is not None:
            out[dataset] = found
    return out


def trace_rows(store, bt, where: bool = True, values: bool = True) -> list[tuple]:
    """The rows of TRACE (dataset, item, item_id, path, role, accessed_by, manipulated_by, source,
    value: ``iql.TRACE_COLUMNS``) as tuples: :func:`trace_table`'s rows."""
    return trace_table_rows(trace_table(store, bt, where, values))


def trace_table_rows(table) -> list[tuple]:
    """The rows of a :func:`trace_table` as tuples."""
    with no_cyclic_gc():
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
    columns, the items' places are arrays per dataset (:class:`~capture.tracing.places.Located`),
    and the values of a path are written for all records of a file at once
    (:func:`~capture.tracing.places.json_column`) -- a trace of one aggregate over 150,000 input
    rows is millions of rows."""
    with no_cyclic_gc():
        found: dict[str, Located] = {}
        by_dataset = _items_by_dataset(bt.items)
        if (where or values) and bt.items and bt.run is not None:
            _, code, names, ids = by_dataset
            found = locate(store, read_head(store, bt.run), {d: ids[code == k] for k, d in enumerate(names)}, values)
        return _table(bt.items, by_dataset, found, where, values)


def _items_by_dataset(items) -> tuple[pa.Array, np.ndarray, list[str], np.ndarray]:
    """The items' datasets (a string array), each one's dataset as a number (``code``) into the
    distinct ``names``, and their ids."""
    datasets = pa.array([i.dataset for i in items], pa.string())
    coded = datasets.dictionary_encode()
    code = coded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    ids = np.fromiter((i.item_id for i in items), dtype=np.int64, count=len(items))
    return datasets, code, coded.dictionary.to_pylist(), ids


class _Places(NamedTuple):
    """Each traced item's place (:func:`_places`): index into ``sources`` (-1: not located), its
    record's table (or NO_RECORD / PYTHON_RECORD) and row, and the Python records by item."""

    at: np.ndarray
    sources: pa.Array
    table: np.ndarray
    row: np.ndarray
    tables: list[pa.Table]
    records: dict[int, object]  # item index -> record


def _places(code: np.ndarray, names: list[str], ids: np.ndarray, found: Mapping[str, Located]) -> _Places:
    """Each item (its dataset's number ``code`` into ``names`` and its id) looked up in its
    dataset's :class:`Located` by a sorted search, with no Python step per item."""
    n = len(ids)
    at = np.full(n, -1, np.int64)
    table = np.full(n, NO_RECORD, np.int64)
    row = np.zeros(n, np.int64)
    sources: list[pa.Array] = []
    tables: list[pa.Table] = []
    records: dict[int, object] = {}
    offset = 0
    for k, dataset in enumerate(names):
        place = found.get(dataset)
        if place is None or not len(place.ids):
            continue
        mine = np.flatnonzero(code == k)
        order = np.argsort(place.ids, kind="stable")
        ordered = place.ids[order]
        pos = np.minimum(np.searchsorted(ordered, ids[mine]), len(ordered) - 1)
        hit = ordered[pos] == ids[mine]
        items, j = mine[hit], order[pos[hit]]
        at[items] = offset + j
        t = place.table[j]
        table[items] = np.where(t >= 0, t + len(tables), t)
        row[items] = place.row[j]
        python = t == PYTHON_RECORD
        records.update(zip(items[python].tolist(), (place.records[i] for i in place.ids[j[python]].tolist()),
                           strict=True))
        sources.append(place.source)
        tables += place.tables
        offset += len(place.ids)
    joined = pa.concat_arrays(sources) if sources else pa.array([], pa.string())
    return _Places(at, joined, table, row, tables, records)


def table_of(items, found: Mapping[str, Located], where: bool, values: bool) -> pa.Table:
    """TRACE's rows of traced ``items`` whose inputs were ``found`` (see :func:`trace_table`)."""
    return _table(items, _items_by_dataset(items), found, where, values)


def _table(items, by_dataset: tuple, found: Mapping[str, Located], where: bool, values: bool) -> pa.Table:
    """:func:`table_of`, the items' datasets and ids given (:func:`_items_by_dataset`)."""
    with no_cyclic_gc():
        tuples = [i.nodes for i in items]
        shared, item_shape = by_identity(tuples)  # the distinct node tuples, and each item's
        flat: list = [n for s in shared.tolist() for n in tuples[s]]  # their nodes, one after the other
        sizes = np.fromiter((len(tuples[s]) for s in shared.tolist()), dtype=np.int64, count=len(shared))
        first = np.cumsum(sizes) - sizes  # where each distinct tuple's nodes start in ``flat``
        # Row-level arrays are int32 and made by np.repeat of item-level ones (a trace can be
        # millions of rows): an item's rows are its tree's nodes, one after the other.
        counts = sizes[item_shape]
        item_of_row = np.repeat(np.arange(len(items), dtype=np.int32), counts)
        row_start = np.cumsum(counts) - counts
        shift = (row_start - first[item_shape]).astype(np.int32)
        node_of_row = np.arange(len(item_of_row), dtype=np.int32) - np.repeat(shift, counts)
        node_paths = [n.path for n in flat]
        node_columns = {
            "path": pa.array(node_paths, pa.string()),
            "role": pa.array([n.role for n in flat], pa.string()),
            "accessed_by": pa.array([list(n.accessed) for n in flat], pa.list_(pa.int32())),
            "manipulated_by": pa.array([list(n.manipulated) for n in flat], pa.list_(pa.int32())),
        }
        datasets, code, names, ids = by_dataset
        places = _places(code, names, ids, found)
        elements = pa.array([dataset_element_id(d) for d in names], pa.string()).take(pa.array(code))
        item_columns = {
            "dataset": datasets,
            "item": item_element_ids(elements, ids),
            "item_id": pa.array(ids),
            "source": (places.sources.take(pa.array(places.at, mask=places.at < 0)) if where
                       else pa.nulls(len(items), pa.string())),
        }
        node_take, item_take = pa.array(node_of_row), pa.array(item_of_row)
        columns = {}
        for field in TRACE_SCHEMA:
            name, coded = field.name, pa.types.is_dictionary(field.type)
            if name in node_columns:
                at, column = node_take, node_columns[name]
            elif name in item_columns:
                at, column = item_take, item_columns[name]
            else:
                columns[name] = (_values(places, node_paths, counts, node_of_row) if values
                                 else pa.nulls(len(item_of_row), field.type))
                continue
            columns[name] = pa.DictionaryArray.from_arrays(at, column) if coded else column.take(at)
        return pa.table(columns, schema=TRACE_SCHEMA)


def _values(places: _Places, node_paths: list[str], counts: np.ndarray, node_of_row: np.ndarray) -> pa.Array:
    """TRACE's ``value`` column: per row (``counts[i]`` rows for item i, ``node_of_row`` their
    nodes), the JSON text of its item's record at its node's path. Records held column-wise (a
    Parquet file's) are written per (file's records, path) at once; other records (JSON lines,
    text fields, a Spark job's rows) value by value."""
    path_ix: dict[str, int] = {}
    path_of_node = np.fromiter((path_ix.setdefault(p, len(path_ix)) for p in node_paths), dtype=np.int32,
                               count=len(node_paths))
    paths = list(path_ix)
    path_of_row = path_of_node[node_of_row]
    batch_of_row = np.repeat(places.table.astype(np.int32), counts)
    # The column is dictionary-coded: the texts of each (file's records, path) that some row asks
    # for written once, one block after the other, with the Python records' texts after them; a
    # row points at its block's start plus its record's row.
    index = np.zeros(len(node_of_row), dtype=np.int32)
    texts: list[pa.Array] = []
    size = 0
    if places.tables:  # over all rows at once (a row without a table's record is masked or overwritten)
        group = np.maximum(batch_of_row, 0) * len(paths) + path_of_row
        asked = np.bincount(group, weights=batch_of_row >= 0, minlength=len(places.tables) * len(paths))
        start = np.zeros(len(asked), dtype=np.int32)
        for g in np.flatnonzero(asked).tolist():
            b, p = divmod(g, len(paths))
            start[g] = size
            texts.append(json_column(places.tables[b], paths[p]))
            size += len(texts[-1])
        index = start[group] + np.repeat(places.row.astype(np.int32), counts)
    python = np.flatnonzero(batch_of_row == PYTHON_RECORD)
    if len(python):
        index[python] = size + np.arange(len(python), dtype=np.int32)
        item_of_row = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        texts.append(pa.array([json_text(value_at(places.records[i], paths[p].split(".") if paths[p] else []))
                               for i, p in zip(item_of_row[python].tolist(), path_of_row[python].tolist(),
                                               strict=True)], pa.string()))
    dictionary = pa.concat_arrays([t.cast(pa.string()) for t in texts]) if texts else pa.array([], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(index, mask=batch_of_row == NO_RECORD), dictionary)
