"""Lineage of one item: RQ, CCProv and CSProv (CSProv, Section 2; docs/references.md), and `auto`.

- RQ: recursive querying on Spark over every derivation triple: one lookup per level.
- CC (Algorithm 1): find the item's component, read only that component's triples.
- CS (Algorithm 2): find the item's connected set, its set-lineage through the set
  dependencies, read only the triples whose derived value lies in those sets.
CC and CS collect their triples to the driver and search there (`reach`) when there are at
most τ of them; otherwise they run RQ on Spark restricted to those triples. `triples_read` is the
size of the triple volume the recursive step ran over (all triples for RQ), so pruning is visible.

The lineage of q (backward) is every value with a path to q and every triple on such a path;
with depth k, the values within k steps and the triples whose derived value is fewer than k
steps from q. Forward is the same on reversed triples. A visited set makes cycles harmless.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store.errors import UserError
from store.index import layout as L
from store.schema import DST, EDGES, ID, PROCESS, SRC, VERTICES

DEFAULT_TAU = 200_000  # triples collected to the driver at most (CSProv's τ)
# On a local store the scope is read by pyarrow straight into an Arrow table and searched
# vectorized (no Spark collect), so the driver can take ten times as many by default.
DEFAULT_LOCAL_TAU = 2_000_000
_ISIN_MAX = 2_000  # larger frontiers are joined as a DataFrame instead of an IN list

Triple = tuple[str, str, str]


class Method(str, enum.Enum):
    AUTO = "auto"
    RQ = "rq"
    CC = "cc"
    CS = "cs"


class Direction(str, enum.Enum):
    BACKWARD = "backward"
    FORWARD = "forward"


@dataclass(frozen=True, slots=True)
class Lineage:
    """The answer to one lineage query."""

    item: str
    direction: Direction
    nodes: tuple[str, ...]  # ancestors (backward) or descendants (forward), sorted
    edges: tuple[Triple, ...]  # (src, dst, op), sorted
    method: Method
    triples_read: int
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        key = "ancestors" if self.direction is Direction.BACKWARD else "descendants"
        return {
            "item": self.item,
            "direction": self.direction.value,
            key: list(self.nodes),
            "edges": [{"src": s, "dst": d, "op": o} for s, d, o in self.edges],
            "method": self.method.value,
            "triples_read": self.triples_read,
        }


# ---------------------------------------------------------------------------- driver-side search
def reach(triples: Iterable[Triple], item: str, depth: int | None = None,
          forward: bool = False) -> tuple[set[str], set[Triple]]:
    """Driver-side RQ over collected triples: (values reached, triples on the paths)."""
    step: dict[str, list[Triple]] = {}
    for t in triples:
        step.setdefault(t[0] if forward else t[1], []).append(t)
    return _walk(lambda frontier: [t for v in frontier for t in step.get(v, ())], item, depth, forward)


def reach_table(table, item: str, depth: int | None = None,
                forward: bool = False) -> tuple[set[str], set[Triple]]:
    """`reach` over a pyarrow Table[src, dst, op]: each level is one vectorized `is_in` over the
    table, and only the triples on the paths become Python tuples."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key = table.column(SRC if forward else DST)

    def expand(frontier: list[str]) -> list[Triple]:
        hop = table.filter(pc.is_in(key, value_set=pa.array(frontier, pa.string())))
        return list(zip(*(hop.column(c).to_pylist() for c in (SRC, DST, "op")), strict=True))

    return _walk(expand, item, depth, forward)


def _walk(expand, item: str, depth: int | None, forward: bool) -> tuple[set[str], set[Triple]]:
    """Level-by-level search; `expand(frontier)` returns the triples leaving the frontier."""
    if depth is not None and depth < 0:
        raise UserError(f"--depth must be 0 or more, got {depth}")
    seen, found, edges = {item}, set(), set()
    frontier, level = [item], 0
    while frontier and (depth is None or level < depth):
        hop = expand(frontier)
        edges.update(hop)
        reached = {t[1] if forward else t[0] for t in hop}
        found |= reached
        frontier = sorted(reached - seen)
        seen |= reached
        level += 1
    return found, edges


