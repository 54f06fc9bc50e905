"""Driver-side point reads of the index tables with DuckDB (local stores only).

A CS/CC query reads a handful of small, key-selected slices of the index; as Spark jobs each
costs job scheduling (tenths of a second on a busy machine). When the store is on the local
file system, the same bucket files are read here instead: the key's bucket is computed on the
driver (Spark's xxhash64, `layout.bucket_of_value`), so DuckDB opens only that bucket's file,
skips every row group whose min/max statistics exclude the key (the files are sorted by it),
and returns the few matching rows as a pyarrow Table. Semantics are those of the Spark path. These reads are the
local engine's CC and CS (store/lineage.py): a scope larger than τ is searched with DuckDB
over `scope_relation` instead of in memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from store.index import layout as L


def bucket_files(folder: str, buckets: Iterable[int]) -> list[str]:
    """The Parquet files of the given buckets of a hive-partitioned (`bucket=N`) segment."""
    files = []
    for b in sorted(set(buckets)):
        path = os.path.join(folder, f"{L.BUCKET}={b}")
        if os.path.isdir(path):
            files += [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".parquet")]
    return files


_CON = None
_IN_LIST = 64  # longer membership lists are joined, not written out as constants


def _con():
    """The DuckDB connection of these point reads (one per process, in memory)."""
    global _CON
    if _CON is None:
        import duckdb

        _CON = duckdb.connect()
    return _CON


def condition(where: Sequence[tuple[str, object]]):
    """A DuckDB condition from (column, value) pairs: equality, or membership when the value
    is a list, tuple or set (values become constants, never SQL text)."""
    import duckdb

    out = None
    for column, value in where:
        c = duckdb.ColumnExpression(column)
        if isinstance(value, (list, tuple, set, frozenset)):
            test = c.isin(*[duckdb.ConstantExpression(v) for v in sorted(value)]) if value \
                else duckdb.ConstantExpression(False)
        else:
            test = c == duckdb.ConstantExpression(value)
        out = test if out is None else out & test
    return out


def read_buckets(folder: str, buckets: Iterable[int], columns: Sequence[str], where: Sequence[tuple[str, object]]):
    """The rows matching `where` (see `condition`) in the given buckets' files (a pyarrow Table;
    row groups whose statistics exclude it are skipped), or None when those buckets have no file."""
    files = bucket_files(folder, buckets)
    if not files:
        return None
    con = _con()
    rel = con.read_parquet(files)
    # A long membership list is a semi-join with an Arrow table of its values: as constants it
    # would be rendered, parsed and bound one by one (thousands of set ids for a large lineage).
    small = [(c, v) for c, v in where if not (isinstance(v, (list, tuple, set, frozenset)) and len(v) > _IN_LIST)]
    if small:
        rel = rel.filter(condition(small))
    for column, values in where:
        if (column, values) not in small:
            import pyarrow as pa

            rel = rel.join(con.from_arrow(pa.table({column: pa.array(sorted(values), pa.string())})), column,
                           how="semi")
    return rel.project(*columns).to_arrow_table() if columns else rel.to_arrow_table()


@dataclass(frozen=True)
class LocalIndex:
    """Segment folders (hive-partitioned by bucket) of the index tables."""

    folders: dict[str, str]
    buckets: int

    @classmethod
    def of(cls, st) -> LocalIndex | None:
        """The store's index folders, or None when the store is not a local folder."""
        meta = st.meta(L.META_KEY) or {}
        if "buckets" not in meta:
            return None
        folders = {}
        for name in (L.NODES, L.TRIPLES, L.SETDEPS, L.SETS):
            entry = st.manifest.tables.get(name)
            if entry is None or len(entry.segments) != 1:
                if name == L.SETS:  # optional: only for counting a scope without reading it
                    continue
                return None
            path = st.storage.local_path(entry.segments[0])
            if path is None:
                return None
            folders[name] = path
        return cls(folders, int(meta["buckets"]))

    def _table(self, name: str, key: str, where: Sequence[tuple[str, object]], columns: Sequence[str]):
        """The rows (a pyarrow Table) of the one bucket `key` hashes to that match `where`."""
        table = read_buckets(self.folders[name], [L.bucket_of_value(key, self.buckets)], columns, where)
        if table is None:
            import pyarrow as pa

            return pa.table({c: pa.array([], pa.string()) for c in columns})
        return table

    def _read(self, name: str, key: str, where: Sequence[tuple[str, object]], columns: Sequence[str]) -> list[tuple]:
        """The same rows as tuples."""
        table = self._table(name, key, where, columns)
        cols = [table.column(c).to_pylist() for c in columns]
        return list(zip(*cols, strict=True))

    def locate(self, item: str) -> tuple[str, str] | None:
        rows = self._read(L.NODES, item, [("id", item)], (L.CCID, L.CSID))
        return rows[0] if rows else None

    def set_lineage(self, ccid: str, csid: str, forward: bool) -> set[str]:
        """`csid` and every set it derives from (forward: that derive from it), walked over the
        component's set dependencies read once (one bucket, one key range)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        deps = self._table(L.SETDEPS, ccid, [(L.CCID, ccid)], (L.SRC_CSID, L.DST_CSID))
        here, there = (L.SRC_CSID, L.DST_CSID) if forward else (L.DST_CSID, L.SRC_CSID)
        key, other = deps.column(here), deps.column(there)
        seen, frontier = {csid}, [csid]
        while frontier:
            hit = pc.is_in(key, value_set=pa.array(frontier, pa.string()))
            nxt = set(other.filter(hit).to_pylist()) - seen
            seen |= nxt
            frontier = sorted(nxt)
        return seen

    def _scope_filter(self, ccid: str, sets: Sequence[str] | None) -> list[tuple[str, object]]:
        where: list[tuple[str, object]] = [(L.CCID, ccid)]
        if sets is not None:
            where.append((L.DST_CSID, list(sets)))
        return where

    def scope_rows(self, ccid: str, sets: Sequence[str] | None) -> int:
        """How many triples `scope` holds, from the component's rows of index_sets (each set's
        `n_triples` counts the triples whose dst_csid it is); without that table, the filter
        columns of the matching row groups of index_triples are read and counted."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if L.SETS in self.folders:
            table = self._table(L.SETS, ccid, [(L.CCID, ccid)], (L.CSID, L.N_TRIPLES))
            if sets is not None:
                table = table.filter(pc.is_in(table.column(L.CSID), value_set=pa.array(list(sets), pa.string())))
            return int(pc.sum(table.column(L.N_TRIPLES)).as_py() or 0) if table.num_rows else 0
        files = bucket_files(self.folders[L.TRIPLES], [L.bucket_of_value(ccid, self.buckets)])
        if not files:
            return 0
        rel = _con().read_parquet(files).filter(condition(self._scope_filter(ccid, sets)))
        return int(rel.aggregate("count(*)").fetchall()[0][0])

    def scope(self, ccid: str, sets: Sequence[str] | None, limit: int | None = None):
        """Triples (src, dst, op) of the component (or of `sets` in it) as a pyarrow Table;
        None when more than `limit`."""
        table = self._table(L.TRIPLES, ccid, self._scope_filter(ccid, sets), ("src", "dst", L.OP))
        return table if limit is None or table.num_rows <= limit else None

    def scope_relation(self, con, ccid: str, sets: Sequence[str] | None):
        """The same triples as a DuckDB relation on connection `con` (read lazily from the
        component's bucket file; values reach DuckDB as constants and Arrow tables, never as
        SQL text)."""
        import duckdb
        import pyarrow as pa

        col = duckdb.ColumnExpression
        files = bucket_files(self.folders[L.TRIPLES], [L.bucket_of_value(ccid, self.buckets)])
        if not files:
            return con.from_arrow(pa.table({c: pa.array([], pa.string()) for c in ("src", "dst", L.OP)}))
        rel = con.read_parquet(files).filter(col(L.CCID) == duckdb.ConstantExpression(ccid))
        if sets is not None:
            rel = rel.join(con.from_arrow(pa.table({L.DST_CSID: pa.array(list(sets), pa.string())})),
                           L.DST_CSID, how="semi")
        return rel.project(col("src"), col("dst"), col(L.OP))
