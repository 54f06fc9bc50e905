"""Incremental maintenance of the component index when new derivation edges arrive.

New triples can only merge components, never split them. So:

1. Components: connected components of the small graph made of the new triples plus one edge
   (value, its old ccid) per old value they touch. Each label is the smallest id of a merged
   component (an old ccid is the smallest id of its component), so ids equal a full rebuild's.
2. Sets: recomputed (Algorithm 3) only inside the affected components — new or merged ones.
   If the workflow dependency graph gained an edge or a table, the split plan may change, so
   every split component is affected too.
3. Everything else is kept as it is; the index tables are committed in one transaction.

That is the Spark path; it writes every table again. In this process (store/indexing.py
chooses) the merge is store/duckdb/index_update.py, which writes only the files holding changed
rows. `update_index` equals a full build on the same edges on both paths.
"""

from __future__ import annotations

import time

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store.index import layout as L
from store.index.params import IndexParams
from store.index.splits import plan_splits, split_rows
from store.schema import DST, ID, SRC
from store.spark.index.build import (
    IndexFrames,
    finish_frames,
    node_tables,
    source_triples,
    workflow_graph,
    write_index,
)
from store.spark.index.components import COMPONENT, checkpoint, connected_components
from store.spark.index.sets import partition_sets


def merge_frames(old_nodes: DataFrame, old_triples: DataFrame, old_sets: DataFrame,
                 new_triples: DataFrame, new_tables: DataFrame | None, params: IndexParams,
                 old_workflow: tuple) -> tuple[IndexFrames, int]:
    """The index after adding `new_triples` (DataFrame[src, dst, op]) to an existing index.

    old_nodes: DataFrame[id, table, ccid, csid]; old_triples: DataFrame[src, dst, op, ...];
    old_sets: DataFrame[csid, level, split]; old_workflow: the old (src_table, dst_table) pairs.
    Returns the new IndexFrames and how many components were affected (merged, new, re-split).
    """

    new = checkpoint(new_triples.select(SRC, DST, L.OP).distinct()
                      .join(old_triples.select(SRC, DST, L.OP), [SRC, DST, L.OP], "left_anti"))
    touched_ids = new.select(F.col(SRC).alias(ID)).union(new.select(F.col(DST).alias(ID))).distinct()
    old_touched = old_nodes.join(touched_ids, ID, "left_semi").select(ID, L.CCID)
    # 1. components of (new triples + value -> old ccid links)
    links = old_touched.select(F.col(ID).alias(SRC), F.col(L.CCID).alias(DST))
    verts = touched_ids.union(old_touched.select(F.col(L.CCID).alias(ID))).distinct()
    cc = checkpoint(connected_components(verts, new.select(SRC, DST).unionByName(links)))
    remap = cc.join(old_nodes.select(F.col(L.CCID).alias(ID)).distinct(), ID, "left_semi") \
        .select(F.col(ID).alias(L.CCID), F.col(COMPONENT).alias("new_ccid"))
    affected = cc.select(F.col(COMPONENT).alias(L.CCID)).distinct()
    # all nodes with their (possibly merged) component
    new_nodes = node_tables(new, new_tables).join(old_nodes.select(ID), ID, "left_anti")
    nodes = (
        old_nodes.select(ID, L.TABLE, L.CCID)
        .unionByName(new_nodes.join(cc, ID).select(ID, L.TABLE, F.col(COMPONENT).alias(L.CCID)))
        .join(remap, L.CCID, "left")
        .select(ID, L.TABLE, F.coalesce("new_ccid", L.CCID).alias(L.CCID))
    )
    nodes = checkpoint(nodes)
    triples = checkpoint(old_triples.select(SRC, DST, L.OP).unionByName(new))
    tables, wf = workflow_graph(triples, nodes)
    splits = plan_splits(tables, wf, bands=params.bands, user=params.splits)
    if tuple(tuple(p) for p in old_workflow) != tuple(wf):
        # the split plan may differ: every component that was split must be recomputed
        was_split = old_nodes.where(F.col(L.CCID) != F.col(L.CSID)).select(L.CCID).distinct()
        was_split = was_split.join(remap, L.CCID, "left").select(
            F.coalesce("new_ccid", L.CCID).alias(L.CCID))
        affected = affected.unionByName(was_split).distinct()
    affected = checkpoint(affected)
    # 2. sets: recompute inside affected components, keep the others
    hit = nodes.join(affected, L.CCID, "left_semi")
    hit_ids = hit.select(ID)
    hit_triples = triples.join(hit_ids.withColumnRenamed(ID, DST), DST, "left_semi")
    fresh = partition_sets(hit, hit_triples, split_rows(splits), params.theta, params.engine)
    kept = (
        old_nodes.join(hit_ids, ID, "left_anti")
        .select(ID, L.CSID, F.lit(None).cast("int").alias(L.LEVEL), F.lit(None).cast("string").alias(L.SPLIT))
    )
    assigned = fresh.unionByName(kept)
    old_levels = old_sets.select(L.CSID, F.col(L.LEVEL).alias("l0"), F.col(L.SPLIT).alias("s0"))
    nodes = checkpoint(
        nodes.join(assigned, ID).join(old_levels, L.CSID, "left").select(
            ID, L.TABLE, L.CCID, L.CSID,
            F.coalesce(L.LEVEL, "l0").alias(L.LEVEL), F.coalesce(L.SPLIT, "s0").alias(L.SPLIT))
    )
    n_affected = affected.count()
    return finish_frames(nodes, triples, splits, tuple(wf), {}), n_affected


def update_index(st, params: IndexParams, meta: dict, extra_meta: dict | None = None) -> dict:
    """Merge the edges committed since the index `meta` describes into it, on Spark."""
    t0 = time.perf_counter()
    triples, tables = source_triples(st)
    old_nodes = st.table(L.NODES).drop(L.BUCKET)
    old_triples = st.table(L.TRIPLES).drop(L.BUCKET)
    frames, n_affected = merge_frames(
        old_nodes, old_triples, st.table(L.SETS), triples, tables, params,
        tuple(map(tuple, meta.get("workflow", []))))
    return write_index(st, frames, params, "index: incremental update",
                       {"mode": "incremental", "builder": "spark", **(extra_meta or {}),
                        "affected_components": int(n_affected),
                        "build_s": round(time.perf_counter() - t0, 3)})
