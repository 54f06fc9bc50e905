"""Driver-side point reads of the bucketed index files (store/index/layout.py), with DuckDB and
pyarrow: the key's bucket is computed on the driver (Spark's xxhash64,
`layout.bucket_of_value`), so only that bucket's file is opened, and row groups whose min/max
statistics exclude the key (the files are sorted by it) are skipped. Both engines use them for
small questions: the DuckDB engine's lineage (store/duckdb/index_reads.py) and the influence
scopes (store/index/scopes.py) that either engine's predicates read for a small bound side."""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Sequence

from store.arrays import unique
from store.engine import duckdb_connect
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
IN_LIST = 64  # longer membership lists are joined, not written out as constants


def connection():
    """The DuckDB connection of these point reads (one per process, in memory)."""
    global _CON
    if _CON is None:

        _CON = duckdb_connect()
    return _CON


def condition(where: Sequence[tuple[str, object]]):
    """A DuckDB condition from (column, value) pairs: equality, or membership when the value
    is a list, tuple or set (values become constants, never SQL text)."""
    import duckdb  # deferred: only this path needs duckdb

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


_RANGES: dict[tuple[str, str], tuple | None] = {}  # (file, column) -> (min, max) over its row groups


def _file_range(path: str, column: str):
    """(min, max) of `column` over the whole file from its footer (read once per process), or
    None when a row group has no statistics."""
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    hit = _RANGES.get((path, column), False)
    if hit is False:
        md = pq.ParquetFile(path).metadata
        hit = None
        if column in md.schema.names:
            ci = md.schema.names.index(column)
            stats = [md.row_group(g).column(ci).statistics for g in range(md.num_row_groups)]
            if stats and all(st is not None and st.has_min_max for st in stats):
                hit = (min(st.min for st in stats), max(st.max for st in stats))
        _RANGES[(path, column)] = hit
    return hit


def _may_hold(path: str, where: Sequence[tuple[str, object]]) -> bool:
    """False when a file's statistics rule out the string equalities or short memberships (at
    most IN_LIST values) of `where`: a bucket written as several files in key order holds a key
    in one or two of them. Longer lists are not checked (sorting them per file costs more)."""
    for column, value in where:
        many = isinstance(value, (list, tuple, set, frozenset))
        if many and not 0 < len(value) <= IN_LIST:
            continue
        values = sorted(value) if many else [value]
        if not all(isinstance(v, str) for v in values):
            continue
        span = _file_range(path, column)
        if span is None:
            continue
        lo, hi = (x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in span)
        i = bisect.bisect_left(values, lo)
        if i == len(values) or values[i] > hi:
            return False
    return True


def read_buckets(folder: str, buckets: Iterable[int], columns: Sequence[str], where: Sequence[tuple[str, object]]):
    """The rows matching `where` (see `condition`) in the given buckets' files (a pyarrow Table;
    files and row groups whose statistics exclude it are skipped), or None when those buckets
    have no file."""
    files = bucket_files(folder, buckets)
    if len(files) > 1:
        files = [f for f in files if _may_hold(f, where)] or files[:1]
    if not files:
        return None
    con = connection()
    rel = con.read_parquet(files)
    # A long membership list is a semi-join with an Arrow table of its values: as constants it
    # would be rendered, parsed and bound one by one (thousands of set ids for a large lineage).
    small = [(c, v) for c, v in where if not (isinstance(v, (list, tuple, set, frozenset)) and len(v) > IN_LIST)]
    if small:
        rel = rel.filter(condition(small))
    for column, values in where:
        if (column, values) not in small:
            import pyarrow as pa  # deferred: only this path needs pyarrow

            rel = rel.join(con.from_arrow(pa.table({column: pa.array(sorted(values), pa.string())})), column,
                           how="semi")
    return rel.project(*columns).to_arrow_table() if columns else rel.to_arrow_table()


_STATS: dict[str, tuple] = {}  # file -> (ParquetFile, per row group (key min, key max, sort min, sort max))


def _row_group_stats(path: str, key: str, sort: str):
    """A file's row groups as (min, max) of its bucket key and of its sort column and their row
    count (read from the footer once per process: segment files never change)."""
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    hit = _STATS.get(path)
    if hit is None or hit[2] != (key, sort):
        pf = pq.ParquetFile(path)
        md = pf.metadata
        names = md.schema.names
        ki, si = names.index(key), names.index(sort)
        groups = []
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            k, v = rg.column(ki).statistics, rg.column(si).statistics
            ok = k is not None and v is not None and k.has_min_max and v.has_min_max
            groups.append((k.min, k.max, v.min, v.max, rg.num_rows) if ok else None)
        hit = _STATS[path] = (pf, groups, (key, sort))
    return hit[0], hit[1]


def key_rows(folder: str, bucket: int, key: str, key_value: str, sort: str) -> int:
    """Rows of a bucket's files in row groups that may hold `key` = `key_value` (footers only)."""
    n = 0
    for path in bucket_files(folder, [bucket]):
        _pf, groups = _row_group_stats(path, key, sort)
        n += sum(g[4] for g in groups if g is not None and g[0] <= key_value <= g[1])
    return n


