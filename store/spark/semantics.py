"""The Ibis inference predicates as set-at-a-time Spark operations (Ibis Section 5; docs/model.md).

Each function relates two sides; a side is either unbound (`None`) or a DataFrame with a column
`id` restricting it. Joins start from the bound side, so work grows with what the bound side
reaches, not with the store. Nothing here loops over vertices on the driver: the only driver
loop is the expansion round of `influences`, which handles a whole frontier per round
(semi-naive evaluation).

    under(st, lower, upper)         -> DataFrame[lower, upper]    V1 under V2 (Definition 5.2)
    feeds(st, data, process)        -> DataFrame[data, process]   (Definition 5.3)
    emits(st, process, data)        -> DataFrame[process, data]   (Definition 5.4)
    influences(st, k, src, dst)     -> DataFrame[src, dst]        (Definition 5.5; k=None: *)

Bound sides go to the driver when they can: if the store has a current component index with
influence scopes (store/index/scopes.py) and the bound side's scopes are small, the answer is
computed from just those scopes' rows (store/scopegraph.py) — the expansion reads only the
components it reaches. Otherwise the Spark joins below run, with the same answers.

Under, in words: complex element e1 is under e2 when every basic element of e2 contains
(reflexively) some basic element of e1; vertex V1 is under V2 when every complex element of V1
is under some complex element of V2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store import schema as S
from store import scopegraph as SG
from store.index.scopes import ScopeFiles
from store.spark.frames import local_frame

if TYPE_CHECKING:
    from store.store import Store

LOWER, UPPER = "lower", "upper"
DATA_COL, PROCESS_COL = "data", "process"
SRC, DST = "src", "dst"

# Rounds of influences(*) before giving up; a graph with a longer shortest derivation chain
# than this is not a provenance graph anyone has asked about yet.
MAX_ROUNDS = 10_000

# The driver-side path (scopes): at most this many bound ids, and scopes of at most this many
# rows in all; larger questions run as Spark joins.
LOCAL_IDS = 10_000
LOCAL_ROWS = 2_000_000


def _ids(side: DataFrame | None, name: str) -> DataFrame | None:
    if side is None:
        return None
    col = side.columns[0] if S.ID not in side.columns else S.ID
    return side.select(F.col(col).alias(name)).distinct()


class Tables:
    """The store tables the predicates read, fetched once per query."""

    def __init__(self, st: Store) -> None:
        self.vertices = st.table(S.VERTICES)
        self.complex = st.table(S.COMPLEX)
        self.ancestors = st.table(S.ANCESTORS)
        self.edges = st.table(S.EDGES)

    def data_ids(self, side: DataFrame | None, name: str) -> DataFrame | None:
        """Restrict a bound side to data vertices (influences relates data only)."""
        ids = _ids(side, name)
        if ids is None:
            return None
        data = self.vertices.filter(F.col(S.KIND) == S.DATA).select(F.col(S.ID).alias(name))
        return ids.join(data, name, "left_semi")


def under_pairs(t: Tables, lower: DataFrame | None = None, upper: DataFrame | None = None) -> DataFrame:
    """All (lower, upper) with `lower` under `upper`; each side optionally restricted."""
    lo, up = _ids(lower, LOWER), _ids(upper, UPPER)
    c1 = t.complex.select(F.col(S.VERTEX).alias(LOWER), F.col(S.CE).alias("e1"), F.col(S.ELEM).alias("b1"))
    c2 = t.complex.select(F.col(S.VERTEX).alias(UPPER), F.col(S.CE).alias("e2"), F.col(S.ELEM).alias("b2"))
    anc = t.ancestors.select(F.col(S.ID).alias("b1"), F.col(S.ANCESTOR).alias("b2"))
    if up is not None and lo is None:
        # Down: from the upper side's basic elements to everything they contain.
        c2 = c2.join(up, UPPER, "left_semi")
        j = c2.join(anc, "b2").join(c1, "b1")
    else:
        if lo is not None:
            c1 = c1.join(lo, LOWER, "left_semi")
        if up is not None:
            c2 = c2.join(up, UPPER, "left_semi")
        j = c1.join(anc, "b1").join(c2, "b2")
    # e1 under e2: every basic element of e2 contains some basic element of e1.
    per_ce = j.groupBy(LOWER, "e1", UPPER, "e2").agg(F.countDistinct("b2").alias("n"))
    size = t.vertices.select(F.col(S.ID).alias(UPPER), F.col(S.CE_SIZE).alias("_size"))
    ce_under = per_ce.join(size, UPPER).filter(F.col("n") == F.col("_size")).select(LOWER, "e1", UPPER)
    # V1 under V2: every complex element of V1 is under some complex element of V2.
    per_v = ce_under.distinct().groupBy(LOWER, UPPER).agg(F.count("e1").alias("m"))
    n_ce = t.vertices.select(F.col(S.ID).alias(LOWER), F.col(S.N_CE).alias("_n"))
    return per_v.join(n_ce, LOWER).filter(F.col("m") == F.col("_n")).select(LOWER, UPPER)


def _collect_ids(side: DataFrame) -> list[str] | None:
    """The ids of a bound side, or None when it holds more than LOCAL_IDS."""
    rows = _ids(side, S.ID).limit(LOCAL_IDS + 1).collect()
    return None if len(rows) > LOCAL_IDS else [r[0] for r in rows]


def _bound_graph(files: ScopeFiles, side: DataFrame) -> tuple[list[str], SG.ScopeGraph] | None:
    """A bound side's ids and the driver-side graph of their scopes, or None when there are
    too many ids or the scopes hold too many rows."""
    ids = _collect_ids(side)
    if ids is None:
        return None
    scopes = files.scopes_of(ids)
    if sum(n for n, _ in scopes.values()) > LOCAL_ROWS:
        return None
    return ids, SG.ScopeGraph(files.rows_of(scopes) if scopes else ())


def _local_frame(st: Store, pairs: list[tuple[str, str]], names: tuple[str, str]) -> DataFrame:
    return local_frame(st.spark, pairs, f"{names[0]} string, {names[1]} string")


def _local_under(st: Store, lower: DataFrame | None, upper: DataFrame | None) -> DataFrame | None:
    files = ScopeFiles.of(st) if (lower is not None or upper is not None) else None
    if files is None:
        return None
    local = _bound_graph(files, upper if upper is not None else lower)
    if local is None:
        return None
    ids, g = local
    found = SG.under(g, None, ids) if upper is not None else SG.under(g, ids, None)
    out = _local_frame(st, found, (LOWER, UPPER))
    if upper is not None and lower is not None:
        out = out.join(_ids(lower, LOWER), LOWER, "left_semi")
    return out


def under(st: Store, lower: DataFrame | None = None, upper: DataFrame | None = None) -> DataFrame:
    local = _local_under(st, lower, upper)
    return local if local is not None else under_pairs(Tables(st), lower, upper)


def _down(t: Tables, ids: DataFrame, origin: str, name: str) -> DataFrame:
    """(origin, name): for each origin vertex, the vertices under it."""
    pairs = under_pairs(t, upper=ids.select(F.col(origin).alias(S.ID)).distinct())
    return ids.join(pairs.withColumnRenamed(UPPER, origin), origin).select(origin, F.col(LOWER).alias(name))


def _up(t: Tables, ids: DataFrame, origin: str, name: str) -> DataFrame:
    """(origin, name): for each origin vertex, the vertices it is under."""
    pairs = under_pairs(t, lower=ids.select(F.col(origin).alias(S.ID)).distinct())
    return ids.join(pairs.withColumnRenamed(LOWER, origin), origin).select(origin, F.col(UPPER).alias(name))


def feeds(st: Store, data: DataFrame | None = None, process: DataFrame | None = None) -> DataFrame:
    """(data, process): some edge (d', p', d2) has d' under data and p' under process."""
    t = Tables(st)
    e = t.edges.select(F.col(S.SRC).alias("a"), F.col(S.PROCESS).alias("q"))
    if data is not None:
        a_d = under_pairs(t, upper=data).select(F.col(LOWER).alias("a"), F.col(UPPER).alias(DATA_COL))
        e = e.join(a_d, "a")
        q_p = under_pairs(t, lower=e.select(F.col("q").alias(S.ID)), upper=process)
    elif process is not None:
        q_p = under_pairs(t, upper=process)
        e = e.join(q_p.select(F.col(LOWER).alias("q")).distinct(), "q", "left_semi")
        a_d = under_pairs(t, lower=e.select(F.col("a").alias(S.ID))).select(
            F.col(LOWER).alias("a"), F.col(UPPER).alias(DATA_COL))
        e = e.join(a_d, "a")
    else:
        a_d = under_pairs(t, lower=e.select(F.col("a").alias(S.ID))).select(
            F.col(LOWER).alias("a"), F.col(UPPER).alias(DATA_COL))
        e = e.join(a_d, "a")
        q_p = under_pairs(t, lower=e.select(F.col("q").alias(S.ID)))
    q_p = q_p.select(F.col(LOWER).alias("q"), F.col(UPPER).alias(PROCESS_COL))
    return e.join(q_p, "q").select(DATA_COL, PROCESS_COL).distinct()


def emits(st: Store, process: DataFrame | None = None, data: DataFrame | None = None) -> DataFrame:
    """(process, data): some edge (d1, p', d') has p' under process and data under d'."""
    t = Tables(st)
    e = t.edges.select(F.col(S.PROCESS).alias("q"), F.col(S.DST).alias("b"))
    if process is not None or data is None:
        q_p = under_pairs(t, lower=None if process is not None else e.select(F.col("q").alias(S.ID)),
                          upper=process).select(F.col(LOWER).alias("q"), F.col(UPPER).alias(PROCESS_COL))
        e = e.join(q_p, "q")
        d_b = under_pairs(t, upper=e.select(F.col("b").alias(S.ID)), lower=data)
    else:
        d_b = under_pairs(t, lower=data)
        e = e.join(d_b.select(F.col(UPPER).alias("b")).distinct(), "b", "left_semi")
        q_p = under_pairs(t, lower=e.select(F.col("q").alias(S.ID))).select(
            F.col(LOWER).alias("q"), F.col(UPPER).alias(PROCESS_COL))
        e = e.join(q_p, "q")
    d_b = d_b.select(F.col(LOWER).alias(DATA_COL), F.col(UPPER).alias("b"))
    return e.join(d_b, "b").select(PROCESS_COL, DATA_COL).distinct()


def influences(st: Store, k: int | None = 1, src: DataFrame | None = None,
               dst: DataFrame | None = None) -> DataFrame:
    """(src, dst) with src influences(k) dst; k=None is influences(*), the unbounded closure.

    Expands from the bound side (src forward, else dst backward; unbound: every data vertex):
    R0 = the vertices under (forward) / above (backward) the start, and each round adds what
    lies under the destination (above the source) of an edge leaving the newest part of R.
    This is Definition 5.5 unrolled: influences(k) = influences(1) composed k times, and
    influences(1) of a set closed under `under` adds exactly those edge ends.
    """
    if k is not None and k < 0:
        raise ValueError(f"influences(k) needs k >= 0, got {k}")
    local = _local_influences(st, k, src, dst)
    if local is not None:
        return local
    t = Tables(st)
    forward = src is not None or dst is None
    start = t.data_ids(src if forward else dst, "o")
    if start is None:  # unbound both sides: start from every data vertex
        start = t.vertices.filter(F.col(S.KIND) == S.DATA).select(F.col(S.ID).alias("o"))
    reach = expand(t, start, k, forward)
    out = reach.select(F.col("o").alias(SRC if forward else DST), F.col("x").alias(DST if forward else SRC))
    other = t.data_ids(dst if forward else src, DST if forward else SRC)
    if other is not None:
        out = out.join(other, DST if forward else SRC, "left_semi")
    return out.select(SRC, DST)


def _local_influences(st: Store, k: int | None, src: DataFrame | None,
                      dst: DataFrame | None) -> DataFrame | None:
    """influences from a small bound side, answered from its scopes on the driver (or None)."""
    files = ScopeFiles.of(st) if (src is not None or dst is not None) else None
    if files is None:
        return None
    for forward, side, other, other_name in ((True, src, dst, DST), (False, dst, src, SRC)):
        if side is None:
            continue
        local = _bound_graph(files, side)
        if local is None:
            continue
        ids, g = local
        out = _local_frame(st, SG.influences(g, ids, k, forward), (SRC, DST))
        if other is not None:
            out = out.join(_ids(other, other_name), other_name, "left_semi")
        return out
    return None


def expand(t: Tables, start: DataFrame, k: int | None, forward: bool) -> DataFrame:
    """Semi-naive expansion; `start(o)` -> reach(o, x). Each round is materialized once."""
    close = _down if forward else _up
    end_from, end_to = (S.SRC, S.DST) if forward else (S.DST, S.SRC)
    data_v = t.vertices.filter(F.col(S.KIND) == S.DATA).select(F.col(S.ID).alias("x"))
    reach = close(t, start, "o", "x").join(data_v, "x", "left_semi").localCheckpoint()
    delta = reach
    rounds = 0
    while (k is None or rounds < k) and rounds < MAX_ROUNDS:
        rounds += 1
        hop = delta.join(t.edges.select(F.col(end_from).alias("x"), F.col(end_to).alias("y")), "x")
        ends = hop.select("o", F.col("y").alias("o2")).distinct()
        nxt = close(t, ends.select(F.col("o2").alias("o")).distinct(), "o", "x")
        found = ends.join(nxt.withColumnRenamed("o", "o2"), "o2").select("o", "x").distinct()
        # One materialization per round; `reach` stays a union of materialized deltas, so its
        # plan grows by one scan per round and is never recomputed.
        delta = found.join(reach, ["o", "x"], "left_anti").localCheckpoint()
        reach = reach.unionByName(delta)
        if (k is None or rounds < k) and delta.isEmpty():  # the last bounded round needs no check
            break
    return reach
