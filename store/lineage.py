"""Lineage of one item: RQ, CCProv and CSProv (CSProv, Section 2; docs/references.md), and `auto`,
on either engine (store/engine.py).

- RQ: recursive querying over every derivation triple: one lookup per level.
- CC (Algorithm 1): find the item's component, read only that component's triples.
- CS (Algorithm 2): find the item's connected set, its set-lineage through the set
  dependencies, read only the triples whose derived value lies in those sets.

`lineage(st, ...)` asks `st.choose(reads)` for an engine, `reads` being the triples the method
reads: every edge for RQ; for CC and CS the item's component or set-lineage, counted from the
index before anything else is read (pyarrow point reads on a local store).

- local (no JVM): RQ reads the edges (src, dst, process AS op) with DuckDB into an Arrow table
  and searches it with `reach_table`. CC and CS locate the item, walk the set dependencies and
  read the scope with pyarrow point reads of the index's bucket files (store/index/local.py);
  a scope of at most τ triples is searched in memory with `reach_table`, a larger one with
  DuckDB, one semi-join of the scope per level. Unknown items are looked up with DuckDB.
- spark: the same reads as Spark jobs (`IndexView`). CC and CS collect a scope of at most τ
  triples to the driver and search it there (`reach`); a larger one runs RQ on Spark
  restricted to those triples.

τ defaults to DEFAULT_LOCAL_TAU on the local engine and DEFAULT_TAU through Spark. Both engines
give the same `Lineage`: nodes, edges, method, and `triples_read`, the size of the triple volume
the recursive step ran over (all triples for RQ, the component for CC, the set-lineage's sets for
CS), so pruning is visible. `Lineage.engine` says which engine answered and why.

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

from store.engine import Choice, Engine
from store.errors import StoreError, UserError
from store.index import layout as L
from store.schema import DST, EDGES, ID, PROCESS, SRC, VERTICES

DEFAULT_TAU = 200_000  # triples collected to the driver through Spark at most (CSProv's τ)
# On the local engine the scope is read by pyarrow straight into an Arrow table and searched
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
    """The answer to one lineage query (`engine`: which engine answered and why; not compared)."""

    item: str
    direction: Direction
    nodes: tuple[str, ...]  # ancestors (backward) or descendants (forward), sorted
    edges: tuple[Triple, ...]  # (src, dst, op), sorted
    method: Method
    triples_read: int
    warnings: tuple[str, ...] = field(default=())
    engine: Choice | None = field(default=None, compare=False)

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
        frontier = list(reached - seen)  # order is irrelevant to every expand
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


def _rq_duckdb(con, scope, item: str, depth: int | None, forward: bool) -> tuple[set[str], set[Triple]]:
    """RQ with DuckDB: one semi-join of the relation `scope` (src, dst, op) per level with the
    frontier (an Arrow table, so no value becomes SQL text)."""
    import pyarrow as pa

    key = SRC if forward else DST

    def expand(frontier: list[str]) -> list[Triple]:
        keys = con.from_arrow(pa.table({key: pa.array(frontier, pa.string())}))
        return scope.join(keys, key, how="semi").project(SRC, DST, L.OP).fetchall()

    return _walk(expand, item, depth, forward)


# ---------------------------------------------------------------------------- index state
def index_warning(st) -> str | None:
    """None when the component index covers every committed edge, else why it cannot be used
    (read from the manifest: no Spark, no file)."""
    meta = st.meta(L.META_KEY)
    if not meta:
        return "no component index yet: run `strata index`"
    from store.index.build import _edge_segments

    if list(_edge_segments(st)) != list(meta.get("edges_segments", [])):
        return "the component index is older than the last ingest: run `strata index` to update it"
    return None


def _local_index(st):
    """The index's bucket folders for pyarrow point reads (store/index/local.py)."""
    from store.index.local import LocalIndex

    found = LocalIndex.of(st)
    if found is None:
        raise StoreError(f"the component index of store {st.root} is not laid out as the local engine reads it",
                         hint="run `strata index --rebuild`, or use --engine spark")
    return found


def _choose(st, reads: Callable[[], int | None]) -> Choice:
    """`st.choose` with `reads()` counted only when it can matter (the engine may be local)."""
    first = st.choose(None)
    if first.engine is Engine.SPARK:
        return first
    return st.choose(reads())


