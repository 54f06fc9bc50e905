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

from capture.ids import item_element_id
from capture.locator import Locator
from capture.operators import OpType
from capture.storing.runs import local_rows, read_head
from capture.storing.tables import SOURCES
from capture.tracing import duckdb
from capture.tracing.places import Key, Place, every, place_of_input
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
    value: ``iql.TRACE_COLUMNS``): one per node of each traced input item's tree,
    with the item's store element, its ``source`` (when ``where``) and the value at the node's
    path (when ``values``); input items are located only when one of the two is asked for."""
    with _no_cyclic_gc():
        places: dict[Key, Place] = {}
        if (where or values) and bt.items and bt.run is not None:
            places = locate(store, read_head(store, bt.run), {(i.dataset, i.item_id) for i in bt.items}, values)
        rows = []
        for item in bt.items:
            place = places.get((item.dataset, item.item_id))
            source = place.source if place is not None and where else None
            element = item_element_id(item.dataset, item.item_id)
            for n in item.nodes:
                value = place.value(n.path) if place is not None and values else None
                rows.append((item.dataset, element, item.item_id, n.path, n.role, list(n.accessed),
                             list(n.manipulated), source, value))
        return rows


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
