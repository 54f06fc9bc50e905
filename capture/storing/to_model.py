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
``driver_bundle`` builds the same bundle as plain records from associations already on the
driver (a small run on a local store, ingested without Spark). This is the only module that
knows the store's section DataFrame layout (store/bundle.py SECTION_SCHEMAS).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from capture.id_columns import item_element_column
from capture.ids import dataset_element_id, item_hex, operator_id
from capture.operators import OperatorProv, OpType
from capture.storing.associations import IN_ID, INPUT, OID, OUT_ID
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


def driver_bundle(run: str, pipeline: str, ops: list[OperatorProv], assoc: Iterable[tuple],
                  existing: Callable[[Iterable[str]], set[str]], run_attrs: dict[str, Any],
                  output: dict[str, Any]) -> dict[str, Any]:
    """:func:`sections` on the driver, for a run small enough to hold its associations in memory
    (``assoc``: ``(oid, out_id, input, in_id, pos)`` tuples, capture/storing/materialize.py
    ``assoc_rows``): the same bundle as plain records, each edge once, every element
    ``existing`` reports (ids already in the store) left out."""
    by_oid = {o.oid: o for o in ops}
    out_ds = {o.oid: dataset_id(run, o) for o in ops}
    in_ds = {(o.oid, i): dataset_id(run, by_oid[inp.pred]) for o in ops for i, inp in enumerate(o.inputs)}
    items: dict[str, str] = {}
    edges: dict[tuple[str, str, str], None] = {}
    for oid, out_id, k, in_id, _pos in assoc:
        src = f"{in_ds[(oid, k)]}#{item_hex(in_id)}"
        dst = f"{out_ds[oid]}#{item_hex(out_id)}"
        items.setdefault(dst, out_ds[oid])
        items.setdefault(src, in_ds[(oid, k)])
        edges[(src, operator_id(run, oid), dst)] = None
    elements = small_elements(run, pipeline, ops, run_attrs, output)
    elements += [{"id": i, "granularity": ITEM, "parents": [ds]} for i, ds in items.items()]
    known = existing([e["id"] for e in elements])
    return {
        "format": "strata-bundle/1",
        "gsets": GSETS,
        "types": [],
        "elements": [e for e in elements if e["id"] not in known],
        "vertices": [],
        "edges": [{"src": a, "process": b, "dst": c} for a, b, c in edges],
    }


CHECKPOINTED = ("elements", "edges")


def materialized(sections: dict[str, Any]) -> dict[str, Any]:
    """The sections with their elements and edges computed once (one job each) and their plans
    cut (``localCheckpoint``): the store's validation reads each section in a dozen joined and
    unioned checks, and re-deriving the associations from the annotated result in every one of
    them costs 3-5x the ingest itself (and gives every check its own ``monotonically_increasing_id``)."""
    return {k: v.localCheckpoint(eager=True) if k in CHECKPOINTED else v for k, v in sections.items()}
