"""Driver-side point reads of the index tables with DuckDB (local stores only).

A CS/CC query reads a handful of small, key-selected slices of the index; as Spark jobs each
costs job scheduling (tenths of a second on a busy machine). When the store is on the local
file system, the same bucket files are read here instead: the key's bucket is computed on the
driver (Spark's xxhash64, `layout.bucket_of_value`), so DuckDB opens only that bucket's file,
skips every row group whose min/max statistics exclude the key (the files are sorted by it),
and returns the few matching rows as a pyarrow Table. Semantics are those of the Spark path. These reads are the
local engine's CC and CS (store/lineage.py): a scope larger than τ is searched with DuckDB
over `scope_relation` instead of in memory.

A process that asks about the same component again (the REPL, a notebook, a service) keeps
that component in memory (`ComponentCache`): its triples sorted by derived set, with each set's
row range, and its set dependencies as adjacency lists. A later CS query then slices the scope
out of memory instead of decoding the component's rows from Parquet again, and walks the set
dependencies without reading them. A component is admitted on its second lookup, so a one-query
process (`strata lineage`) never pays for loading one; the budget is `$STRATA_LINEAGE_CACHE`
triples (default 4,000,000, about 0.3 GB; 0 turns it off). Cache keys include the index's
segment folders, which a commit never rewrites, so a newer version of the store never sees an
older version's component.

A large component (more than `LARGE_COMPONENT` triples) is also kept on disk in that form, as
Arrow IPC and numpy files under the store's `_strata/cache/lineage/` (`write_skeletons`, run
after each index build, and at a large component's second lookup when it has none yet). Every
process maps those files instead of reading the component: a lineage in it gathers its sets'
rows and walks integer set codes over memory-mapped arrays, paging in only what it touches,
where reading its scope from Parquet decodes most of the component (a lineage's sets are
spread over nearly all of its row groups). The files are derived data: keyed by the index's
segment folder, never versioned or verified, removed when the index they belong to is replaced
(an incremental update first moves those of the components it left unchanged to the new index,
`carry_skeletons`), and rebuilt from the index whenever they are missing.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from store import progress
from store.arrays import unique
from store.engine import count_setting, within_memory
from store.index import layout as L
from store.index.files import bucket_files, condition, connection, key_rows, prefix_rows, read_buckets, read_sorted

CACHE_ENV = "STRATA_LINEAGE_CACHE"
DEFAULT_CACHE_TRIPLES = 4_000_000
_CACHE_MIN_TRIPLES = 50_000
# A backward set walk reads row groups level by level while it has reached at most this many
# sets; a larger lineage touches most row groups anyway, and reads the component's once.
_WALK_SETS = 256
# ... and only in a component with more rows than this in the table read: below it, DuckDB reads
# the component's rows at once faster than pyarrow reads a few row groups level by level.
_SORTED_READ_ROWS = 2_000_000  # a smaller component is read from Parquet in a few milliseconds
# Components with more triples than this get skeleton files (module docstring), kept here:
LARGE_COMPONENT = 2_000_000
SKELETONS = "_strata/cache/lineage"


def cache_budget() -> int:
    """The most triples the process keeps in memory for repeated lineage (`$STRATA_LINEAGE_CACHE`)."""
    return count_setting(CACHE_ENV, DEFAULT_CACHE_TRIPLES, "triples (0 turns the cache off)", minimum=0)


def _groups(codes, size: int):
    """(order, starts, counts) grouping row numbers by integer code: the rows of code c are
    order[starts[c]:starts[c] + counts[c]] (an integer sort, no string comparisons)."""
    import numpy as np  # deferred: only this path needs numpy

    counts = np.bincount(codes, minlength=size)
    order = np.argsort(codes, kind="stable")
    starts = np.cumsum(counts) - counts
    return order, starts, counts


def _gather(groups, codes):
    """The row numbers of every code in `codes` (numpy), concatenated. An `order` of None
    stands for rows already in code order (no permutation)."""
    import numpy as np  # deferred: only this path needs numpy

    order, starts, counts = groups
    lens = counts[codes]
    offsets = np.repeat(starts[codes] - (np.cumsum(lens) - lens), lens)
    rows = np.arange(int(lens.sum())) + offsets
    return rows if order is None else order[rows]


def _codes(dictionary, values):
    """The codes of `values` in a dictionary array (values it lacks are left out). One pass
    over the dictionary with a hash set of `values`: hashing the dictionary instead would cost
    as much as the whole lookup again on every call."""
    import numpy as np  # deferred: only this path needs numpy
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    hit = pc.is_in(dictionary, value_set=pa.array(list(values), pa.string()))
    return np.flatnonzero(hit.to_numpy(zero_copy_only=False))


_FEW = 64  # up to this many values are looked up one by one (`_codes_of`), more by `_codes`


class _Strings:
    """A string array as a sequence of Python strings, for `bisect` (reads only what it probes)."""

    def __init__(self, array) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: int) -> str:
        return self.array[i].as_py()


def _codes_of(dictionary, values, in_order: bool | None):
    """The codes of `values` in a dictionary array (those it lacks left out), sorted. More than
    _FEW: `_codes`. A few: by binary search when the dictionary is `in_order`, else by a scan
    that stops at the value — where `_codes` would test every entry of the dictionary (tens of
    milliseconds for the two million sets of a large component)."""
    if len(values) > _FEW:
        return _codes(dictionary, values)
    import bisect  # deferred: only this path needs bisect

    import numpy as np  # deferred: only this path needs numpy
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    out = []
    strings = _Strings(dictionary)
    for v in set(values):
        if in_order:
            i = bisect.bisect_left(strings, v)
            if i < len(strings) and strings[i] == v:
                out.append(i)
        else:
            i = pc.index(dictionary, v).as_py()
            if i >= 0:
                out.append(i)
    return np.array(sorted(out), np.int64)


def _sorted_runs(column):
    """(values, groups) of a column already in order (index_triples is sorted by dst_csid within
    a component): each value's rows are one run, found by comparing neighbours; None when the
    column is not in order."""
    import numpy as np  # deferred: only this path needs numpy
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    if n == 0:
        return pa.array([], pa.string()), (None, np.array([], np.int64), np.array([], np.int64))
    head, tail = column.slice(0, n - 1), column.slice(1)
    if not pc.all(pc.less_equal(head, tail), min_count=0).as_py():
        return None
    starts = np.concatenate(([0], np.flatnonzero(pc.not_equal(head, tail).to_numpy(zero_copy_only=False)) + 1))
    counts = np.diff(np.append(starts, n))
    return column.take(pa.array(starts)), (None, starts, counts)


def _encode(column):
    """(dictionary, codes) of a string column."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column)
    return encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False)