def read_sorted(folder: str, bucket: int, key: str, key_value: str, sort: str, values: Sequence[str],
                columns: Sequence[str]):
    """The rows with `key` = `key_value` and `sort` in `values` (a pyarrow Table of `columns`),
    from a bucket's files, with pyarrow: only the row groups whose statistics (min and max of
    both columns) may hold one of the values are read. Files sorted by (key, sort), as the index
    writes them, make that a few row groups for a handful of values, where a scan would read the
    whole component; any order gives the right rows."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    wanted = sorted(set(values))
    parts = []
    for path in bucket_files(folder, [bucket]):
        pf, groups = _row_group_stats(path, key, sort)
        pick = []
        for g, st in enumerate(groups):
            if st is None:
                pick.append(g)
                continue
            kmin, kmax, vmin, vmax, _rows = st
            if not (kmin <= key_value <= kmax):
                continue
            i = bisect.bisect_left(wanted, vmin)
            if i < len(wanted) and wanted[i] <= vmax:
                pick.append(g)
        if pick:
            t = pf.read_row_groups(pick, columns=list(dict.fromkeys([*columns, key, sort])))
            mask = pc.and_(pc.equal(t.column(key), key_value),
                           pc.is_in(t.column(sort), value_set=pa.array(wanted, pa.string())))
            parts.append(t.filter(mask).select(list(columns)))
    if not parts:
        return pa.table({c: pa.array([], pa.string()) for c in columns})
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def read_keys(folder: str, buckets: int, key: str, values, columns: Sequence[str] | None = None):
    """The rows whose `key` is one of `values` (a pyarrow string array) in a bucketed segment
    (a pyarrow Table of `columns`, all when None; `key` first when it is not among them), read
    with pyarrow: each value's bucket is computed (`xxh.buckets_of`), and of each bucket's files
    only the row groups whose min/max statistics of `key` hold one of that bucket's values are
    read. Files sorted by `key` make that a few row groups per value (index_nodes by id, the
    ccid-bucketed tables by ccid); any order gives the right rows."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    from store.index.xxh import buckets_of  # deferred: numpy

    values = pc.unique(pa.array(values, pa.string()) if not isinstance(values, (pa.Array, pa.ChunkedArray))
                       else values)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.filter(pc.is_valid(values))
    parts = []
    if len(values):
        from concurrent.futures import ThreadPoolExecutor  # deferred: only this path reads in threads

        of = buckets_of(values, buckets)

        def one(b: int) -> list:
            out = []
            wanted = sorted(values.filter(pa.array(of == b)).to_pylist())
            wanted_arr = pa.array(wanted, pa.string())
            for path in bucket_files(folder, [b]):
                pf, groups = _row_group_stats(path, key, key)
                pick = []
                for g, st in enumerate(groups):
                    if st is None:
                        pick.append(g)
                        continue
                    i = bisect.bisect_left(wanted, st[0])
                    if i < len(wanted) and wanted[i] <= st[1]:
                        pick.append(g)
                if pick:
                    cols = None if columns is None else list(dict.fromkeys([key, *columns]))
                    t = pf.read_row_groups(pick, columns=cols)
                    out.append(t.filter(pc.is_in(t.column(key), value_set=wanted_arr)))
            return out

        with ThreadPoolExecutor(2) as pool:  # pyarrow decodes without the GIL
            for found in pool.map(one, unique(of).tolist()):
                parts += found
    if not parts:
        return None
    table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    return table if columns is None else table.select(list(columns))


def holds_any(path: str, key: str, wanted: Sequence[str]) -> bool:
    """Whether Parquet file `path` holds one of `wanted` (sorted) in column `key`: its row-group
    statistics first (footer, cached), then the key column of the row groups they leave."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    pf, groups = _row_group_stats(path, key, key)
    pick = []
    for g, st in enumerate(groups):
        if st is None:
            pick.append(g)
            continue
        i = bisect.bisect_left(wanted, st[0])
        if i < len(wanted) and wanted[i] <= st[1]:
            pick.append(g)
    if not pick:
        return False
    column = pf.read_row_groups(pick, columns=[key]).column(key)
    return bool(pc.any(pc.is_in(column, value_set=pa.array(list(wanted), pa.string()))).as_py())


def prefix_rows(folder: str, buckets: Iterable[int], key: str, text: str, limit: int,
                columns: Sequence[str]) -> tuple[int, list[tuple]]:
    """(how many rows of the buckets' files have a `key` starting with `text`, the first `limit`
    of them in key order as tuples of `columns`, `key` first), with pyarrow. Files sorted by
    `key`, as the index writes them: the row groups whose statistics lie wholly inside the
    prefix are counted from the footer, and only the first ones it touches (up to `limit` rows)
    and the last are read."""
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    total, found = 0, []
    for path in bucket_files(folder, buckets):
        pf, groups = _row_group_stats(path, key, key)
        touched: list[tuple[int, int | None]] = []  # (row group, its rows when wholly inside)
        for g, st in enumerate(groups):
            if st is None:
                touched.append((g, None))
                continue
            lo, hi = st[0], st[1]
            if isinstance(lo, bytes):
                lo, hi = lo.decode("utf-8", "replace"), hi.decode("utf-8", "replace")
            if hi < text or not (lo < text or lo.startswith(text)):
                continue
            touched.append((g, st[4] if lo.startswith(text) and hi.startswith(text) else None))
        taken = 0
        for g, rows in touched:
            if rows is not None and taken >= limit:
                total += rows
                continue
            t = pf.read_row_group(g, columns=list(dict.fromkeys([key, *columns])))
            t = t.filter(pc.starts_with(t.column(key), text))
            total += t.num_rows
            if taken < limit:
                part = t.slice(0, limit - taken)
                found += zip(*[part.column(c).to_pylist() for c in columns], strict=True)
                taken += part.num_rows
    found.sort()
    return total, found[:limit]
