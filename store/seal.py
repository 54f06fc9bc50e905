"""Tamper evidence at commit: a BLAKE2b Merkle root per table per commit, chained from commit to
commit (`commit_integrity`, called by `storage.Transaction.commit`; store/verify.py checks it).


What a commit records (the manifest's ``integrity`` object, docs/verify.md):

* for each Parquet file the commit adds, a digest over its bytes cut into leaves at the file's
  row-group boundaries (leaf i: row group i's column chunks, the first one with the leading magic;
  the last leaf: page indexes and footer), with each row group's row count; the file's digest
  is BLAKE2b over its size and the leaves, so one edited value changes one leaf and the file's
  digest, and a removed row group changes the row counts. A small commit keeps them in its
  manifest; a larger one writes them to a digests file (``_strata/digests/<version>-<id>.json``)
  whose BLAKE2b the manifest holds;
* per table it changed, ``root = H(table, version, previous root of the table, segments, file
  digests)``: the table's chain;
* ``prev``: the previous commit's root, and ``root``: BLAKE2b over ``prev`` and the whole
  manifest text (catalog, metadata, message, time, every table's segments and roots) without
  ``root`` itself. Editing any part of a manifest, removing one or replacing it breaks the chain
  at that version or the next.

Hashing reads the bytes of the files the commit wrote (local stores; the page cache usually still
holds them) and their footers; nothing is decoded. A store on a Hadoop URI chains its manifests
but records no file digests (reading the files back through the JVM costs more than the commit).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from store.segments import parquet_files

SCHEME = "blake2b-256/1"
LEAF_BYTES = 16  # row-group leaves; file digests and roots are 32 bytes


def hash_parts(*parts: bytes | str, size: int = 32) -> str:
    h = hashlib.blake2b(digest_size=size)
    for p in parts:
        b = p.encode("utf-8") if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def leaf_digest(buf, start: int, end: int) -> str:
    return hashlib.blake2b(buf[start:end], digest_size=LEAF_BYTES).hexdigest()


def row_groups(path: str, size: int) -> list[tuple[int, int]] | None:
    """(start offset, rows) of each row group, and the end of the last one as a final (end, -1);
    None when the file is not readable Parquet or its chunks are not laid out in order."""
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    try:
        md = pq.ParquetFile(path).metadata
    except Exception:  # noqa: BLE001 - any unreadable file is hashed whole, and reported when it differs
        return None
    out: list[tuple[int, int]] = []
    end = 4
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        starts, ends = [], []
        for j in range(rg.num_columns):
            c = rg.column(j)
            s = c.dictionary_page_offset if c.has_dictionary_page and c.dictionary_page_offset else c.data_page_offset
            starts.append(s)
            ends.append(s + c.total_compressed_size)
        if not starts:
            continue
        start = 0 if i == 0 else min(starts)
        if start < (0 if i == 0 else end) or max(ends) > size:
            return None
        out.append((start, rg.num_rows))
        end = max(ends)
    out.append((end, -1))
    return out


@dataclass(frozen=True)
class FileDigest:
    """One file's digest: its size, rows, per-row-group (rows, leaf) and footer leaf."""

    bytes: int
    rows: int
    digest: str
    groups: tuple[tuple[int, str], ...]
    footer: str

    def to_json(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "rows": self.rows, "digest": self.digest,
                "groups": [list(g) for g in self.groups], "footer": self.footer}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FileDigest:
        return cls(int(d["bytes"]), int(d["rows"]), d["digest"],
                   tuple((int(r), h) for r, h in d.get("groups", ())), d.get("footer", ""))


def digest_file(path: str) -> FileDigest:
    """The digest of one Parquet file (see the module docstring)."""
    size = os.path.getsize(path)
    bounds = row_groups(path, size)
    with open(path, "rb") as fh:
        if size == 0:
            buf = b""
        else:
            buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            view = memoryview(buf)
            if bounds is None:  # not Parquet we can cut: one leaf
                groups: tuple[tuple[int, str], ...] = ()
                footer = leaf_digest(view, 0, size)
            else:
                groups = tuple((rows, leaf_digest(view, s, bounds[i + 1][0]))
                               for i, (s, rows) in enumerate(bounds[:-1]))
                footer = leaf_digest(view, bounds[-1][0], size)
            view.release()
        finally:
            if size:
                buf.close()
    rows = sum(r for r, _ in groups)
    digest = hash_parts("strata-file/1", str(size), *[f"{r}:{h}" for r, h in groups], footer)
    return FileDigest(size, rows, digest, groups, footer)


