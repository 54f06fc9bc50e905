"""Turn a validated bundle into rows of the store's tables (Ibis Section 7.1, on Parquet).

Per basic element the reflexive-transitive ancestor closure is materialized here, so that
`under` at query time is a join and never a recursion. A parent is always of a strictly coarser
granularity, so the closure of a new element is found in at most `height` rounds (the longest
chain of the gsets), each a set-at-a-time join; ancestors already in the store are reused from
the committed `ancestors` table instead of being recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store import progress
from store import schema as S
from store.ingest import IngestCounts
from store.model import Catalog
from store.spark.bundle import Bundle, from_dict, from_path
from store.spark.schema import SCHEMAS
from store.spark.validate import Resolved, validate


def chain_height(catalog: Catalog) -> int:
    """Number of granularities on the longest strict containment chain (>= 1)."""
    grans = list(catalog.all_kinds())
    memo: dict[str, int] = {}

    def up(g: str) -> int:
        if g not in memo:
            memo[g] = 1 + max((up(p) for p in grans if catalog.lt(g, p)), default=0)
        return memo[g]

    return max((up(g) for g in grans), default=1)


def ancestors(new: DataFrame, old_ancestors: DataFrame, catalog: Catalog) -> DataFrame:
    """Closure rows (id, ancestor, depth) for the new elements `new(id, parents)`."""
    parents = new.select(S.ID, F.explode("parents").alias(S.PARENT))
    rounds = [new.select(S.ID, F.col(S.ID).alias(S.ANCESTOR), F.lit(0).alias(S.DEPTH))]
    frontier = parents.select(S.ID, F.col(S.PARENT).alias(S.ANCESTOR), F.lit(1).alias(S.DEPTH))
    new_ids = new.select(F.col(S.ID).alias(S.ANCESTOR))
    old = old_ancestors.select(
        F.col(S.ID).alias("_via"), F.col(S.ANCESTOR).alias("_up"), F.col(S.DEPTH).alias("_d"))
    for _ in range(chain_height(catalog)):
        via_old = frontier.join(old, frontier[S.ANCESTOR] == old["_via"]).select(
            S.ID, F.col("_up").alias(S.ANCESTOR), (F.col(S.DEPTH) + F.col("_d")).alias(S.DEPTH))
        via_new = frontier.join(new_ids, S.ANCESTOR, "left_semi")
        rounds += [via_old, via_new]
        frontier = via_new.join(
            parents.select(F.col(S.ID).alias(S.ANCESTOR), F.col(S.PARENT).alias("_p")), S.ANCESTOR
        ).select(S.ID, F.col("_p").alias(S.ANCESTOR), (F.col(S.DEPTH) + 1).alias(S.DEPTH))
    union = reduce(DataFrame.unionByName, rounds)
    return union.groupBy(S.ID, S.ANCESTOR).agg(F.min(S.DEPTH).cast("int").alias(S.DEPTH))


def table_rows(bundle: Bundle, resolved: Resolved, old_ancestors: DataFrame) -> dict[str, DataFrame]:
    """The rows this bundle adds to each core table."""
    E, V, D = bundle.elements, bundle.vertices, bundle.edges
    ek = resolved.elements_kind
    elements = ek.select(S.ID, S.GRANULARITY, S.KIND)
    parents = E.select(S.ID, F.explode("parents").alias(S.PARENT))
    anc = ancestors(E.select(S.ID, "parents"), old_ancestors, resolved.catalog)
    attrs = F.col("attrs").cast(SCHEMAS[S.VERTICES][S.ATTRS].dataType)
    implicit_v = E.join(ek.select(S.ID, S.KIND), S.ID).select(
        S.ID, S.KIND, F.col(S.GRANULARITY).alias(S.TYPE), F.lit(1).alias(S.N_CE),
        F.lit(1).alias(S.CE_SIZE), attrs.alias(S.ATTRS), F.lit(True).alias(S.IMPLICIT))
    vt = V.join(resolved.vertex_types.select("idx", "tkey", "tkind", "ce_size"), "idx")
    explicit_v = vt.select(
        S.ID, F.col("tkind").alias(S.KIND), F.col("tkey").alias(S.TYPE),
        F.size("elements").alias(S.N_CE), F.col("ce_size").cast("int").alias(S.CE_SIZE),
        attrs.alias(S.ATTRS), F.lit(False).alias(S.IMPLICIT))
    implicit_c = E.select(F.col(S.ID).alias(S.VERTEX), F.lit(0).alias(S.CE), S.GRANULARITY,
                          F.col(S.ID).alias(S.ELEM))
    explicit_c = (V.select(F.col(S.ID).alias(S.VERTEX), F.posexplode("elements").alias(S.CE, "m"))
                  .select(S.VERTEX, S.CE, F.explode("m").alias(S.GRANULARITY, S.ELEM)))
    edges = D.select(S.SRC, S.DST, S.PROCESS)

    def cast(name: str, df: DataFrame) -> DataFrame:
        return df.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in SCHEMAS[name]])

    return {
        S.ELEMENTS: cast(S.ELEMENTS, elements),
        S.PARENTS: cast(S.PARENTS, parents),
        S.ANCESTORS: cast(S.ANCESTORS, anc),
        S.VERTICES: cast(S.VERTICES, implicit_v.unionByName(explicit_v)),
        S.COMPLEX: cast(S.COMPLEX, implicit_c.unionByName(explicit_c)),
        S.EDGES: cast(S.EDGES, edges),
    }


def ingest_planned(stx, item) -> IngestCounts:
    """Ingest one planned source (`store.ingest.Planned`) with Spark into transaction `stx`."""
    if item.triples:
        from store.spark.triples import ingest_triples  # deferred: triples imports this module

        return ingest_triples(stx, item.source)  # its bundle comes back through stx.ingest, counted there
    source = item.source if item.loaded is None else from_dict(stx.store.spark, item.loaded, str(item.source))
    return ingest_bundle(stx, source)


def ingest_bundle(stx, source) -> IngestCounts:
    """Validate a bundle (a Bundle, a dict or a path) against everything committed or staged in
    `stx` so far, then stage its rows."""
    spark = stx.store.spark
    bundle = source if isinstance(source, Bundle) else (
        from_dict(spark, source) if isinstance(source, Mapping) else from_path(spark, source))
    frames = [bundle.elements, bundle.vertices, bundle.edges]
    if bundle.sizes is None:  # read from files: parse once, not once per check and table
        frames = [f.persist() for f in frames]
    try:
        catalog = stx.catalog.merge_gsets(bundle.gsets).merge_types(bundle.types)
        resolved = validate(bundle, catalog, stx.table(S.ELEMENTS), stx.table(S.VERTICES))
        rows = table_rows(bundle, resolved, stx.table(S.ANCESTORS))
        counts = IngestCounts(*(bundle.sizes or [f.count() for f in frames]))
        files = 1 if max(counts.elements, counts.vertices, counts.edges) < 500_000 else None
        with progress.step(f"write {bundle.source}", total=len(S.CORE_TABLES)) as step:
            for name in S.CORE_TABLES:
                stx.append(name, rows[name], files=files)
                step.advance()
        stx.set_catalog(resolved.catalog)
    finally:
        if bundle.sizes is None:
            for f in frames:
                f.unpersist()
    return counts
