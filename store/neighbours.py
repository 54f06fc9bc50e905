"""Direct neighbours of items, and items by id prefix: what a browser asks of a store of triples,
bundles or PROV (strata/serve/ui_items.py) — a node's direct sources and direct consumers, one
level at a time, never its whole lineage.

With a component index that covers every edge, on a local store, both are point reads of the
index files (store/duckdb/index_reads.py): an item is located in index_nodes (its bucket, then
the row groups of its id), its sources are the triples of its own connected set with it as dst,
its consumers those of its set and of the sets one set dependency on with it as src (each set's
rows are a few row groups of one file, sorted by component and set), and a prefix search reads
the first and last row groups of each index_nodes file it touches. Without a current index, the
same answers come from DuckDB over the committed tables (one scan of the edges per question).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from store.arrays import distinct_rows
from store.reach import index_warning
from store.schema import DATA, DST, EDGES, ID, KIND, PARENT, PARENTS, PROCESS, SRC, VERTICES

Triple = tuple[str, str, str]  # (src, dst, op)


@dataclass(frozen=True)
class Located:
    """Where an item is: its component and connected set (empty without an index) and its table
    (the index's `table`: its ancestor at depth 1; without an index, its parent)."""

    item: str
    ccid: str = ""
    csid: str = ""
    table: str | None = None


class Neighbours:
    """One store version's reads of direct neighbours (see the module docstring)."""

    def __init__(self, st) -> None:
        from store.duckdb.index_reads import LocalIndex  # deferred: pyarrow and DuckDB, at the first read

        self.st = st
        self.index = LocalIndex.of(st) if index_warning(st) is None and st.storage.on_this_machine else None

    @property
    def indexed(self) -> bool:
        return self.index is not None

    def locate(self, item: str) -> Located | None:
        """Where `item` is, or None when the store has no such item."""
        if self.index is not None:
            found = self.index.node(item)
            return Located(item, *found) if found is not None else None
        import duckdb  # deferred: only this path needs duckdb

        tables = self.st.local()
        value = duckdb.ConstantExpression(item)
        known = False
        if self.st.has_table(VERTICES):
            known = bool(tables.relation(VERTICES).filter(duckdb.ColumnExpression(ID) == value).limit(1).fetchall())
        if not known and self.st.has_table(EDGES):
            src, dst = duckdb.ColumnExpression(SRC), duckdb.ColumnExpression(DST)
            known = bool(tables.relation(EDGES).filter((src == value) | (dst == value)).limit(1).fetchall())
        return Located(item, table=self._parents([item]).get(item)) if known else None

    def _parents(self, items: list[str]) -> dict[str, str]:
        """item -> its parent (the first, by name), for those that have one (no index: DuckDB)."""
        import duckdb  # deferred: only this path needs duckdb

        if not items or not self.st.has_table(PARENTS):
            return {}
        rel = self.st.local().relation(PARENTS).filter(
            duckdb.ColumnExpression(ID).isin(*[duckdb.ConstantExpression(i) for i in items]))
        out: dict[str, str] = {}
        for i, p in sorted(rel.project(f"{ID}, {PARENT}").fetchall(), reverse=True):
            out[i] = p
        return out

    def direct(self, located: Iterable[Located], forward: bool,
               where: bool = True) -> dict[str, list[tuple[Triple, Located]]]:
        """For each item, the triples with it as dst (backward) or src (forward), each with where
        the item at its other end is (same component), sorted by (op, the other end). With
        `where` False a source's set may be left empty (it can then not be read from): a
        large component's sources are then read from its skeleton files too."""
        located = list(located)
        out: dict[str, list[tuple[Triple, Located]]] = {x.item: [] for x in located}
        if not located:
            return out
        if self.index is None:
            for t in self._scan([x.item for x in located], forward):
                near = t[0] if not forward else t[1]
                out[t[1] if not forward else t[0]].append((t, Located(near)))
        else:
            by_component: dict[str, list[Located]] = {}
            for x in located:
                by_component.setdefault(x.ccid, []).append(x)
            for ccid, xs in by_component.items():
                table = self.index.direct(ccid, {x.item: x.csid for x in xs}, forward, source_sets=where)
                cols = [table.column(c).to_pylist() for c in ("src", "dst", "op", "src_csid", "dst_csid")]
                for s, d, op, s_set, d_set in zip(*cols, strict=True):
                    if forward:
                        out[s].append(((s, d, op), Located(d, ccid, d_set)))
                    else:
                        out[d].append(((s, d, op), Located(s, ccid, s_set or "")))
        for rows in out.values():
            rows.sort(key=lambda r: (r[0][2], r[1].item))
        return out

    def consumer_counts(self, located: Iterable[Located]) -> dict[str, int]:
        """For each item, how many (op, consumer) pairs derive from it: what `direct(...,
        forward=True)` would list, counted without making a tuple of each (a source of a large
        component can have thousands)."""
        located = list(located)
        out = dict.fromkeys((x.item for x in located), 0)
        if self.index is None:
            for src, group in _group([(t[0], (t[1], t[2])) for t in self._scan(list(out), True)]).items():
                out[src] = len(group)
            return out
        by_component: dict[str, list[Located]] = {}
        for x in located:
            by_component.setdefault(x.ccid, []).append(x)
        for ccid, xs in by_component.items():
            table = self.index.direct(ccid, {x.item: x.csid for x in xs}, True).select(["src", "dst", "op"])
            pairs = distinct_rows(table, ["src", "dst", "op"]).group_by("src").aggregate([("dst", "count")])
            out.update(zip(pairs.column("src").to_pylist(), pairs.column("dst_count").to_pylist(), strict=True))
        return out

    def _scan(self, items: list[str], forward: bool) -> list[Triple]:
        """The triples with one of `items` as dst (src when forward): DuckDB over the edges."""
        import duckdb  # deferred: only this path needs duckdb
        import pyarrow as pa  # deferred: only this path needs pyarrow

        if not self.st.has_table(EDGES):
            return []
        tables = self.st.local()
        end = SRC if forward else DST
        keys = tables.con.from_arrow(pa.table({end: pa.array(sorted(set(items)), pa.string())}))
        col = duckdb.ColumnExpression
        rel = tables.relation(EDGES).join(keys, end, how="semi")
        return [tuple(r) for r in rel.project(col(SRC), col(DST), col(PROCESS)).fetchall()]

    def search(self, prefix: str, limit: int) -> tuple[int, list[Located]]:
        """(how many items' ids start with `prefix`, the first `limit` of them in id order): the
        index's nodes (items in some edge), else the store's vertices."""
        if not prefix:
            return 0, []
        if self.index is not None:
            total, rows = self.index.prefix(prefix, limit)
            return total, [Located(i, table=t) for i, t in rows]
        if not self.st.has_table(VERTICES):
            return 0, []
        import duckdb  # deferred: only this path needs duckdb

        col, const = duckdb.ColumnExpression, duckdb.ConstantExpression
        rel = self.st.local().relation(VERTICES).filter(
            duckdb.FunctionExpression("starts_with", col(ID), const(prefix)) & (col(KIND) == const(DATA)))
        total = int(rel.aggregate("count(*)").fetchall()[0][0])
        ids = [r[0] for r in rel.project(ID).order(ID).limit(limit).fetchall()]
        parents = self._parents(ids)
        return total, [Located(i, table=parents.get(i)) for i in ids]


def _group(pairs: list[tuple[str, tuple[str, str]]]) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for key, value in pairs:
        out.setdefault(key, set()).add(value)
    return out