@dataclass
class Component:
    """One component in memory: its triples (src, dst, op), grouped by derived set (`rows`,
    `scope`), and its set dependencies grouped by set per direction (read on first use), all
    as integer codes so a lookup is a few vectorized gathers. A component opened from its
    skeleton files (`open`) has the same parts as memory-mapped arrays (`mapped`)."""

    triples: object  # pyarrow Table[src, dst, op], in file order (op a dictionary column when mapped)
    sets: object  # pyarrow StringArray: the component's dst_csid values, one per code
    by_set: tuple  # _groups of the triples by dst_csid code
    deps: dict[bool, tuple] = field(default_factory=dict)  # forward -> (ids, groups, next codes)
    last_codes: tuple | None = None  # (the set list last asked for, its codes)
    mapped: bool = False
    # `ending`'s last gather per end column: end -> (sets, (rows, their sets' codes, that column))
    last_gather: dict = field(default_factory=dict)
    sets_in_order: bool | None = None  # whether `sets` is sorted (it is when read in the file's order)

    @classmethod
    def load(cls, index: LocalIndex, ccid: str) -> Component:
        table = index._table(L.TRIPLES, ccid, [(L.CCID, ccid)], ("src", "dst", L.OP, L.DST_CSID))
        runs = _sorted_runs(table.column(L.DST_CSID))
        if runs is None:  # files not ordered by set: group by codes instead
            sets, codes = _encode(table.column(L.DST_CSID))
            runs = sets, _groups(codes, len(sets))
        return cls(table.select(["src", "dst", L.OP]).combine_chunks(), *runs)

    def rows(self, sets: Sequence[str] | None) -> int:
        if sets is None:
            return self.triples.num_rows
        return int(self.by_set[2][self._set_codes(sets)].sum())

    def scope(self, sets: Sequence[str] | None):
        table = self.triples if sets is None else self.triples.take(_gather(self.by_set, self._set_codes(sets)))
        return _decoded(table) if self.mapped else table

    def set_codes(self, sets: Sequence[str]):
        """Codes of `sets` in `self.sets`, a few of them by binary search (`_codes_of`)."""
        import pyarrow.compute as pc  # deferred: only this path needs pyarrow

        if len(sets) <= _FEW and self.sets_in_order is None:
            n = len(self.sets)
            self.sets_in_order = n < 2 or bool(pc.all(pc.less_equal(self.sets.slice(0, n - 1), self.sets.slice(1)),
                                                      min_count=0).as_py())
        return _codes_of(self.sets, sets, self.sets_in_order)

    def _set_codes(self, sets: Sequence[str]):
        """Codes of `sets`; a lineage asks twice for the same list (to count, then to read)."""
        last = self.last_codes
        if last is None or last[0] is not sets:
            last = self.last_codes = (sets, _codes(self.sets, sets))
        return last[1]

    def _deps(self, index: LocalIndex, ccid: str, forward: bool) -> tuple:
        """(ids, groups, next codes) of the set dependencies in one direction (read once)."""
        import pyarrow as pa  # deferred: only this path needs pyarrow

        if forward not in self.deps:
            here, there = (L.SRC_CSID, L.DST_CSID) if forward else (L.DST_CSID, L.SRC_CSID)
            table = index._table(L.SETDEPS, ccid, [(L.CCID, ccid)], (here, there))
            ids, codes = _encode(pa.chunked_array(table.column(here).chunks + table.column(there).chunks,
                                                  pa.string()))
            n = table.num_rows
            self.deps[forward] = (ids, _groups(codes[:n], len(ids)), codes[n:])
        return self.deps[forward]

    def set_lineage(self, index: LocalIndex, ccid: str, csid: str, forward: bool) -> set[str]:
        import numpy as np  # deferred: only this path needs numpy
        import pyarrow as pa  # deferred: only this path needs pyarrow

        ids, groups, nxt = self._deps(index, ccid, forward)
        start = _codes(ids, [csid])
        if not len(start):
            return {csid}
        seen = np.zeros(len(ids), bool)
        seen[start] = True
        frontier = start
        while len(frontier):
            reached = unique(nxt[_gather(groups, frontier)])
            frontier = reached[~seen[reached]]
            seen[frontier] = True
        return set(ids.take(pa.array(np.flatnonzero(seen))).to_pylist())

    def ending(self, sets: Sequence[str], items: dict[str, str], end: str):
        """The triples (src, dst, op, src_csid, dst_csid) of `sets` whose `end` ("src" or "dst") is
        one of `items` (item -> its set): the sets' rows gathered by code, that column tested,
        and only the matching rows taken. A source's set is not in these files: src_csid is null
        when `end` is "dst"."""
        import numpy as np  # deferred: only this path needs numpy
        import pyarrow as pa  # deferred: only this path needs pyarrow
        import pyarrow.compute as pc  # deferred: only this path needs pyarrow

        key = tuple(sets)
        last = self.last_gather.get(end)  # one read: another thread may replace it
        if last is not None and last[0] == key:
            rows, row_sets, column = last[1]
        else:  # (a view asks twice for the same sets: an item's consumers, then theirs, in its set)
            codes = self.set_codes(sets)
            rows = _gather(self.by_set, codes)
            row_sets = np.repeat(codes, self.by_set[2][codes])
            column = self.triples.column(end).take(pa.array(rows))
            self.last_gather[end] = (key, (rows, row_sets, column))
        hit = pc.is_in(column, value_set=pa.array(sorted(items), pa.string())).to_numpy(zero_copy_only=False)
        keep = np.flatnonzero(hit)
        found = _decoded(self.triples.take(pa.array(rows[keep])))
        dst_sets = self.sets.take(pa.array(row_sets[keep]))
        if end == "src":
            src_sets = pa.array([items[x] for x in found.column("src").to_pylist()], pa.string())
        else:
            src_sets = pa.nulls(found.num_rows, pa.string())
        return found.append_column(L.SRC_CSID, src_sets).append_column(L.DST_CSID, dst_sets)

    # ------------------------------------------------------------------ skeleton files
    def save(self, index: LocalIndex, ccid: str, folder: str) -> None:
        """Write this component, both directions of its set dependencies included, as files in
        `folder` (written in a sibling folder, then renamed into place: a reader sees all of
        them or none). Triples are stored in set order; integer arrays as numpy files."""
        import shutil  # deferred: shutil imports bz2, lzma and more (15 ms at every start)

        import numpy as np  # deferred: only this path needs numpy
        import pyarrow as pa  # deferred: only this path needs pyarrow
        import pyarrow.compute as pc  # deferred: only this path needs pyarrow

        order, starts, counts = self.by_set
        triples = self.triples
        if order is not None:  # rows grouped by code, not in code order: store them in order
            triples = triples.take(pa.array(order))
        # src and dst stay plain strings: a set's rows then sit together in one stretch of the
        # file, so a lineage pages in its sets' rows only (a dictionary would scatter them)
        triples = pa.table({"src": triples.column("src").combine_chunks(),
                            "dst": triples.column("dst").combine_chunks(),
                            L.OP: pc.dictionary_encode(triples.column(L.OP).combine_chunks())})
        tmp = f"{folder}.tmp-{os.getpid()}-{threading.get_ident()}"
        os.makedirs(tmp)
        try:
            _write_arrow(os.path.join(tmp, "triples.arrow"), triples)
            _write_arrow(os.path.join(tmp, "sets.arrow"), pa.table({"csid": self.sets}))
            np.save(os.path.join(tmp, "set_starts.npy"), starts)
            np.save(os.path.join(tmp, "set_counts.npy"), counts)
            for forward, name in ((False, "back"), (True, "fwd")):
                ids, (d_order, d_starts, d_counts), nxt = self._deps(index, ccid, forward)
                _write_arrow(os.path.join(tmp, f"{name}_ids.arrow"), pa.table({"csid": ids}))
                for part, array in (("order", d_order), ("starts", d_starts), ("counts", d_counts), ("next", nxt)):
                    np.save(os.path.join(tmp, f"{name}_{part}.npy"), _narrow(array))
            os.rename(tmp, folder)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not os.path.isdir(folder):  # another process renamed its copy first: that one serves
                raise

    @classmethod
    def open(cls, folder: str) -> Component:
        """A component from its skeleton files, memory-mapped (nothing is read until used)."""
        import numpy as np  # deferred: only this path needs numpy

        def npy(name):
            return np.load(os.path.join(folder, name), mmap_mode="r")

        deps = {}
        for forward, name in ((False, "back"), (True, "fwd")):
            deps[forward] = (_column(os.path.join(folder, f"{name}_ids.arrow")),
                             (npy(f"{name}_order.npy"), npy(f"{name}_starts.npy"), npy(f"{name}_counts.npy")),
                             npy(f"{name}_next.npy"))
        triples = _read_arrow(os.path.join(folder, "triples.arrow"))
        sets = _column(os.path.join(folder, "sets.arrow"))
        return cls(triples, sets, (None, npy("set_starts.npy"), npy("set_counts.npy")), deps, mapped=True)


