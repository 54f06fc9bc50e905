"""Lineage on the DuckDB engine (no JVM): RQ over the edges with DuckDB into an Arrow table,
searched with `reach_table`; CC and CS locate the item, walk the set dependencies and read the
scope with pyarrow point reads of the index's bucket files (store/duckdb/index_reads.py). A
scope of at most τ triples is searched in memory, a larger one with DuckDB, one semi-join of the
scope per level. Unknown items are looked up with DuckDB. store/lineage.py chooses the engine;
`LineagePlan.reads` is what it weighs."""

from __future__ import annotations

from store.duckdb.index_reads import LocalIndex
from store.errors import StoreError
from store.index import layout as L
from store.reach import Method, Triple, reach_table, unknown, walk
from store.schema import DST, EDGES, ID, PROCESS, SRC, VERTICES


def rq_duckdb(con, scope, item: str, depth: int | None, forward: bool) -> tuple[set[str], set[Triple]]:
    """RQ with DuckDB: one semi-join of the relation `scope` (src, dst, op) per level with the
    frontier (an Arrow table, so no value becomes SQL text)."""
    import pyarrow as pa  # deferred: only this path needs pyarrow

    key = SRC if forward else DST

    def expand(frontier: list[str]) -> list[Triple]:
        keys = con.from_arrow(pa.table({key: pa.array(frontier, pa.string())}))
        return scope.join(keys, key, how="semi").project(SRC, DST, L.OP).fetchall()

    return walk(expand, item, depth, forward)


def _local_index(st):
    """The index's bucket folders for pyarrow point reads (store/duckdb/index_reads.py)."""

    found = LocalIndex.of(st)
    if found is None:
        raise StoreError(f"the component index of store {st.root} is not laid out as the local engine reads it",
                         hint="run `strata index --rebuild`, or use --engine spark")
    return found


class LineagePlan:
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
                found, hops = rq_duckdb(tables.con, scope, self.item, depth, self.forward)
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
        found, hops = rq_duckdb(tables.con, scope, self.item, depth, self.forward)
        return found, hops, scope.aggregate("count(*)").fetchall()[0][0]


def _edges_relation(tables):
    """The edges as triples (src, dst, op), a DuckDB relation."""
    import duckdb  # deferred: only this path needs duckdb

    col = duckdb.ColumnExpression
    return tables.relation(EDGES).project(col(SRC), col(DST), col(PROCESS).alias(L.OP))


def check_known_local(st, item: str) -> None:
    """UserError unless `item` is in an edge or is a vertex (DuckDB over the committed tables)."""
    import duckdb  # deferred: only this path needs duckdb

    tables = st.local()
    value = duckdb.ConstantExpression(item)
    src, dst = duckdb.ColumnExpression(SRC), duckdb.ColumnExpression(DST)
    if tables.relation(EDGES).filter((src == value) | (dst == value)).limit(1).fetchall():
        return
    if tables.relation(VERTICES).filter(duckdb.ColumnExpression(ID) == value).limit(1).fetchall():
        return
    raise unknown(item)


def component_members(plan: LineagePlan) -> list[str] | None:
    """The sorted src, dst and op ids of the component of a CC plan's item (one bucket file,
    pyarrow); None when the item is in no component."""
    plan.reads()
    if plan.located is None:
        return None
    index, ccid = plan.index, plan.located[0]
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    scope = index.scope(ccid, None)
    ids = pc.unique(pa.chunked_array([c for name in (SRC, DST, L.OP) for c in scope.column(name).chunks],
                                     pa.string()))
    return sorted(ids.to_pylist())