# ---------------------------------------------------------------------------- commit
def segment_files(storage, rel: str) -> list[str]:
    """The Parquet files of segment ``rel`` of a local store, relative to the store root."""
    folder = storage.file_path(rel)
    root = storage.file_path("")
    return [os.path.relpath(p, root).replace(os.sep, "/") for p in parquet_files(folder)]


def visible_files(storage, rel: str) -> list[str]:
    """Every file a reader of segment ``rel`` may read (names not starting with ``.`` or ``_``,
    whatever their extension: Spark reads them all), relative to the store root."""
    root = storage.file_path("")
    out = []
    for dirpath, dirnames, filenames in os.walk(storage.file_path(rel)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        out += [os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                for f in sorted(filenames) if not f.startswith((".", "_"))]
    return out


def canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def manifest_root(body: dict[str, Any]) -> str:
    """The commit root of a manifest body (its parsed JSON): BLAKE2b over prev and the body
    without ``integrity.root``."""
    body = json.loads(json.dumps(body))
    integ = body.get("integrity") or {}
    integ.pop("root", None)
    return hash_parts("strata-commit/1", str(integ.get("prev") or ""), canonical(body))


def table_root(name: str, version: int, prev: str | None, segments: Sequence[str],
               files: dict[str, dict[str, Any]]) -> str:
    return hash_parts("strata-table/1", name, str(version), prev or "", *segments,
              *[f"{p}={files[p].get('digest', '')}" for p in sorted(files)])


DIGESTS_DIR = "_strata/digests"
INLINE_DIGESTS = 32_000  # characters of digests kept in the manifest itself; more go to a digests file


def commit_integrity(storage, base, version: int, tables: dict,
                     changed: Iterable[str]) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """The ``integrity`` object of a new commit (without its ``root``: `manifest_root`), and the
    digests file to write before the manifest: (path relative to the root, its text), or None
    when the commit recorded no file.

    The per-file digests of a small commit stay in the manifest (``files``); a larger commit's go
    to a digests file (an index commit records thousands of row-group leaves, and every command
    reads the newest manifest), whose path and BLAKE2b the manifest keeps (``digests``). The
    table roots are computed over the digests either way."""
    prev_integ = base.integrity or {}
    prev_tables = prev_integ.get("tables", {}) if prev_integ else {}
    out_tables: dict[str, Any] = {}
    recorded: dict[str, dict[str, Any]] = {}
    for name in sorted(changed):
        entry = tables[name]
        old = base.tables.get(name)
        new_segments = [s for s in entry.segments if old is None or s not in old.segments]
        files: dict[str, dict[str, Any]] = {}
        if storage.on_this_machine:
            for seg in new_segments:
                for rel in segment_files(storage, seg):
                    files[rel] = digest_file(storage.file_path(rel)).to_json()
        prev_root = (prev_tables.get(name) or {}).get("root")
        out_tables[name] = {
            "segments": new_segments,
            "files": len(files),
            "root": table_root(name, version, prev_root, entry.segments, files),
        }
        if files:
            recorded[name] = files
        if not storage.on_this_machine:
            out_tables[name]["unhashed"] = "store not local: files are listed by segment only"
    for name, t in prev_tables.items():  # unchanged tables keep their root
        if name not in out_tables and name in tables:
            out_tables[name] = {"root": t["root"]}
    out: dict[str, Any] = {"scheme": SCHEME, "prev": prev_integ.get("root") if prev_integ else None,
                           "tables": out_tables}
    if not recorded:
        return out, None
    text = canonical({"version": version, "tables": recorded})
    if len(text) <= INLINE_DIGESTS:  # a small commit: no second file to write and fsync
        out["files"] = recorded
        return out, None
    rel = f"{DIGESTS_DIR}/{version:08d}-{uuid.uuid4().hex[:12]}.json"
    out["digests"] = {"file": rel, "blake2b": hash_parts(text)}
    return out, (rel, text)