def _narrow(array):
    """Row numbers and codes as int32 when they fit (half the file, half the pages touched)."""
    import numpy as np  # deferred: only this path needs numpy

    return array.astype(np.int32) if len(array) == 0 or int(array.max()) < 2**31 else array


def _write_arrow(path: str, table) -> None:
    import pyarrow as pa  # deferred: only this path needs pyarrow

    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))


def _read_arrow(path: str):
    import pyarrow as pa  # deferred: only this path needs pyarrow

    return pa.ipc.open_file(pa.memory_map(path, "r")).read_all()


def _column(path: str):
    """The one column of an Arrow IPC file as an array (mapped, not copied, when one chunk)."""
    column = _read_arrow(path).column(0)
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _decoded(table):
    """`table` with dictionary columns turned back into plain strings."""
    import pyarrow as pa  # deferred: only this path needs pyarrow

    return pa.table({name: col.cast(pa.string()) if pa.types.is_dictionary(col.type) else col
                     for name, col in zip(table.column_names, table.columns, strict=True)})


class ComponentCache:
    """Components kept in memory for repeated lineage, least recently used out first, at most
    `cache_budget()` triples in all. A component is loaded on its second lookup (`touch`)."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, str], Component] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}
        self._lookups: dict[tuple[str, str], int] = {}
        self._triples = 0
        self._lock = threading.Lock()

    def touch(self, index: LocalIndex, ccid: str) -> None:
        """Count one lookup of `ccid` (one lineage query)."""
        key = (index.folders[L.TRIPLES], ccid)
        with self._lock:
            if len(self._lookups) > 100_000:
                self._lookups.clear()
            self._lookups[key] = self._lookups.get(key, 0) + 1

    def get(self, index: LocalIndex, ccid: str) -> Component | None:
        """The component in memory: cached, opened from its skeleton files, loaded now (second
        lookup, size within budget; a large one is written to skeleton files and opened from
        them), or None."""
        key = (index.folders[L.TRIPLES], ccid)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        budget = cache_budget()
        if budget == 0:
            return None
        folder = index.skeleton(ccid)
        if folder is not None and os.path.isdir(folder):
            return self._keep(key, Component.open(folder), 0)
        with self._lock:
            if self._lookups.get(key, 0) < 2:
                return None
        size = index.component_triples(ccid)
        if size < _CACHE_MIN_TRIPLES:
            return None
        if size > LARGE_COMPONENT and folder is not None and _fits(size):
            if not _write_skeleton(index, ccid, folder):
                return None  # the component stays on disk, read as before
            return self._keep(key, Component.open(folder), 0)
        if size > budget:
            return None
        return self._keep(key, Component.load(index, ccid), size)

    def _keep(self, key: tuple[str, str], component: Component, size: int) -> Component:
        """Keep `component` (`size` triples of the budget; mapped ones take none), evicting the
        least recently used beyond the budget."""
        with self._lock:
            if key not in self._items:
                self._items[key] = component
                self._sizes[key] = size
                self._triples += size
            budget = cache_budget()
            while self._triples > budget and self._items:
                old, _ = self._items.popitem(last=False)
                self._triples -= self._sizes.pop(old)
            return self._items.get(key, component)

    def peek(self, index: LocalIndex, ccid: str) -> Component | None:
        """The component if it is in memory or has skeleton files; never loads or writes one
        (a reader of a few rows, such as a node's direct neighbours, gains nothing from that)."""
        key = (index.folders[L.TRIPLES], ccid)
        with self._lock:
            hit = self._items.get(key)
        if hit is not None or cache_budget() == 0:
            return hit
        folder = index.skeleton(ccid)
        if folder is not None and os.path.isdir(folder):
            return self._keep(key, Component.open(folder), 0)
        return None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._sizes.clear()
            self._lookups.clear()
            self._triples = 0

    @property
    def triples(self) -> int:
        return self._triples


CACHE = ComponentCache()


@dataclass(frozen=True)
class LocalIndex:
    """Segment folders (hive-partitioned by bucket) of the index tables."""

    folders: dict[str, str]
    buckets: int
    cache: str | None = None  # the store's folder of skeleton files (module docstring)

    @classmethod
    def of(cls, st) -> LocalIndex | None:
        """The store's index folders, or None when the store is not a local folder."""
        meta = st.meta(L.META_KEY) or {}
        if "buckets" not in meta:
            return None
        folders = {}
        for name in (L.NODES, L.TRIPLES, L.SETDEPS, L.SETS, L.COMPONENTS):
            entry = st.manifest.tables.get(name)
            if entry is None or len(entry.segments) != 1:
                if name in (L.SETS, L.COMPONENTS):  # optional: only for counting without reading
                    continue
                return None
            path = st.storage.file_path(entry.segments[0])
            if path is None:
                return None
            folders[name] = path
        return cls(folders, int(meta["buckets"]), st.storage.file_path(SKELETONS))

    def skeleton(self, ccid: str) -> str | None:
        """The folder of component `ccid`'s skeleton files (existing or not), under a folder
        named after the index's triples segment; None when skeletons are off."""
        if self.cache is None or cache_budget() == 0:
            return None
        import xxhash  # deferred: only this path needs xxhash

        return os.path.join(self.cache, os.path.basename(self.folders[L.TRIPLES].rstrip("/")),
                            xxhash.xxh64_hexdigest(ccid.encode("utf-8")))

    def _table(self, name: str, key: str, where: Sequence[tuple[str, object]], columns: Sequence[str]):
        """The rows (a pyarrow Table) of the one bucket `key` hashes to that match `where`."""
        table = read_buckets(self.folders[name], [L.bucket_of_value(key, self.buckets)], columns, where)
        if table is None:
            import pyarrow as pa  # deferred: only this path needs pyarrow

            return pa.table({c: pa.array([], pa.string()) for c in columns})
        return table

    def _read(self, name: str, key: str, where: Sequence[tuple[str, object]], columns: Sequence[str]) -> list[tuple]:
        """The same rows as tuples."""
        table = self._table(name, key, where, columns)
        cols = [table.column(c).to_pylist() for c in columns]
        return list(zip(*cols, strict=True))

    def _sorted_pays(self, name: str, ccid: str, sort: str) -> bool:
        """Whether reading only the row groups of a few sets (`read_sorted`, pyarrow) beats one
        DuckDB read of the component's rows: when those are more than `_SORTED_READ_ROWS`."""
        return key_rows(self.folders[name], L.bucket_of_value(ccid, self.buckets), L.CCID, ccid,
                        sort) > _SORTED_READ_ROWS

    def locate(self, item: str) -> tuple[str, str] | None:
        """(ccid, csid) of `item`, or None; counts one lookup of its component (ComponentCache)."""
        rows = self._read(L.NODES, item, [("id", item)], (L.CCID, L.CSID))
        if rows:
            CACHE.touch(self, rows[0][0])
        return rows[0] if rows else None

    def node(self, item: str) -> tuple[str, str, str] | None:
        """(ccid, csid, table) of `item`, or None; no lookup is counted (a browser's view of a
        node is not a lineage query)."""
        rows = self._read(L.NODES, item, [("id", item)], (L.CCID, L.CSID, L.TABLE))
        return rows[0] if rows else None

    def component_triples(self, ccid: str) -> int:
        """How many triples component `ccid` has (index_components, else index_sets / the triples)."""
        if L.COMPONENTS in self.folders:
            rows = self._read(L.COMPONENTS, ccid, [(L.CCID, ccid)], (L.N_TRIPLES,))
            if rows:
                return int(rows[0][0])
        return self.scope_rows(ccid, None)

    def set_lineage(self, ccid: str, csid: str, forward: bool) -> set[str]:
        """`csid` and every set it derives from (forward: that derive from it), walked over the
        component's set dependencies: level by level from the row groups of the frontier's sets
        in a large component (backward, while the lineage is small), else read once (one
        bucket, one key range)."""
        import pyarrow as pa  # deferred: only this path needs pyarrow
        import pyarrow.compute as pc  # deferred: only this path needs pyarrow

        cached = CACHE.get(self, ccid)
        if cached is not None:
            return cached.set_lineage(self, ccid, csid, forward)
        here, there = (L.SRC_CSID, L.DST_CSID) if forward else (L.DST_CSID, L.SRC_CSID)
        by_row_groups = here == L.DST_CSID and self._sorted_pays(L.SETDEPS, ccid, here)
        bucket = L.bucket_of_value(ccid, self.buckets)
        deps = None
        seen, frontier = {csid}, [csid]
        while frontier:
            if by_row_groups and len(seen) <= _WALK_SETS:  # the row groups of this level's sets
                found = read_sorted(self.folders[L.SETDEPS], bucket, L.CCID, ccid, here, frontier, (there,))
                found = found.column(there)
            else:  # forward, or a large lineage: the component's dependencies, read once
                if deps is None:
                    deps = self._table(L.SETDEPS, ccid, [(L.CCID, ccid)], (L.SRC_CSID, L.DST_CSID))
                found = deps.column(there).filter(pc.is_in(deps.column(here),
                                                           value_set=pa.array(frontier, pa.string())))
            nxt = set(found.to_pylist()) - seen
            seen |= nxt
            frontier = sorted(nxt)
        return seen

    def next_sets(self, ccid: str, csids: Sequence[str], forward: bool) -> set[str]:
        """The sets one set dependency away from `csids` (forward: the sets that derive from them),
        from the component's skeleton files when it has them, else from index_setdeps."""
        import pyarrow as pa  # deferred: only this path needs pyarrow

        held = CACHE.peek(self, ccid)
        if held is not None:
            ids, groups, nxt = held._deps(self, ccid, forward)
            codes = _codes_of(ids, csids, False)
            if not len(codes):
                return set()
            return set(ids.take(pa.array(unique(nxt[_gather(groups, codes)]))).to_pylist())
        here, there = (L.SRC_CSID, L.DST_CSID) if forward else (L.DST_CSID, L.SRC_CSID)
        if here == L.DST_CSID:  # the file's sort order: only the row groups of these sets
            found = read_sorted(self.folders[L.SETDEPS], L.bucket_of_value(ccid, self.buckets), L.CCID, ccid,
                                here, csids, (there,))
        else:
            found = self._table(L.SETDEPS, ccid, [(L.CCID, ccid), (here, list(csids))], (there,))
        return set(found.column(there).to_pylist())

    def direct(self, ccid: str, items: dict[str, str], forward: bool, source_sets: bool = True):
        """The triples (src, dst, op, src_csid, dst_csid; a pyarrow Table) of component `ccid` whose
        dst (backward) or src (forward) is one of `items` (item -> its set): only the rows of
        those sets (backward) or of the sets one dependency on (forward) are read, from the
        component's skeleton files when it has them, else the row groups of those sets (the
        triples file is sorted by component and derived set). Backward, the skeleton files
        serve only when the sources' sets are not asked for (`source_sets`: src_csid null)."""
        import pyarrow as pa  # deferred: only this path needs pyarrow
        import pyarrow.compute as pc  # deferred: only this path needs pyarrow

        csids = sorted(set(items.values()))
        sets = set(csids) | (self.next_sets(ccid, csids, True) if forward else set())
        held = CACHE.peek(self, ccid) if forward or not source_sets else None
        if held is not None:
            return held.ending(sorted(sets), items, "src" if forward else "dst")
        columns = ("src", "dst", L.OP, L.SRC_CSID, L.DST_CSID)
        table = read_sorted(self.folders[L.TRIPLES], L.bucket_of_value(ccid, self.buckets), L.CCID, ccid,
                            L.DST_CSID, sorted(sets), columns)
        end = "src" if forward else "dst"
        return table.filter(pc.is_in(table.column(end), value_set=pa.array(sorted(items), pa.string())))

    def prefix(self, text: str, limit: int) -> tuple[int, list[tuple[str, str]]]:
        """(how many ids of index_nodes start with `text`, the first `limit` of them in id order
        with their table). Each bucket file is sorted by id, so the row groups whose statistics
        lie wholly inside the prefix are counted from the footer, and only the first and last
        row groups it touches are read."""
        return prefix_rows(self.folders[L.NODES], range(self.buckets), "id", text, limit, ("id", L.TABLE))

    def _scope_filter(self, ccid: str, sets: Sequence[str] | None) -> list[tuple[str, object]]:
        where: list[tuple[str, object]] = [(L.CCID, ccid)]
        if sets is not None:
            where.append((L.DST_CSID, list(sets)))
        return where

    def scope_rows(self, ccid: str, sets: Sequence[str] | None) -> int:
        """How many triples `scope` holds, from the component's rows of index_sets (each set's
        `n_triples` counts the triples whose dst_csid it is); without that table, the filter
        columns of the matching row groups of index_triples are read and counted."""
        import pyarrow as pa  # deferred: only this path needs pyarrow
        import pyarrow.compute as pc  # deferred: only this path needs pyarrow

        cached = CACHE.get(self, ccid)
        if cached is not None:
            return cached.rows(sets)
        if L.SETS in self.folders:
            if sets is not None and len(sets) <= _WALK_SETS and self._sorted_pays(L.SETS, ccid, L.CSID):
                table = read_sorted(self.folders[L.SETS], L.bucket_of_value(ccid, self.buckets), L.CCID, ccid,
                                    L.CSID, sets, (L.N_TRIPLES,))
            else:
                table = self._table(L.SETS, ccid, [(L.CCID, ccid)], (L.CSID, L.N_TRIPLES))
                if sets is not None:
                    table = table.filter(pc.is_in(table.column(L.CSID), value_set=pa.array(list(sets), pa.string())))
            return int(pc.sum(table.column(L.N_TRIPLES)).as_py() or 0) if table.num_rows else 0
        files = bucket_files(self.folders[L.TRIPLES], [L.bucket_of_value(ccid, self.buckets)])
        if not files:
            return 0
        rel = connection().read_parquet(files).filter(condition(self._scope_filter(ccid, sets)))
        return int(rel.aggregate("count(*)").fetchall()[0][0])

    def scope(self, ccid: str, sets: Sequence[str] | None, limit: int | None = None):
        """Triples (src, dst, op) of the component (or of `sets` in it) as a pyarrow Table;
        None when more than `limit`."""
        cached = CACHE.get(self, ccid)
        if cached is not None:
            table = cached.scope(sets)
            return table if limit is None or table.num_rows <= limit else None
        table = self._table(L.TRIPLES, ccid, self._scope_filter(ccid, sets), ("src", "dst", L.OP))
        return table if limit is None or table.num_rows <= limit else None

    def scope_relation(self, con, ccid: str, sets: Sequence[str] | None):
        """The same triples as a DuckDB relation on connection `con` (read lazily from the
        component's bucket file; values reach DuckDB as constants and Arrow tables, never as
        SQL text)."""
        import duckdb  # deferred: only this path needs duckdb
        import pyarrow as pa  # deferred: only this path needs pyarrow

        col = duckdb.ColumnExpression
        cached = CACHE.get(self, ccid)
        if cached is not None:
            return con.from_arrow(cached.scope(sets))
        files = bucket_files(self.folders[L.TRIPLES], [L.bucket_of_value(ccid, self.buckets)])
        if not files:
            return con.from_arrow(pa.table({c: pa.array([], pa.string()) for c in ("src", "dst", L.OP)}))
        rel = con.read_parquet(files).filter(col(L.CCID) == duckdb.ConstantExpression(ccid))
        if sets is not None:
            rel = rel.join(con.from_arrow(pa.table({L.DST_CSID: pa.array(list(sets), pa.string())})),
                           L.DST_CSID, how="semi")
        return rel.project(col("src"), col("dst"), col(L.OP))


SKELETON_BYTES_PER_TRIPLE = 150  # peak memory while a component is loaded and written


def _fits(triples: int) -> bool:
    """Whether loading a component of this many triples to write its skeleton fits in memory."""
    return within_memory(SKELETON_BYTES_PER_TRIPLE * triples, "a lineage skeleton") is None


def _write_skeleton(index: LocalIndex, ccid: str, folder: str) -> bool:
    """Load component `ccid` and write its skeleton files; False when the store folder cannot
    be written (read-only, full)."""
    try:
        Component.load(index, ccid).save(index, ccid, folder)
    except OSError:
        return False
    return True


def write_skeletons(st, threshold: int | None = None) -> int:
    """Write the skeleton files of every component of `st`'s index with more than `threshold`
    triples (default `LARGE_COMPONENT`) that has none, and remove those of older indexes.
    Returns how many were written; 0 when the store is not a local folder or skeletons are off."""
    import shutil  # deferred: shutil imports bz2, lzma and more (15 ms at every start)

    index = LocalIndex.of(st)
    if index is None or index.cache is None or L.COMPONENTS not in index.folders or cache_budget() == 0:
        return 0
    current = os.path.basename(index.folders[L.TRIPLES].rstrip("/"))
    if os.path.isdir(index.cache):
        for name in os.listdir(index.cache):
            if name != current:
                shutil.rmtree(os.path.join(index.cache, name), ignore_errors=True)
    limit = LARGE_COMPONENT if threshold is None else threshold
    files = bucket_files(index.folders[L.COMPONENTS], range(index.buckets))
    if not files:
        return 0
    large = (connection().read_parquet(files).filter(f"{L.N_TRIPLES} > {int(limit)}")
             .project(f"{L.CCID}, {L.N_TRIPLES}").fetchall())
    written = 0
    with progress.step("lineage skeletons", total=len(large)) as step:
        for ccid, n_triples in large:
            folder = index.skeleton(ccid)
            if folder is not None and not os.path.isdir(folder) and _fits(n_triples):
                if not _write_skeleton(index, ccid, folder):
                    return written  # lineage reads the index files instead
                written += 1
            step.advance(1)
    return written


def carry_skeletons(st, old_triples_folder: str, changed: Sequence[str]) -> int:
    """Move the skeleton files of the previous index (whose index_triples segment was
    `old_triples_folder`) to `st`'s current index, except those of the components in `changed`
    (ccids, old and new): an incremental update keeps every other component's rows as they were,
    so its skeleton still describes it. Returns how many were moved; `write_skeletons` then writes
    the missing ones and removes the rest."""
    import xxhash  # deferred: only this path needs xxhash

    index = LocalIndex.of(st)
    if index is None or index.cache is None or cache_budget() == 0:
        return 0
    old = os.path.join(index.cache, os.path.basename(old_triples_folder.rstrip("/")))
    new = os.path.join(index.cache, os.path.basename(index.folders[L.TRIPLES].rstrip("/")))
    if old == new or not os.path.isdir(old):
        return 0
    gone = {xxhash.xxh64_hexdigest(c.encode("utf-8")) for c in changed}
    os.makedirs(new, exist_ok=True)
    moved = 0
    for name in os.listdir(old):
        if name in gone or ".tmp-" in name:
            continue
        try:
            os.rename(os.path.join(old, name), os.path.join(new, name))
            moved += 1
        except OSError:
            continue  # written again by write_skeletons
    return moved