def _rq_spark(scope: DataFrame, item: str, depth: int | None, forward: bool) -> tuple[set[str], set[Triple]]:
    """RQ on Spark: one filtered lookup of `scope` per level, the level's triples collected."""
    key = SRC if forward else DST
    spark = scope.sparkSession

    def expand(frontier: list[str]) -> list[Triple]:
        if len(frontier) <= _ISIN_MAX:
            hits = scope.where(F.col(key).isin(frontier))
        else:
            keys = spark.createDataFrame([(v,) for v in frontier], [key])
            hits = scope.join(F.broadcast(keys), key, "left_semi")
        return [(r[0], r[1], r[2]) for r in hits.select(SRC, DST, L.OP).collect()]

    return _walk(expand, item, depth, forward)


# ---------------------------------------------------------------------------- index access
@dataclass(frozen=True)
class IndexView:
    """What the lineage methods read: raw triples for RQ and, if built, the index tables."""

    # Each table is a DataFrame or a zero-argument function returning one (see `df`).
    raw: DataFrame | Callable[[], DataFrame]  # src, dst, op
    nodes: DataFrame | Callable[[], DataFrame] | None = None  # id, ccid, csid (+ bucket)
    triples: DataFrame | Callable[[], DataFrame] | None = None  # src, dst, op, ccid, *_csid
    setdeps: DataFrame | Callable[[], DataFrame] | None = None  # ccid, src_csid, dst_csid
    buckets: int | None = None  # None: tables are not bucketed (built in memory)
    warnings: tuple[str, ...] = ()
    known: DataFrame | Callable[[], DataFrame] | None = None  # DataFrame[id] of every vertex, for "unknown item" errors
    local: object | None = None  # store.index.local.LocalIndex: driver-side point reads

    @property
    def indexed(self) -> bool:
        return self.nodes is not None

    def df(self, name: str) -> DataFrame:
        """A table of the view; view_of passes zero-argument functions so that a query only
        builds the DataFrames it uses (building one lists files and reads a footer)."""
        value = getattr(self, name)
        return value() if callable(value) and not isinstance(value, DataFrame) else value

    def key(self, col: str, value: str):
        if self.buckets is None:
            return F.col(col) == F.lit(value)
        return L.bucket_filter(col, value, self.buckets)


def view_of(st) -> IndexView:
    """The store's lineage view; the index is used only if it covers every committed edge."""
    def raw():
        return st.table(EDGES).select(SRC, DST, F.col(PROCESS).alias(L.OP))

    def known():
        return st.table(VERTICES).select(ID)

    meta = st.meta(L.META_KEY)
    if not meta:
        return IndexView(raw, known=known, warnings=("no component index yet: run `strata index`",))
    from store.index.build import _edge_segments

    if list(_edge_segments(st)) != list(meta.get("edges_segments", [])):
        return IndexView(raw, known=known, warnings=(
            "the component index is older than the last ingest: run `strata index` to update it",))
    from store.index.local import LocalIndex

    def table(name):
        return lambda: st.table(name)

    return IndexView(raw, table(L.NODES), table(L.TRIPLES), table(L.SETDEPS),
                     int(meta["buckets"]), known=known, local=LocalIndex.of(st))


# ---------------------------------------------------------------------------- methods
def lineage(source, item: str, depth: int | None = None, forward: bool = False,
            method: Method = Method.AUTO, tau: int | None = None) -> Lineage:
    """Lineage of `item` in a store (or an IndexView). Raises UserError for unknown items.

    `tau`: the most triples CC/CS search on the driver; None means DEFAULT_TAU for a scope
    collected through Spark and DEFAULT_LOCAL_TAU for one read locally with pyarrow."""
    view = source if isinstance(source, IndexView) else view_of(source)
    method = Method(method)
    direction = Direction.FORWARD if forward else Direction.BACKWARD
    if depth is not None and depth < 0:
        raise UserError(f"--depth must be 0 or more, got {depth}")
    if method in (Method.CC, Method.CS) and not view.indexed:
        raise UserError(f"method '{method.value}' needs the component index: "
                        + (view.warnings[0] if view.warnings else "it is missing"),
                        hint="run `strata index` first, or use --method rq")
    chosen = method if method is not Method.AUTO else (Method.CS if view.indexed else Method.RQ)
    if chosen is Method.RQ:
        found, edges = _rq_spark(view.df('raw'), item, depth, forward)
        read = view.df('raw').count()
        if not found and not edges:
            _check_known(view, item)
    else:
        found, edges, read = _pruned(view, item, depth, forward, chosen, tau)
    return Lineage(item, direction, tuple(sorted(found)), tuple(sorted(edges)), chosen, read,
                   view.warnings if method is Method.AUTO else ())


