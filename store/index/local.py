"""Driver-side point reads of the index tables with pyarrow (local stores only).

A CS/CC query reads a handful of small, key-selected slices of the index; as Spark jobs each
costs job scheduling (tenths of a second on a busy machine). When the store is on the local
file system, the same bucket files are read here instead: pyarrow opens each file's footer,
skips every row group whose min/max statistics exclude the key (the files are sorted by it),
and returns the few matching rows. Semantics are those of the Spark path; anything larger
than τ still goes to Spark (store/lineage.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from store.index import layout as L


@dataclass(frozen=True)
class LocalIndex:
    """Segment folders (hive-partitioned by bucket) of the index tables."""

    folders: dict[str, str]

    @classmethod
    def of(cls, st) -> LocalIndex | None:
        """The store's index folders, or None when the store is not a local folder."""
        folders = {}
        for name in (L.NODES, L.TRIPLES, L.SETDEPS):
            entry = st.manifest.tables.get(name)
            if entry is None or len(entry.segments) != 1:
                return None
            path = st.storage.local_path(entry.segments[0])
            if path is None:
                return None
            folders[name] = path
        return cls(folders)

    def _read(self, name: str, flt, columns: Sequence[str]) -> list[tuple]:
        import pyarrow.dataset as ds

        data = ds.dataset(self.folders[name], format="parquet", partitioning="hive")
        table = data.to_table(columns=list(columns), filter=flt)
        cols = [table.column(c).to_pylist() for c in columns]
        return list(zip(*cols, strict=True))

    def locate(self, item: str) -> tuple[str, str] | None:
        import pyarrow.dataset as ds

        rows = self._read(L.NODES, ds.field("id") == item, (L.CCID, L.CSID))
        return rows[0] if rows else None

    def set_parents(self, ccid: str, frontier: Sequence[str], forward: bool) -> list[str]:
        import pyarrow.dataset as ds

        here, there = (L.SRC_CSID, L.DST_CSID) if forward else (L.DST_CSID, L.SRC_CSID)
        flt = (ds.field(L.CCID) == ccid) & ds.field(here).isin(list(frontier))
        return [r[0] for r in self._read(L.SETDEPS, flt, (there,))]

    def scope(self, ccid: str, sets: Sequence[str] | None, limit: int) -> list[tuple] | None:
        """Triples of the component (or of `sets` in it); None when more than `limit`."""
        import pyarrow.dataset as ds

        flt = ds.field(L.CCID) == ccid
        if sets is not None:
            flt = flt & ds.field(L.DST_CSID).isin(list(sets))
        rows = self._read(L.TRIPLES, flt, ("src", "dst", L.OP))
        return rows if len(rows) <= limit else None