# ---------------------------------------------------------------------------- Spark: index access
@dataclass(frozen=True)
class IndexView:
    """What the lineage methods read on Spark: raw triples for RQ and, if built, the index tables."""

    # Each table is a DataFrame or a zero-argument function returning one (see `df`).
    raw: DataFrame | Callable[[], DataFrame]  # src, dst, op
    nodes: DataFrame | Callable[[], DataFrame] | None = None  # id, ccid, csid (+ bucket)
    triples: DataFrame | Callable[[], DataFrame] | None = None  # src, dst, op, ccid, *_csid
    setdeps: DataFrame | Callable[[], DataFrame] | None = None  # ccid, src_csid, dst_csid
    buckets: int | None = None  # None: tables are not bucketed (built in memory)
    warnings: tuple[str, ...] = ()
    known: DataFrame | Callable[[], DataFrame] | None = None  # DataFrame[id] of every vertex, for "unknown item" errors

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
    """The store's lineage view on Spark; the index is used only if it covers every committed edge."""
    def raw():
        return st.table(EDGES).select(SRC, DST, F.col(PROCESS).alias(L.OP))

    def known():
        return st.table(VERTICES).select(ID)

    warning = index_warning(st)
    if warning is not None:
        return IndexView(raw, known=known, warnings=(warning,))

    def table(name):
        return lambda: st.table(name)

    return IndexView(raw, table(L.NODES), table(L.TRIPLES), table(L.SETDEPS),
                     int(st.meta(L.META_KEY)["buckets"]), known=known)


# ---------------------------------------------------------------------------- methods
def lineage(source, item: str, depth: int | None = None, forward: bool = False,
            method: Method = Method.AUTO, tau: int | None = None) -> Lineage:
    """Lineage of `item` in a store (or, on Spark, an IndexView). Raises UserError for unknown items.

    The engine is `source.choose(reads)` (module docstring). `tau`: the most triples CC/CS
    search in memory; None means DEFAULT_LOCAL_TAU on the local engine, DEFAULT_TAU on Spark."""
    method = Method(method)
    direction = Direction.FORWARD if forward else Direction.BACKWARD
    if depth is not None and depth < 0:
        raise UserError(f"--depth must be 0 or more, got {depth}")
    if isinstance(source, IndexView):
        indexed, warnings = source.indexed, source.warnings
    else:
        warning = index_warning(source)
        indexed, warnings = warning is None, () if warning is None else (warning,)
    if method in (Method.CC, Method.CS) and not indexed:
        raise UserError(f"method '{method.value}' needs the component index: "
                        + (warnings[0] if warnings else "it is missing"),
                        hint="run `strata index` first, or use --method rq")
    chosen = method if method is not Method.AUTO else (Method.CS if indexed else Method.RQ)
    if isinstance(source, IndexView):
        choice = Choice(Engine.SPARK, "an IndexView of Spark DataFrames")
        found, edges, read = _on_spark(source, item, depth, forward, chosen, tau)
    else:
        local = _LocalLineage(source, item, chosen, forward)
        choice = _choose(source, local.reads)
        if choice.engine is Engine.LOCAL:
            found, edges, read = local.run(depth, DEFAULT_LOCAL_TAU if tau is None else tau)
        else:
            found, edges, read = _on_spark(view_of(source), item, depth, forward, chosen, tau)
    return Lineage(item, direction, tuple(sorted(found)), tuple(sorted(edges)), chosen, read,
                   warnings if method is Method.AUTO else (), choice)


def _unknown(item: str) -> UserError:
    return UserError(f"unknown item '{item}': it is in no triple and no vertex of the store",
                     hint="item ids are case-sensitive; `strata query` can list them")


# ---------------------------------------------------------------------------- the local engine
class _LocalLineage:
    """One lineage on the local engine: `reads()` counts what the method reads (and keeps the
    point reads it made for that), `run()` answers."""

    def __init__(self, st, item: str, method: Method, forward: bool) -> None:
        self.st, self.item, self.method, self.forward = st, item, method, forward
        self.index = None
        self.located: tuple[str, str] | None = None
        self.sets: list[str] | None = None
        self.count: int | None = None

    def reads(self) -> int:
        if self.count is not None:
            return self.count
        if self.method is Method.RQ:
            self.count = self.st.local().rows(EDGES)
            return self.count
        self.index = _local_index(self.st)
        self.located = self.index.locate(self.item)
        if self.located is None:
            self.count = 0
            return 0
        ccid, csid = self.located
        if self.method is Method.CS and csid != ccid:
            self.sets = list(self.index.set_lineage(ccid, csid, self.forward))
        self.count = self.index.scope_rows(ccid, self.sets)
        return self.count

    def run(self, depth: int | None, tau: int) -> tuple[set[str], set[Triple], int]:
        read = self.reads()
        tables = self.st.local()
        if self.method is Method.RQ:
            scope = _edges_relation(tables)
            if read <= tau:
                found, hops = reach_table(scope.to_arrow_table(), self.item, depth, self.forward)
            else:
                found, hops = _rq_duckdb(tables.con, scope, self.item, depth, self.forward)
            if not found and not hops:
                check_known_local(self.st, self.item)
            return found, hops, read
        if self.located is None:
            check_known_local(self.st, self.item)
            return set(), set(), 0
        ccid, _ = self.located
        if read <= tau:
            scope = self.index.scope(ccid, self.sets)
            found, hops = reach_table(scope, self.item, depth, self.forward)
            return found, hops, scope.num_rows
        scope = self.index.scope_relation(tables.con, ccid, self.sets)
        found, hops = _rq_duckdb(tables.con, scope, self.item, depth, self.forward)
        return found, hops, scope.aggregate("count(*)").fetchall()[0][0]


