"""Lookups into a store's Parquet files, kept in memory across commits by its one writer.

A committed (or staged) segment file is never written again: a commit writes new files, named by
its version and a random suffix, and leaves the old ones to the manifests of earlier versions
(store/storage.py). So what a writer learnt from one file — the rows it holds under each value of
a column, the set of its keys, its row count — stays true for as long as the file exists, whoever
commits meanwhile: `KeptRows` keeps it by the file's path, and a lookup reads only the files it
has not read before, up to MAX_ROWS rows kept (past them, the lookup scans as before). Which files
a lookup reads comes from the manifest of the transaction or version at hand, never from here: a
commit by another writer lists other files, and those are read when first asked for. `retain`
drops what was kept of the files a manifest no longer lists, and of a file that changed on disk
(size or modification time) since it was read. A file its writer wrote from an Arrow table it
hands over (`wrote`) is indexed from that table, not read back, by the lookups of the next commit.

The server's commits' worker keeps one per store (strata/serve/fold.py), for the OpenLineage
ingest (store/interop/ol_commit.py): without it, each commit scans every segment of the refs,
events and core tables again, a cost that grows with the store, to find the few rows the new
events touch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow.parquet as pq

_Signature = tuple[int, int]  # size, modification time (ns)
Convert = Callable[[tuple], tuple]  # a row as read -> the row kept (a module-level function: part of the key)


def _signature(path: str) -> _Signature | None:
    try:
        s = os.stat(path)
    except OSError:
        return None
    return s.st_size, s.st_mtime_ns


# rows (summed over the indexes) a KeptRows holds at most: up to about 400 bytes each (a vertex's
# attributes), so a few hundred MB; a lookup that would pass it is left to the caller's scan
# (`fits`): an OpenLineage store of about 50,000 events fits, a bigger one is scanned in part
MAX_ROWS = 1_000_000


class KeptRows:
    """Per-file row indexes of immutable Parquet files (module docstring)."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._rows: dict[tuple[str, str, tuple[str, ...], Convert | None], dict[Any, list[tuple]]] = {}
        self._keys: dict[tuple[str, tuple[str, ...]], frozenset] = {}
        self._counts: dict[str, int] = {}
        self._seen: dict[str, _Signature | None] = {}
        # path -> the Arrow table it was written from (`wrote`), kept until the retain after next:
        # the lookups of the commit after the one that wrote it index it from here
        self._written: dict[str, Any] = {}
        self._fresh: set[str] = set()  # the files written since the last retain
        self.reads = 0  # files read (for tests: a second lookup reads none)

    def _note(self, path: str) -> None:
        if path not in self._seen:
            self._seen[path] = _signature(path)
        self.reads += 1

    def wrote(self, path: str, table: Any) -> None:
        """`path` was just written with this pyarrow Table's rows (the file as written: the same
        columns and types): its next lookups index them without reading the file."""
        self._written[path] = table
        self._fresh.add(path)
        self._counts[path] = table.num_rows
        self._seen[path] = _signature(path)

    def _read(self, path: str, columns: list[str]):
        """These columns of a file: of the table it was written from, while that is kept."""
        table = self._written.get(path)
        return pq.read_table(path, columns=columns) if table is None else table.select(columns)

    def _index(self, path: str, column: str, select: tuple[str, ...],
               convert: Convert | None = None) -> dict[Any, list[tuple]]:
        """value of `column` -> the rows (`select` columns, then `convert`ed) of the file that hold it."""
        key = (path, column, select, convert)
        index = self._rows.get(key)
        if index is None:
            self._note(path)
            names = list(dict.fromkeys((column, *select)))
            table = self._read(path, names)
            index = {}
            rows = zip(*(table.column(c).to_pylist() for c in select), strict=True) if select else ()
            if convert is not None:
                rows = map(convert, rows)
            for value, row in zip(table.column(column).to_pylist(), rows, strict=True):
                index.setdefault(value, []).append(row)
            self._rows[key] = index
        return index

    def matching(self, files: Sequence[str], column: str, values: Iterable[Any],
                 select: Sequence[str], convert: Convert | None = None) -> list[tuple]:
        """Rows (`select` columns) of these files whose `column` is one of `values`; with
        `convert`, each row as it returns it, converted once when the file is read (the rows are
        shared by every lookup that returns them: not to be changed)."""
        values = {v for v in values if v is not None}
        out: list[tuple] = []
        if not values:
            return out
        for f in files:
            index = self._index(f, column, tuple(select), convert)
            for v in index.keys() & values:  # in C, over the smaller of the two
                out += index[v]
        return out

    def holding(self, files: Sequence[str], column: str, values: Iterable[Any]) -> dict[str, set]:
        """file -> the `values` its `column` holds, of the files that hold any."""
        values = set(values)
        out: dict[str, set] = {}
        for f in files:
            hit = self.keys(f, (column,)) & values
            if hit:
                out[f] = set(hit)
        return out

    def keys(self, path: str, columns: Sequence[str]) -> frozenset:
        """The values of one column (or the tuples of several) that the file holds."""
        key = (path, tuple(columns))
        keys = self._keys.get(key)
        if keys is None:
            self._note(path)
            table = self._read(path, list(columns))
            cols = [table.column(c).to_pylist() for c in columns]
            keys = self._keys[key] = frozenset(cols[0] if len(cols) == 1 else zip(*cols, strict=True))
        return keys

    def num_rows(self, path: str) -> int:
        n = self._counts.get(path)
        if n is None:
            self._note(path)
            n = self._counts[path] = pq.ParquetFile(path).metadata.num_rows
        return n

    def adopt(self, path: str, sources: Sequence[str]) -> None:
        """`path` was just written with the rows of `sources`, one after another (a merge of
        segments): each index kept of any of them is made of it from theirs (reading a source
        not read yet: the segment its commit just wrote), without reading `path`."""
        within = set(sources)
        rows = {k[1:] for k in self._rows if k[0] in within}
        keys = {c for (f, c) in self._keys if f in within}
        if not rows and not keys:
            return
        for column, select, convert in rows:
            parts = [self._index(src, column, select, convert) for src in sources]
            merged = dict(parts[0])
            for part in parts[1:]:
                both = merged.keys() & part.keys()
                merged.update(part)
                for v in both:  # rows under the same value in several sources
                    merged[v] = [r for src in parts if v in src for r in src[v]]
            self._rows[(path, column, select, convert)] = merged
        for columns in keys:
            self._keys[(path, columns)] = frozenset().union(*(self.keys(src, columns) for src in sources))
        self._counts[path] = sum(self.num_rows(f) for f in sources)
        self._note(path)
        self.reads -= 1  # noted, not read
        self._drop(within)  # the merge left them out of the table
        if self.held() > self.max_rows:
            self._drop({path})

    def _drop(self, files: set[str]) -> None:
        self._rows = {k: v for k, v in self._rows.items() if k[0] not in files}
        self._keys = {k: v for k, v in self._keys.items() if k[0] not in files}

    def held(self) -> int:
        """Rows held, summed over the indexes."""
        return sum(self._counts.get(k[0], 0) for k in (*self._rows, *self._keys))

    def fits(self, files: Sequence[str], column: str | tuple[str, ...], select: Sequence[str] = (),
             convert: Convert | None = None) -> bool:
        """Whether indexing these files for a lookup (`matching`; with a tuple of columns,
        `keys`) keeps the rows held within `max_rows`; when not, the caller scans them instead
        (what is kept stays)."""
        missing = [f for f in files if ((f, column) not in self._keys if isinstance(column, tuple)
                                        else (f, column, tuple(select), convert) not in self._rows)]
        if not missing:
            return True
        return self.held() + sum(self.num_rows(f) for f in missing) <= self.max_rows

    def retain(self, files: Iterable[str]) -> None:
        """Keep only what was read from these files, and of them only those unchanged on disk."""
        live = {f for f in files if f in self._seen and _signature(f) == self._seen[f]}
        self._seen = {f: s for f, s in self._seen.items() if f in live}
        self._rows = {k: v for k, v in self._rows.items() if k[0] in live}
        self._keys = {k: v for k, v in self._keys.items() if k[0] in live}
        self._counts = {k: v for k, v in self._counts.items() if k in live}
        self._written = {k: v for k, v in self._written.items() if k in live and k in self._fresh}
        self._fresh = set()

    def __len__(self) -> int:
        return len(self._seen)
