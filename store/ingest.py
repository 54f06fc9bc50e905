"""Turn a validated bundle into rows of the store's tables (Ibis Section 7.1, on Parquet).

Per basic element the reflexive-transitive ancestor closure is materialized here, so that
`under` at query time is a join and never a recursion. A parent is always of a strictly coarser
granularity, so the closure of a new element is found in at most `height` rounds (the longest
chain of the gsets), each a set-at-a-time join; ancestors already in the store are reused from
the committed `ancestors` table instead of being recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store import schema as S
from store.bundle import Bundle
from store.model import Catalog
from store.validate import Resolved


@dataclass(frozen=True)
class IngestCounts:
    elements: int
    vertices: int
    edges: int


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
    attrs = F.col("attrs").cast(S.SCHEMAS[S.VERTICES][S.ATTRS].dataType)
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
        return df.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in S.SCHEMAS[name]])

    return {
        S.ELEMENTS: cast(S.ELEMENTS, elements),
        S.PARENTS: cast(S.PARENTS, parents),
        S.ANCESTORS: cast(S.ANCESTORS, anc),
        S.VERTICES: cast(S.VERTICES, implicit_v.unionByName(explicit_v)),
        S.COMPLEX: cast(S.COMPLEX, implicit_c.unionByName(explicit_c)),
        S.EDGES: cast(S.EDGES, edges),
    }
