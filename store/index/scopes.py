"""Influence scopes: the part of the component index that IQL's bound predicates read.

The CSProv components (components.py) are over derivation edges only, but `under`, and so
`influences`, also walk containment. A **scope** is a weakly connected component of the graph
whose nodes are the *root* elements (elements with no parent) and whose links are

- an element under two roots (a cell under a row and a column of different tables),
- a vertex whose complex elements lie under two roots,
- a derivation edge `(src, p, dst)`: the roots of `src` with the roots of `dst`.

Every vertex, element, containment row and edge belongs to exactly one scope (its roots').
`under` relates vertices whose basic elements share roots, and an edge links the roots of its
ends, so `under`, `influences(k)` and `influences(*)` never leave the scope of their bound side
(in either direction). A bound query therefore reads only the rows of the scopes its bound
vertices are in (store/scopegraph.py evaluates it there, on the driver).

Tables (written with the rest of the index, same bucketed layout, layout.py):

| table | columns | bucket key, sort |
|---|---|---|
| index_scope_nodes | id, scope, scope_rows, scope_bucket | id; sorted by id (vertex -> its scope) |
| index_scope_rows | scope, rel, a, b, c, d | scope; sorted by scope, rel |

`rel` says what a row of `index_scope_rows` is: `c` complex (a=vertex, b=ce, c=elem, d=kind),
`a` ancestors (a=id, b=ancestor), `e` edge (a=src, b=dst, c=process).

The manifest's `meta.index.scope_segments` records the segments of the four source tables the
scopes were computed from; scopes are used only while those are still the committed ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store import schema as S
from store.index import layout as L
from store.index.components import CCEngine, checkpoint, connected_components
from store.index.local import read_buckets

SCOPE, SCOPE_ROWS, SCOPE_BUCKET, REL = "scope", "scope_rows", "scope_bucket", "rel"
REL_COMPLEX, REL_ANCESTOR, REL_EDGE = "c", "a", "e"
SOURCE_TABLES = (S.VERTICES, S.COMPLEX, S.ANCESTORS, S.EDGES)

# Row groups of index_scope_rows: small, so a point read decodes little more than its scope.
ROWS_ROW_GROUP_BYTES = 128 * 1024

# Links (root pairs) at most this many are joined on the driver (union-find); more go to the
# Spark connected-components job.
DRIVER_LINKS = 1_000_000


def source_segments(st) -> dict[str, list[str]]:
    """The committed segments of the tables scopes are computed from."""
    out = {}
    for name in SOURCE_TABLES:
        entry = st.manifest.tables.get(name)
        out[name] = list(entry.segments) if entry is not None else []
    return out


def current(st) -> bool:
    """True when the store has scopes computed from exactly its committed source tables."""
    meta = st.meta(L.META_KEY) or {}
    return bool(meta.get("scope_segments")) and meta["scope_segments"] == source_segments(st) \
        and L.SCOPE_NODES in st.manifest.tables and L.SCOPE_ROWS_TABLE in st.manifest.tables


def _union_find(links: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Root id -> the smallest root id of its linked group (only roots that occur in links)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = (ra, rb) if ra < rb else (rb, ra)
            parent[hi] = lo  # the smaller id stays the representative: labels are minima
    return {x: find(x) for x in parent}


def _root_labels(spark, roots: DataFrame, links: DataFrame, engine: CCEngine) -> DataFrame:
    """DataFrame[root, scope] for every root that occurs in a link (others are their own scope)."""
    links = links.distinct()
    rows = links.limit(DRIVER_LINKS + 1).collect()
    if len(rows) <= DRIVER_LINKS:
        labels = _union_find((r[0], r[1]) for r in rows)
        return spark.createDataFrame(sorted(labels.items()), "root string, scope string")
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
                                              L.bucket_of(F.col(SCOPE), buckets).alias(SCOPE_BUCKET))
    return nodes, rows


def write_scopes(tx, st, nodes: DataFrame, rows: DataFrame, buckets: int) -> dict:
    """Write both scope tables inside `tx`; returns the meta entries recording their sources."""
    L.write_index_table(tx, L.SCOPE_NODES, nodes, buckets)
    L.write_index_table(tx, L.SCOPE_ROWS_TABLE, rows, buckets, ROWS_ROW_GROUP_BYTES)
    return {"scope_segments": source_segments(st)}


class ScopeFiles:
    """Driver-side reads of the scope tables with DuckDB (local stores only)."""

    def __init__(self, nodes: str, rows: str, buckets: int) -> None:
        self.nodes, self.rows, self.buckets = nodes, rows, buckets

    @classmethod
    def of(cls, st) -> ScopeFiles | None:
        """The scope tables of a local store whose scopes are current, else None."""
        if not current(st):
            return None
        paths = []
        for name in (L.SCOPE_NODES, L.SCOPE_ROWS_TABLE):
            segs = st.manifest.tables[name].segments
            path = st.storage.local_path(segs[0]) if len(segs) == 1 else None
            if path is None:
                return None
            paths.append(path)
        return cls(*paths, int(st.meta(L.META_KEY)["buckets"]))

    def scopes_of(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Scope -> (rows in it, its bucket), for the scopes of the ids the index knows."""
        t = read_buckets(self.nodes, (L.bucket_of_value(i, self.buckets) for i in ids),
                         (SCOPE, SCOPE_ROWS, SCOPE_BUCKET), [(S.ID, list(ids))])
        if t is None:
            return {}
        return {s: (n, b) for s, n, b in zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True)}

    def rows_of(self, scopes: dict[str, tuple[int, int]]) -> list[tuple]:
        """(rel, a, b, c, d) rows of the given scopes (`scopes_of`'s answer): only their buckets'
        files are opened, and only row groups whose statistics admit the scopes are decoded."""
        t = read_buckets(self.rows, (b for _, b in scopes.values()), (REL, "a", "b", "c", "d"),
                         [(SCOPE, sorted(scopes))])
        if t is None:
            return []
        return list(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))
