"""Weakly connected components of a directed graph given as DataFrames (CCProv's index, Alg. 1).

Two interchangeable engines, chosen with `CCEngine`:

- `GRAPHFRAMES`: GraphFrames' `connectedComponents` (needs the JVM package on the classpath).
- `STARS`: the large-star / small-star algorithm of Kiveris et al. ("Connected Components in
  MapReduce and Beyond", SoCC 2014) on DataFrames: O(log n) rounds of joins and aggregations,
  the edge set checkpointed every round so plans stay short, never collected to the driver.

Both return the same labelling: every vertex gets the smallest vertex id of its component, so
a component id is a member id (deterministic, and stable under incremental merges: merging
components keeps the smallest id).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store.errors import UserError
from store.index.params import CCEngine
from store.schema import DST, ID, SRC
from store.spark.session import graphframes_available

COMPONENT = "component"
_U, _V = "u", "v"
MAX_ROUNDS = 200


def resolve_engine(spark, engine: CCEngine) -> CCEngine:
    """AUTO becomes GRAPHFRAMES when its JVM package is present, else STARS."""
    if engine is CCEngine.AUTO:
        return CCEngine.GRAPHFRAMES if graphframes_available(spark) else CCEngine.STARS
    if engine is CCEngine.GRAPHFRAMES and not graphframes_available(spark):
        raise UserError(
            "the GraphFrames engine was asked for, but its JVM package is not on the classpath",
            hint="start Spark with --conf spark.jars.packages=io.graphframes:graphframes-spark4_2.13:<version>, "
            "or use --engine stars",
        )
    return engine


def connected_components(
    vertices: DataFrame, edges: DataFrame, engine: CCEngine = CCEngine.AUTO
) -> DataFrame:
    """Label each vertex with its weakly connected component.

    `vertices` has a column `id`; `edges` has `src`, `dst` (direction is ignored; edges whose
    ends are not in `vertices` are ignored). Returns DataFrame[id, component] with one row per
    vertex, `component` = the smallest id in the vertex's component.
    """
    engine = resolve_engine(vertices.sparkSession, engine)
    ids = vertices.select(ID).distinct()
    edges = (
        edges.select(SRC, DST)
        .join(ids.withColumnRenamed(ID, SRC), SRC, "left_semi")
        .join(ids.withColumnRenamed(ID, DST), DST, "left_semi")
    )
    if engine is CCEngine.GRAPHFRAMES:
        return _graphframes(ids, edges)
    return _stars(ids, edges)


def _graphframes(ids: DataFrame, edges: DataFrame) -> DataFrame:
    from graphframes import GraphFrame  # deferred: only this path needs graphframes

    _ensure_checkpoint_dir(ids.sparkSession)
    cc = GraphFrame(ids, edges).connectedComponents()
    label = cc.groupBy(COMPONENT).agg(F.min(ID).alias("label"))
    return cc.join(label, COMPONENT).select(ID, F.col("label").alias(COMPONENT))


def _ensure_checkpoint_dir(spark) -> None:
    sc = spark.sparkContext
    if sc.getCheckpointDir() is None:
        import tempfile  # deferred: tempfile imports shutil (15 ms), for GraphFrames only

        sc.setCheckpointDir(tempfile.mkdtemp(prefix="strata-checkpoints-"))


def checkpoint(df: DataFrame) -> DataFrame:
    """Materialise and cut the plan, so iterative plans stay short.

    A local checkpoint (executor storage) rather than a reliable one: it is written once, where
    a reliable checkpoint of an unpersisted DataFrame computes it twice; the index build is
    re-runnable from the committed store, so losing an executor only costs a re-run.
    """
    return df.localCheckpoint(eager=True)


def _undirected(edges: DataFrame) -> DataFrame:
    """Edges (u, v) with u > v, deduplicated, self-loops dropped."""
    return (
        edges.select(
            F.greatest(SRC, DST).alias(_U),
            F.least(SRC, DST).alias(_V),
        )
        .where(F.col(_U) != F.col(_V))
        .distinct()
    )


def _large_star(e: DataFrame) -> DataFrame:
    """For every node u: connect each larger neighbour v > u to m(u) = min(Γ(u) ∪ {u})."""
    both = e.select(F.col(_U).alias("a"), F.col(_V).alias("b")).unionByName(
        e.select(F.col(_V).alias("a"), F.col(_U).alias("b"))
    )
    m = both.groupBy("a").agg(F.least(F.min("b"), F.first("a")).alias("m"))
    return (
        both.where(F.col("b") > F.col("a"))
        .join(m, "a")
        .select(F.col("b").alias(_U), F.col("m").alias(_V))
        .where(F.col(_U) != F.col(_V))
        .distinct()
    )


def _small_star(e: DataFrame) -> DataFrame:
    """For every node u: connect u and each smaller neighbour v to m = min(smaller Γ(u) ∪ {u})."""
    m = e.groupBy(_U).agg(F.min(_V).alias("m"))
    linked = e.join(m, _U).select(F.col(_V).alias(_U), F.col("m").alias(_V))
    own = m.select(F.col(_U), F.col("m").alias(_V))
    return linked.unionByName(own).where(F.col(_U) != F.col(_V)).distinct()


def _converged(e: DataFrame) -> bool:
    """A forest of stars: every child has one parent and no parent is itself a child."""
    two_parents = (
        e.groupBy(_U).agg(F.countDistinct(_V).alias("n")).where(F.col("n") > 1).select(_U)
    )
    parent_is_child = e.select(F.col(_V).alias(_U)).join(e.select(_U), _U, "left_semi")
    return two_parents.unionByName(parent_is_child).limit(1).count() == 0


def _stars(ids: DataFrame, edges: DataFrame) -> DataFrame:
    """Large-star / small-star rounds until the edge set is a forest of stars (child -> root)."""
    e = checkpoint(_undirected(edges))
    for _ in range(MAX_ROUNDS):
        e = checkpoint(_small_star(_large_star(e)))
        if _converged(e):
            break
    else:  # pragma: no cover - log n rounds suffice; this guards against a logic error only
        raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds")
    star = e.select(F.col(_U).alias(ID), F.col(_V).alias(COMPONENT))
    return ids.join(star, ID, "left").select(ID, F.coalesce(COMPONENT, ID).alias(COMPONENT))