def _edges_relation(tables):
    """The edges as triples (src, dst, op), a DuckDB relation."""
    import duckdb

    col = duckdb.ColumnExpression
    return tables.relation(EDGES).project(col(SRC), col(DST), col(PROCESS).alias(L.OP))


def check_known_local(st, item: str) -> None:
    """UserError unless `item` is in an edge or is a vertex (DuckDB over the committed tables)."""
    import duckdb

    tables = st.local()
    value = duckdb.ConstantExpression(item)
    src, dst = duckdb.ColumnExpression(SRC), duckdb.ColumnExpression(DST)
    if tables.relation(EDGES).filter((src == value) | (dst == value)).limit(1).fetchall():
        return
    if tables.relation(VERTICES).filter(duckdb.ColumnExpression(ID) == value).limit(1).fetchall():
        return
    raise _unknown(item)


# ---------------------------------------------------------------------------- Spark
def _on_spark(view: IndexView, item: str, depth: int | None, forward: bool, method: Method,
              tau: int | None) -> tuple[set[str], set[Triple], int]:
    if method is Method.RQ:
        found, edges = _rq_spark(view.df('raw'), item, depth, forward)
        read = view.df('raw').count()
        if not found and not edges:
            _check_known(view, item)
        return found, edges, read
    return _pruned(view, item, depth, forward, method, DEFAULT_TAU if tau is None else tau)


def _check_known(view: IndexView, item: str) -> None:
    hit = view.df('raw').where((F.col(SRC) == item) | (F.col(DST) == item)).limit(1).count()
    if hit:
        return
    if view.known is not None and view.df('known').where(F.col(ID) == item).limit(1).count():
        return
    raise _unknown(item)


def _pruned(view: IndexView, item: str, depth: int | None, forward: bool, method: Method,
            tau: int) -> tuple[set[str], set[Triple], int]:
    """CCProv / CSProv on Spark: locate the item, read only its component / set-lineage, search it."""
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


# ---------------------------------------------------------------------------- components
def component_members(st, item: str, limit: int | None = None) -> list[str]:
    """Every value and process of the connected component (component index) holding `item`,
    sorted; with `limit`, the first `limit` of them. Reads only that component's index rows:
    with pyarrow on the local engine, as Spark jobs otherwise."""
    warning = index_warning(st)
    if warning is not None:
        if st.meta(L.META_KEY):
            raise UserError("exporting a component needs the component index, and it is older than the last ingest",
                            hint="run `strata index` to update it")
        raise UserError("exporting a component needs the component index, and there is none yet",
                        hint="run `strata index` first")
    local = _LocalLineage(st, item, Method.CC, False)  # CC's reads: locate, count the component
    if _choose(st, local.reads).engine is Engine.LOCAL:
        local.reads()
        members = None if local.located is None else _members_local(local.index, local.located[0])
    else:
        members = _members_spark(view_of(st), item, limit)
    if members is None:
        raise UserError(f"'{item}' is in no component of the index: it takes part in no edge",
                        hint="ids are case-sensitive; give its id with --id to export it alone")
    return members if limit is None else members[:limit]


def _members_local(index, ccid: str) -> list[str]:
    """The sorted src, dst and op ids of the component's triples (one bucket file, pyarrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    scope = index.scope(ccid, None)
    ids = pc.unique(pa.chunked_array([c for name in (SRC, DST, L.OP) for c in scope.column(name).chunks],
                                     pa.string()))
    return sorted(ids.to_pylist())


def _members_spark(view: IndexView, item: str, limit: int | None) -> list[str] | None:
    """The same on Spark (None: the item is in no component); sorted and cut there."""
    found = view.df('nodes').where(view.key(ID, item)).select(L.CCID).first()
    if found is None:
        return None
    scope = view.df('triples').where(view.key(L.CCID, found[0]))
    ids = (scope.select(F.col(SRC).alias(ID)).unionByName(scope.select(F.col(DST).alias(ID)))
           .unionByName(scope.select(F.col(L.OP).alias(ID))).distinct().orderBy(ID))
    if limit is not None:
        ids = ids.limit(limit)
    return [r[0] for r in ids.collect()]