def _check_known(view: IndexView, item: str) -> None:
    hit = view.df('raw').where((F.col(SRC) == item) | (F.col(DST) == item)).limit(1).count()
    if hit:
        return
    if view.known is not None and view.df('known').where(F.col(ID) == item).limit(1).count():
        return
    raise UserError(f"unknown item '{item}': it is in no triple and no vertex of the store",
                    hint="item ids are case-sensitive; `strata query` can list them")


def _pruned(view: IndexView, item: str, depth: int | None, forward: bool, method: Method,
            tau: int | None) -> tuple[set[str], set[Triple], int]:
    """CCProv / CSProv: locate the item, read only its component / set-lineage, search it."""
    if view.local is not None:
        done = _pruned_local(view, item, depth, forward, method, DEFAULT_LOCAL_TAU if tau is None else tau)
        if done is not None:
            return done
    tau = DEFAULT_TAU if tau is None else tau
    row = view.df('nodes').where(view.key(ID, item)).select(L.CCID, L.CSID).first()
    if row is None:
        _check_known(view, item)
        return set(), set(), 0
    ccid, csid = row[0], row[1]
    scope = view.df('triples').where(view.key(L.CCID, ccid))
    if method is Method.CS and csid != ccid:
        sets = _set_lineage(view, ccid, csid, forward)
        scope = scope.where(F.col(L.DST_CSID).isin(sorted(sets)))
    scope = scope.select(SRC, DST, L.OP)
    rows = scope.limit(tau + 1).collect()
    if len(rows) <= tau:
        found, edges = reach(((r[0], r[1], r[2]) for r in rows), item, depth, forward)
        return found, edges, len(rows)
    scope = scope.persist()
    try:
        read = scope.count()
        found, edges = _rq_spark(scope, item, depth, forward)
    finally:
        scope.unpersist()
    return found, edges, read


def _pruned_local(view: IndexView, item: str, depth: int | None, forward: bool, method: Method,
                  tau: int) -> tuple[set[str], set[Triple], int] | None:
    """The same as `_pruned` with driver-side reads; None when the scope exceeds τ."""
    local = view.local
    row = local.locate(item)
    if row is None:
        _check_known(view, item)
        return set(), set(), 0
    ccid, csid = row
    sets = None
    if method is Method.CS and csid != ccid:
        sets = sorted(local.set_lineage(ccid, csid, forward))
    rows = local.scope(ccid, sets, tau)
    if rows is None:
        return None
    found, edges = reach_table(rows, item, depth, forward)
    return found, edges, rows.num_rows


def _set_lineage(view: IndexView, ccid: str, csid: str, forward: bool) -> set[str]:
    """The set and every set it derives from (or, forward, that derive from it)."""
    deps = view.df('setdeps').where(view.key(L.CCID, ccid))
    here, there = (L.SRC_CSID, L.DST_CSID) if forward else (L.DST_CSID, L.SRC_CSID)
    seen, frontier = {csid}, [csid]
    while frontier:
        if len(frontier) <= _ISIN_MAX:
            hits = deps.where(F.col(here).isin(frontier))
        else:
            keys = deps.sparkSession.createDataFrame([(v,) for v in frontier], [here])
            hits = deps.join(F.broadcast(keys), here, "left_semi")
        nxt = {r[0] for r in hits.select(there).collect()} - seen  # dedupe here: no shuffle
        seen |= nxt
        frontier = sorted(nxt)
    return seen


def component_members(st, item: str) -> DataFrame:
    """Every value and process of the connected component (component index) holding `item`:
    DataFrame[id]. Reads only the index's node and triple tables of that component."""
    from store.index.build import _edge_segments

    meta = st.meta(L.META_KEY)
    if not meta:
        raise UserError("exporting a component needs the component index, and there is none yet",
                        hint="run `strata index` first")
    if list(_edge_segments(st)) != list(meta.get("edges_segments", [])):
        raise UserError("exporting a component needs the component index, and it is older than the last ingest",
                        hint="run `strata index` to update it")
    view = IndexView(st.table(EDGES), st.table(L.NODES), st.table(L.TRIPLES), None, int(meta["buckets"]))
    row = view.nodes.where(view.key(ID, item)).select(L.CCID).first()
    if row is None:
        raise UserError(f"'{item}' is in no component of the index: it takes part in no edge",
                        hint="ids are case-sensitive; give its id with --id to export it alone")
    members = view.nodes.where(view.key(L.CCID, row[0])).select(ID)
    ops = view.triples.where(view.key(L.CCID, row[0])).select(F.col(L.OP).alias(ID))
    return members.unionByName(ops)
