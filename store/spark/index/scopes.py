"""Influence scopes (store/index/scopes.py) computed and written with Spark."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store import schema as S
from store.index import layout as L
from store.index.params import CCEngine
from store.index.scopes import (
    REL,
    REL_ANCESTOR,
    REL_COMPLEX,
    REL_EDGE,
    ROWS_ROW_GROUP_BYTES,
    SCOPE,
    SCOPE_BUCKET,
    SCOPE_ROWS,
    source_segments,
    union_find,
)
from store.spark.frames import local_frame
from store.spark.index.components import checkpoint, connected_components
from store.spark.index.layout import bucket_of, write_index_table

# Links (root pairs) at most this many are joined on the driver (union-find); more go to the
# Spark connected-components job.
DRIVER_LINKS = 1_000_000


def _root_labels(spark, roots: DataFrame, links: DataFrame, engine: CCEngine) -> DataFrame:
    """DataFrame[root, scope] for every root that occurs in a link (others are their own scope)."""
    links = links.distinct()
    rows = links.limit(DRIVER_LINKS + 1).collect()
    if len(rows) <= DRIVER_LINKS:
        labels = union_find((r[0], r[1]) for r in rows)
        return local_frame(spark, sorted(labels.items()), "root string, scope string")
    cc = connected_components(roots.select(F.col("root").alias(S.ID)),
                              links.select(F.col("a").alias(S.SRC), F.col("b").alias(S.DST)), engine)
    return cc.select(F.col(S.ID).alias("root"), F.col("component").alias(SCOPE))


def compute_scopes(st, buckets: int, engine: CCEngine = CCEngine.AUTO) -> tuple[DataFrame, DataFrame]:
    """(index_scope_nodes, index_scope_rows) of a store, as checkpointed DataFrames."""
    anc = st.table(S.ANCESTORS).select(S.ID, S.ANCESTOR, S.DEPTH)
    cx = st.table(S.COMPLEX).select(S.VERTEX, S.CE, S.ELEM)
    vx = st.table(S.VERTICES).select(S.ID, S.KIND)
    edges = st.table(S.EDGES).select(S.SRC, S.PROCESS, S.DST)
    spark = anc.sparkSession

    roots = anc.groupBy(S.ID).agg(F.max(S.DEPTH).alias("_d")).filter(F.col("_d") == 0) \
        .select(F.col(S.ID).alias("root"))
    # Materialized once each: every later step reads them (a 1M-vertex store recomputed them
    # three times over without).
    elem_root = checkpoint(anc.join(roots.withColumnRenamed("root", S.ANCESTOR), S.ANCESTOR, "left_semi")
                           .select(S.ID, F.col(S.ANCESTOR).alias("root")))
    vert_root = checkpoint(cx.join(elem_root.withColumnRenamed(S.ID, S.ELEM), S.ELEM)
                           .select(S.VERTEX, "root").distinct())

    def spread(df: DataFrame, key: str) -> DataFrame:  # (smallest root, other root) per key
        m = df.groupBy(key).agg(F.min("root").alias("a"))
        return df.join(m, key).filter(F.col("a") != F.col("root")).select("a", F.col("root").alias("b"))

    vmin = vert_root.groupBy(S.VERTEX).agg(F.min("root").alias("root"))
    across = (edges.join(vmin.select(F.col(S.VERTEX).alias(S.SRC), F.col("root").alias("a")), S.SRC)
              .join(vmin.select(F.col(S.VERTEX).alias(S.DST), F.col("root").alias("b")), S.DST)
              .filter(F.col("a") != F.col("b")).select("a", "b"))
    links = spread(elem_root, S.ID).unionByName(spread(vert_root, S.VERTEX)).unionByName(across)
    labels = _root_labels(spark, roots, links, engine)

    def scoped(df: DataFrame, root_col: str = "root") -> DataFrame:
        lab = labels.withColumnRenamed("root", root_col)
        joined = df.join(lab, root_col, "left")
        return joined.withColumn(SCOPE, F.coalesce(F.col(SCOPE), F.col(root_col))).drop(root_col)

    v_scope = checkpoint(scoped(vmin).select(S.VERTEX, SCOPE))
    e_scope = scoped(elem_root.groupBy(S.ID).agg(F.min("root").alias("root")))
    null = F.lit(None).cast("string")
    rows = (
        cx.join(v_scope, S.VERTEX).join(vx.withColumnRenamed(S.ID, S.VERTEX), S.VERTEX)
        .select(SCOPE, F.lit(REL_COMPLEX).alias(REL), F.col(S.VERTEX).alias("a"), F.col(S.CE).cast("string").alias("b"),
                F.col(S.ELEM).alias("c"), F.col(S.KIND).alias("d"))
        .unionByName(anc.join(e_scope, S.ID).select(
            SCOPE, F.lit(REL_ANCESTOR).alias(REL), F.col(S.ID).alias("a"), F.col(S.ANCESTOR).alias("b"),
            null.alias("c"), null.alias("d")))
        .unionByName(edges.join(v_scope.withColumnRenamed(S.VERTEX, S.SRC), S.SRC).select(
            SCOPE, F.lit(REL_EDGE).alias(REL), F.col(S.SRC).alias("a"), F.col(S.DST).alias("b"),
            F.col(S.PROCESS).alias("c"), null.alias("d")))
    )
    rows = checkpoint(rows)
    sizes = rows.groupBy(SCOPE).agg(F.count(F.lit(1)).alias(SCOPE_ROWS))
    nodes = v_scope.join(sizes, SCOPE).select(F.col(S.VERTEX).alias(S.ID), SCOPE, SCOPE_ROWS,
                                              bucket_of(F.col(SCOPE), buckets).alias(SCOPE_BUCKET))
    return nodes, rows


def write_scopes(tx, st, nodes: DataFrame, rows: DataFrame, buckets: int) -> dict:
    """Write both scope tables inside `tx`; returns the meta entries recording their sources."""
    write_index_table(tx, L.SCOPE_NODES, nodes, buckets)
    write_index_table(tx, L.SCOPE_ROWS_TABLE, rows, buckets, ROWS_ROW_GROUP_BYTES)
    return {"scope_segments": source_segments(st)}
