"""Map one captured run into the multi-granularity model (a `strata-bundle/1` bundle).

process gset: Operator ⪯ Run ⪯ Pipeline      data gset: Item ⪯ Dataset

* ``pipeline:<name>`` (Pipeline) ⊇ ``<run>`` (Run) ⊇ ``<run>/op<k>`` (Operator, attrs oid/type/method)
* a source dataset ``dataset:<name>`` ⊇ its items ``dataset:<name>#<id as 16 hex digits>``
  (capture/ids.py ``item_element_id``; shared by every run that reads the same input: ids are
  deterministic, see capture/tracking/sources.py);
* the output of operator k ``<run>/op<k>/out`` ⊇ its items ``<run>/op<k>/out#<id as 16 hex digits>``;
  the written output's dataset has attributes ``path``, ``format`` and ``name`` (the path);
* one edge (input item, operator, output item) per id association.

Elements already in the store (the pipeline, source datasets and their items from earlier
runs) are left out. ``sections`` builds the bundle as Spark DataFrames (any run);
``driver_items`` builds the same rows on the driver from associations already there (a small run
on a local store, ingested without Spark: the few elements as a bundle, the items and edges
column-wise). This is the only module that
knows the store's section DataFrame layout (store/bundle.py SECTION_SCHEMAS).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from capture.id_columns import item_element_column
from capture.ids import dataset_element_id, item_element_ids, operator_id
from capture.operators import OperatorProv, OpType
from capture.storing.associations import IN_ID, INPUT, OID, OUT_ID
from store.arrays import distinct_rows
from store.bundle import normalize
from store.spark.bundle import SECTION_SCHEMAS
from store.spark.frames import local_frame

ITEM, DATASET, OPERATOR, RUN, PIPELINE = "Item", "Dataset", "Operator", "Run", "Pipeline"
GSETS = {
    "data": {"contains": [[ITEM, DATASET]]},
    "process": {"contains": [[OPERATOR, RUN], [RUN, PIPELINE]]},
}


def pipeline_id(name: str) -> str:
    return f"pipeline:{name}"


def dataset_id(run: str, op: OperatorProv) -> str:
    """The Dataset element holding the output items of ``op`` in run ``run``."""
    return dataset_element_id(op.dataset) if op.type is OpType.SOURCE else f"{operator_id(run, op.oid)}/out"


def small_elements(run: str, pipeline: str, ops: Iterable[OperatorProv], run_attrs: dict[str, Any],
                   output: dict[str, Any]) -> list[dict[str, Any]]:
    """Pipeline, run, operators and datasets as bundle element records."""
    ops = list(ops)
    out: list[dict[str, Any]] = [
        {"id": pipeline_id(pipeline), "granularity": PIPELINE, "attrs": {"name": pipeline}},
        {"id": run, "granularity": RUN, "parents": [pipeline_id(pipeline)], "attrs": run_attrs},
    ]
    last = max(o.oid for o in ops)
    for o in ops:
        out.append({"id": operator_id(run, o.oid), "granularity": OPERATOR, "parents": [run],
                    "attrs": {"oid": o.oid, "type": o.type.value, "method": o.method}})
        attrs: dict[str, Any] = {"operator": operator_id(run, o.oid)} if o.type is not OpType.SOURCE else {
            "name": o.dataset or "", "source": o.detail}
        if o.oid == last:  # the written output: named by its path, as OpenLineage names a file
            attrs.update(output)
            attrs.setdefault("name", output.get("path"))
        if o.type is OpType.SOURCE and any(e["id"] == dataset_id(run, o) for e in out):
            continue  # the same dataset read twice (a self-join, a union of a source with itself)
        out.append({"id": dataset_id(run, o), "granularity": DATASET, "attrs": attrs})
    return out


def _datasets(spark, run: str, ops: list[OperatorProv]) -> tuple[DataFrame, DataFrame]:
    """(oid -> its output dataset) and ((oid, input) -> the input's dataset), both tiny."""
    by_oid = {o.oid: o for o in ops}
    outs = [(o.oid, dataset_id(run, o)) for o in ops]
    ins = [(o.oid, i, dataset_id(run, by_oid[inp.pred])) for o in ops for i, inp in enumerate(o.inputs)]
    out_df = local_frame(spark, outs, "oid int, out_ds string")
    in_df = local_frame(spark, ins, "oid int, input int, in_ds string")
    return out_df, in_df


def sections(spark, run: str, pipeline: str, ops: list[OperatorProv], assoc: DataFrame,
             existing_ids: DataFrame, run_attrs: dict[str, Any], output: dict[str, Any]) -> dict[str, Any]:
    """The bundle of one run, sections as DataFrames in the store's normalized layout."""

    out_df, in_df = _datasets(spark, run, ops)
    rows = assoc.join(F.broadcast(out_df), OID).join(F.broadcast(in_df), [OID, INPUT])
    rows = rows.select(
        item_element_column(F.col("in_ds"), F.col(IN_ID)).alias("src"),
        F.concat(F.lit(f"{run}/op"), F.col(OID).cast("string")).alias("process"),  # operator_id
        item_element_column(F.col("out_ds"), F.col(OUT_ID)).alias("dst"),
        "in_ds", "out_ds",
    )
    items = (
        rows.select(F.col("dst").alias("id"), F.col("out_ds").alias("parent"))
        .unionByName(rows.select(F.col("src").alias("id"), F.col("in_ds").alias("parent")))
        .distinct()
    )
    small = small_elements(run, pipeline, ops, run_attrs, output)
    small_df = local_frame(
        spark, [normalize("elements", i, r) for i, r in enumerate(small)], SECTION_SCHEMAS["elements"]
    )
    n = len(small)
    item_df = items.select(
        (F.monotonically_increasing_id() + F.lit(n)).alias("idx"),
        "id",
        F.lit(ITEM).alias("granularity"),
        F.array(F.col("parent")).alias("parents"),
        F.lit(None).cast("map<string,string>").alias("attrs"),
        F.lit(None).cast("map<string,string>").alias("attr_types"),
        F.lit(None).cast("string").alias("problem"),
    )
    elements = small_df.unionByName(item_df).join(existing_ids.select("id"), "id", "left_anti")
    elements = elements.select(*SECTION_SCHEMAS["elements"].fieldNames())
    edges = rows.select(
        F.monotonically_increasing_id().alias("idx"), "src", "process", "dst",
        F.lit(None).cast("string").alias("problem"),
    )
    # few partitions: the store validates with several joins per section, and the association
    # frame has one partition per slot query and input split
    parts = max(1, spark.sparkContext.defaultParallelism)
    return {
        "format": "strata-bundle/1",
        "gsets": GSETS,
        "types": [],
        "elements": elements.coalesce(parts),
        "vertices": local_frame(spark, [], SECTION_SCHEMAS["vertices"]),
        "edges": edges.coalesce(parts),
    }


def driver_items(run: str, pipeline: str, ops: list[OperatorProv], assoc,
                 existing: Callable[[Iterable[str]], set[str]], run_attrs: dict[str, Any],
                 output: dict[str, Any]) -> tuple[dict[str, Any], Any, Any]:
    """:func:`sections` on the driver, for a run small enough to hold its associations in memory
    (``assoc``: an ``(n, 4)`` int64 array of ``(oid, out_id, input, in_id)``,
    capture/storing/assoc_columns.py, or of ``assoc_rows``' tuples cut to those), in two parts:
    the bundle of the few elements (pipeline, run, operators, datasets; those ``existing``
    reports, ids already in the store, left out), and the items
    and edges as pyarrow Tables, ``(id, parent)`` and ``(src, process, dst)``, each row once,
    for ``StoreTransaction.ingest_items`` (which leaves out items already in the store) —
    or, should its checks fail, :func:`items_bundle`. Computed column-wise (numpy, Arrow):
    an item is a (dataset, id) pair until its element id is formatted, once."""
    small, parts = driver_parts(run, pipeline, ops, assoc, existing, run_attrs, output)
    [(items, edges)] = parts
    return small, items, edges


def driver_parts(run: str, pipeline: str, ops: list[OperatorProv], assoc,
                 existing: Callable[[Iterable[str]], set[str]], run_attrs: dict[str, Any],
                 output: dict[str, Any], rows: int | None = None) -> tuple[dict[str, Any], Iterator[tuple[Any, Any]]]:
    """:func:`driver_items` with its items and edges in parts of at most ``rows`` rows (None: one
    part), each part's element ids formatted only when the part is taken, so that the text of a
    large run's ids is never all in memory at once. Every part of items comes before the first
    part of edges (then an edge's ends are items staged before it); a run of at most ``rows``
    items and edges together is one part of both."""
    import numpy as np  # deferred: the Spark model does not need numpy
    import pyarrow as pa  # deferred: nor pyarrow

    by_oid = {o.oid: o for o in ops}
    names = sorted({dataset_id(run, o) for o in ops})
    code = {n: c for c, n in enumerate(names)}
    width = 1 + max((len(o.inputs) for o in ops), default=0)
    top = max(by_oid) + 1
    out_code = np.zeros(top, np.int64)  # oid -> the code of its output dataset
    in_code = np.zeros(top * width, np.int64)  # oid * width + input -> the code of that input's dataset
    for o in ops:
        out_code[o.oid] = code[dataset_id(run, o)]
        for i, inp in enumerate(o.inputs):
            in_code[o.oid * width + i] = code[dataset_id(run, by_oid[inp.pred])]
    oid, out_id, k, in_id = np.asarray(assoc, np.int64).reshape(-1, 4).T
    edge_rows = pa.table({"oid": oid, "in_ds": in_code[oid * width + k], "in_id": in_id,
                          "out_ds": out_code[oid], "out_id": out_id})
    edge_rows = distinct_rows(edge_rows, ["oid", "in_ds", "in_id", "out_ds", "out_id"])
    item_rows = distinct_rows(pa.concat_tables([
        edge_rows.select(["in_ds", "in_id"]).rename_columns(["ds", "id"]),
        edge_rows.select(["out_ds", "out_id"]).rename_columns(["ds", "id"])]), ["ds", "id"])
    datasets = pa.array(names, pa.string())

    def codes(col):
        return pa.array(col.to_numpy())

    def element_ids(ds, ids):
        return item_element_ids(datasets.take(codes(ds)), ids.to_numpy())

    procs = pa.array([operator_id(run, o) for o in range(top)], pa.string())

    def edges_of(part):
        return pa.table({"src": element_ids(part["in_ds"], part["in_id"]), "process": procs.take(codes(part["oid"])),
                         "dst": element_ids(part["out_ds"], part["out_id"])})

    def items_of(part):
        return pa.table({"id": element_ids(part["ds"], part["id"]), "parent": datasets.take(codes(part["ds"]))})

    elements = small_elements(run, pipeline, ops, run_attrs, output)
    known = existing([e["id"] for e in elements])
    small = {"format": "strata-bundle/1", "gsets": GSETS, "types": [],
             "elements": [e for e in elements if e["id"] not in known], "vertices": [], "edges": []}
    if rows is None or item_rows.num_rows + edge_rows.num_rows <= rows:
        return small, iter([(items_of(item_rows), edges_of(edge_rows))])
    no_items, no_edges = items_of(item_rows.slice(0, 0)), edges_of(edge_rows.slice(0, 0))
    parts = itertools.chain(
        ((items_of(item_rows.slice(i, rows)), no_edges) for i in range(0, item_rows.num_rows, rows)),
        ((no_items, edges_of(edge_rows.slice(i, rows))) for i in range(0, edge_rows.num_rows, rows)))
    return small, parts


def items_bundle(items, edges, known: set[str]) -> dict[str, Any]:
    """:func:`driver_items`' items and edges as a bundle of their own (ingested record by record),
    the items in ``known`` (already in the store) left out."""
    return {"format": "strata-bundle/1", "gsets": GSETS, "types": [],
            "elements": [{"id": i, "granularity": ITEM, "parents": [p]} for i, p in
                         zip(items.column("id").to_pylist(), items.column("parent").to_pylist(), strict=True)
                         if i not in known],
            "vertices": [], "edges": edges.to_pylist()}


CHECKPOINTED = ("elements", "edges")


def materialized(sections: dict[str, Any]) -> dict[str, Any]:
    """The sections with their elements and edges computed once (one job each) and their plans
    cut (``localCheckpoint``): the store's validation reads each section in a dozen joined and
    unioned checks, and re-deriving the associations from the annotated result in every one of
    them costs 3-5x the ingest itself (and gives every check its own ``monotonically_increasing_id``)."""
    return {k: v.localCheckpoint(eager=True) if k in CHECKPOINTED else v for k, v in sections.items()}
