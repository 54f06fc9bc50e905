"""Lineage on Spark: the reads of store/lineage.py's methods as Spark jobs over an `IndexView`.
CC and CS collect a scope of at most τ triples to the driver and search it there (`reach`); a
larger one runs RQ on Spark restricted to those triples."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from store.engine import Choice, Engine
from store.index import layout as L
from store.reach import (
    DEFAULT_TAU,
    Direction,
    Lineage,
    Method,
    Triple,
    index_warning,
    reach,
    resolve_method,
    unknown,
    walk,
)
from store.schema import DST, EDGES, ID, PROCESS, SRC, VERTICES
from store.spark.frames import local_frame
from store.spark.index.layout import bucket_filter

_ISIN_MAX = 2_000  # larger frontiers are joined as a DataFrame instead of an IN list


def rq_spark(scope: DataFrame, item: str, depth: int | None, forward: bool) -> tuple[set[str], set[Triple]]:
    """RQ on Spark: one filtered lookup of `scope` per level, the level's triples collected."""
    key = SRC if forward else DST
    spark = scope.sparkSession

    def expand(frontier: list[str]) -> list[Triple]:
        if len(frontier) <= _ISIN_MAX:
            hits = scope.where(F.col(key).isin(frontier))
        else:
            keys = local_frame(spark, [(v,) for v in frontier], f"{key} string")
            hits = scope.join(F.broadcast(keys), key, "left_semi")
        return [(r[0], r[1], r[2]) for r in hits.select(SRC, DST, L.OP).collect()]

    return walk(expand, item, depth, forward)


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
        return bucket_filter(col, value, self.buckets)


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


def on_spark(view: IndexView, item: str, depth: int | None, forward: bool, method: Method,
              tau: int | None) -> tuple[set[str], set[Triple], int]:
    if method is Method.RQ:
        found, edges = rq_spark(view.df('raw'), item, depth, forward)
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
    raise unknown(item)


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
        found, edges = rq_spark(scope, item, depth, forward)
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
            keys = local_frame(deps.sparkSession, [(v,) for v in frontier], f"{here} string")
            hits = deps.join(F.broadcast(keys), here, "left_semi")
        nxt = {r[0] for r in hits.select(there).collect()} - seen  # dedupe here: no shuffle
        seen |= nxt
        frontier = sorted(nxt)
    return seen


def component_members(view: IndexView, item: str, limit: int | None) -> list[str] | None:
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


def view_lineage(view: IndexView, item: str, depth: int | None = None, forward: bool = False,
                 method: Method = Method.AUTO, tau: int | None = None) -> Lineage:
    """Lineage of `item` over an IndexView of DataFrames (an index computed in memory, not
    committed to a store), on Spark."""
    method = Method(method)
    chosen = resolve_method(method, view.indexed, view.warnings)
    found, edges, read = on_spark(view, item, depth, forward, chosen, tau)
    return Lineage(item, Direction.FORWARD if forward else Direction.BACKWARD, tuple(sorted(found)),
                   tuple(sorted(edges)), chosen, read, view.warnings if method is Method.AUTO else (),
                   Choice(Engine.SPARK, "an IndexView of Spark DataFrames"))
