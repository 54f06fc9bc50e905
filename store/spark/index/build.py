"""Full build of the component index: components, splits, sets, set dependencies (Alg. 1 + 3).

`compute_index` is the DataFrame pipeline (no store); `build_index` reads a store's derivation
edges, runs it and commits the index tables and the parameters in one transaction. The DuckDB
engine builds the same tables in this process (store/duckdb/index.py); store/indexing.py
chooses which.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store.errors import UserError
from store.index import layout as L
from store.index.params import DEFAULT_BUCKETS, CCEngine, IndexParams
from store.index.splits import UNKNOWN_TABLE, Split, plan_meta, plan_splits, split_rows
from store.schema import ANCESTOR, ANCESTORS, DEPTH, DST, EDGES, ID, PROCESS, SRC
from store.spark.index.components import COMPONENT, checkpoint, connected_components
from store.spark.index.layout import write_index_table
from store.spark.index.scopes import compute_scopes, write_scopes
from store.spark.index.sets import partition_sets, set_dependencies


@dataclass(frozen=True)
class IndexFrames:
    """The computed index as DataFrames (checkpointed), plus the split plan that made it."""

    nodes: DataFrame  # id, table, ccid, csid
    triples: DataFrame  # src, dst, op, ccid, src_csid, dst_csid
    setdeps: DataFrame  # ccid, src_csid, dst_csid
    sets: DataFrame  # csid, ccid, level, split, n_nodes, n_triples
    components: DataFrame  # ccid, n_nodes, n_triples, n_sets
    splits: tuple[Split, ...]
    workflow: tuple[tuple[str, str], ...]
    stats: dict = field(default_factory=dict)


def source_triples(st) -> tuple[DataFrame, DataFrame]:
    """A store's derivation triples (src, dst, op) and each vertex's table (its root container)."""
    edges = st.table(EDGES).select(SRC, DST, F.col(PROCESS).alias(L.OP)).distinct()
    anc = st.table(ANCESTORS)
    # A value's table: its ancestor at the largest depth; between ancestors at the same depth
    # (an element under two roots) the largest id, so every build picks the same one.
    top = anc.groupBy(ID).agg(F.max_by(ANCESTOR, F.struct(DEPTH, ANCESTOR)).alias(L.TABLE))
    return edges, top


def node_tables(triples: DataFrame, tables: DataFrame | None) -> DataFrame:
    """Every value of the triples with its table ('' when unknown): DataFrame[id, table]."""
    ids = triples.select(F.col(SRC).alias(ID)).union(triples.select(F.col(DST).alias(ID))).distinct()
    if tables is None:
        return ids.withColumn(L.TABLE, F.lit(UNKNOWN_TABLE))
    t = tables.select(ID, L.TABLE).groupBy(ID).agg(F.min(L.TABLE).alias(L.TABLE))
    return ids.join(t, ID, "left").select(ID, F.coalesce(L.TABLE, F.lit(UNKNOWN_TABLE)).alias(L.TABLE))


def workflow_graph(triples: DataFrame, nodes: DataFrame) -> tuple[list[str], list[tuple[str, str]]]:
    """Tables and the distinct (src_table, dst_table) pairs (small: collected to the driver)."""
    t = nodes.select(ID, L.TABLE)
    pairs = (
        triples.join(t.withColumnRenamed(ID, SRC).withColumnRenamed(L.TABLE, "st"), SRC)
        .join(t.withColumnRenamed(ID, DST).withColumnRenamed(L.TABLE, "dt"), DST)
        .select("st", "dt").distinct().collect()
    )
    tables = sorted(r[0] for r in nodes.select(L.TABLE).distinct().collect())
    return tables, sorted((r[0], r[1]) for r in pairs)


def plan_for(nodes: DataFrame, triples: DataFrame, params: IndexParams):
    tables, wf = workflow_graph(triples, nodes)
    return plan_splits(tables, wf, bands=params.bands, user=params.splits), tuple(wf)


def label_triples(triples: DataFrame, nodes: DataFrame) -> DataFrame:
    """Attach ccid and the sets of both ends to each triple."""
    n = nodes.select(ID, L.CCID, L.CSID)
    return (
        triples.join(n.select(F.col(ID).alias(SRC), F.col(L.CSID).alias(L.SRC_CSID)), SRC)
        .join(n.select(F.col(ID).alias(DST), L.CCID, F.col(L.CSID).alias(L.DST_CSID)), DST)
        .select(SRC, DST, L.OP, L.CCID, L.SRC_CSID, L.DST_CSID)
    )


def summaries(nodes: DataFrame, triples: DataFrame, set_levels: DataFrame):
    """index_sets and index_components from labelled nodes and triples."""
    per_set = nodes.groupBy(L.CSID, L.CCID).agg(F.count(F.lit(1)).alias(L.N_NODES))
    t_set = triples.groupBy(F.col(L.DST_CSID).alias(L.CSID)).agg(F.count(F.lit(1)).alias(L.N_TRIPLES))
    sets = (
        per_set.join(set_levels, L.CSID, "left").join(t_set, L.CSID, "left")
        .select(L.CSID, L.CCID, F.coalesce(L.LEVEL, F.lit(0)).alias(L.LEVEL),
                F.coalesce(L.SPLIT, F.lit("")).alias(L.SPLIT), L.N_NODES,
                F.coalesce(L.N_TRIPLES, F.lit(0)).cast("long").alias(L.N_TRIPLES))
    )
    comps = sets.groupBy(L.CCID).agg(
        F.sum(L.N_NODES).cast("long").alias(L.N_NODES),
        F.sum(L.N_TRIPLES).cast("long").alias(L.N_TRIPLES),
        F.count(F.lit(1)).alias(L.N_SETS),
    )
    return sets, comps


def compute_index(triples: DataFrame, tables: DataFrame | None, params: IndexParams) -> IndexFrames:
    """The whole index from triples[src, dst, op] and optional tables[id, table]."""
    t0 = time.perf_counter()
    triples = checkpoint(triples.select(SRC, DST, L.OP).distinct())
    nodes = node_tables(triples, tables)
    cc = connected_components(nodes.select(ID), triples, params.engine)
    nodes = checkpoint(nodes.join(cc, ID).withColumnRenamed(COMPONENT, L.CCID))
    t1 = time.perf_counter()
    splits, wf = plan_for(nodes, triples, params)
    assigned = partition_sets(nodes, triples, split_rows(splits), params.theta, params.engine)
    nodes = checkpoint(nodes.join(assigned, ID).select(ID, L.TABLE, L.CCID, L.CSID, L.LEVEL, L.SPLIT))
    return finish_frames(nodes, triples, splits, wf, {"components_s": t1 - t0, "sets_s": time.perf_counter() - t1})


def finish_frames(nodes, triples, splits, wf, stats) -> IndexFrames:
    set_levels = nodes.select(L.CSID, L.LEVEL, L.SPLIT).dropDuplicates([L.CSID])
    nodes = nodes.select(ID, L.TABLE, L.CCID, L.CSID)
    labelled = checkpoint(label_triples(triples, nodes))
    setdeps = set_dependencies(labelled)
    sets, comps = summaries(nodes, labelled, set_levels)
    return IndexFrames(nodes, labelled, setdeps, sets, comps, splits, wf, stats)


def write_index(st, frames: IndexFrames, params: IndexParams, message: str, extra_meta=None) -> dict:
    """Commit the index tables and their parameters atomically; returns the meta recorded."""
    counts = frames.components.agg(
        F.count(F.lit(1)), F.sum(L.N_NODES), F.sum(L.N_TRIPLES), F.sum(L.N_SETS),
        F.sum(F.when(F.col(L.N_SETS) > 1, 1).otherwise(0)),
    ).first()
    n_deps = frames.setdeps.count()
    meta = {
        "theta": params.theta, "bands": params.bands, "buckets": params.buckets,
        "user_splits": [list(s) for s in params.splits] if params.splits else None,
        "engine": params.engine.value,
        **plan_meta(frames.splits, frames.workflow),
        "components": int(counts[0] or 0), "nodes": int(counts[1] or 0),
        "triples": int(counts[2] or 0), "sets": int(counts[3] or 0),
        "split_components": int(counts[4] or 0), "set_dependencies": int(n_deps),
        "edges_segments": list(L.edge_segments(st)),
        **(extra_meta or {}),
        **{k: round(v, 3) for k, v in frames.stats.items()},
    }
    t0 = time.perf_counter()
    scope_nodes, scope_rows = compute_scopes(st, params.buckets, params.engine)
    with st.transaction(message) as tx:
        for name, df in ((L.NODES, frames.nodes), (L.TRIPLES, frames.triples),
                         (L.SETDEPS, frames.setdeps), (L.SETS, frames.sets),
                         (L.COMPONENTS, frames.components)):
            write_index_table(tx, name, df, params.buckets)
        meta.update(write_scopes(tx, st, scope_nodes, scope_rows, params.buckets))
        meta["scopes_s"] = round(time.perf_counter() - t0, 3)
        tx.set_meta(L.META_KEY, meta)
    return meta


def refresh_scopes(st, meta: dict) -> dict:
    """Recompute only the influence scopes on Spark (the derivation edges did not change)."""
    t0 = time.perf_counter()
    buckets = int(meta.get("buckets", DEFAULT_BUCKETS))
    nodes, rows = compute_scopes(st, buckets, CCEngine(meta.get("engine", CCEngine.AUTO.value)))
    with st.transaction("index: refresh scopes") as tx:
        meta = {**meta, **write_scopes(tx, st, nodes, rows, buckets), "mode": "scopes", "builder": "spark",
                "scopes_s": round(time.perf_counter() - t0, 3)}
        tx.set_meta(L.META_KEY, meta)
    return meta


def build_index(st, params: IndexParams, extra_meta: dict | None = None) -> dict:
    """Build the index from scratch on Spark over every derivation edge of the store."""
    t0 = time.perf_counter()
    triples, tables = source_triples(st)
    if triples.limit(1).count() == 0:
        raise UserError(f"nothing to index: store {st.root} has no derivation edges yet",
                        hint="ingest a bundle or a triples file first (strata ingest FILE)")
    frames = compute_index(triples, tables, params)
    return write_index(st, frames, params, "index: full build",
                       {"mode": "full", "builder": "spark", **(extra_meta or {}),
                        "build_s": round(time.perf_counter() - t0, 3)})
