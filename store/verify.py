"""Tamper evidence checked (docs/verify.md): `verify` recomputes every commit's file digests,
table roots and chain (store/seal.py records them); `verify_rows` checks a chosen set of row
groups only (`strata verify ITEM`)."""

from __future__ import annotations

import json
import mmap
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from store.seal import (
    FileDigest,
    digest_file,
    hash_parts,
    leaf_digest,
    manifest_root,
    row_groups,
    visible_files,
)
from store.storage import MANIFEST_DIR, TABLES_DIR

SEGMENT_VERSION = re.compile(r"^v(\d{8})-")


@dataclass
class Problem:
    kind: str  # changed | removed | added | manifest | chain
    table: str | None
    version: int | None
    file: str | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "table": self.table, "version": self.version, "file": self.file,
                "detail": self.detail}


@dataclass
class Report:
    versions: int = 0
    head: int = 0
    root: str | None = None
    problems: list[Problem] = field(default_factory=list)
    unhashed: list[int] = field(default_factory=list)  # versions committed without hashes
    files: int = 0
    bytes: int = 0
    row_groups: int = 0  # row groups checked (verify ITEM checks some of each file)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "versions": self.versions, "head": self.head, "root": self.root,
                "problems": [p.to_json() for p in self.problems], "unhashed": self.unhashed,
                "checked": {"files": self.files, "bytes": self.bytes, "row_groups": self.row_groups},
                "notes": self.notes}


def _describe(recorded: FileDigest, now: FileDigest) -> str:
    """What differs between a file's recorded digest and its current one, by row group."""
    if not now.groups and recorded.groups:
        return f"no longer readable as the committed Parquet file ({now.bytes} bytes, was {recorded.bytes})"
    parts = []
    start = 0
    for i, (rows, leaf) in enumerate(recorded.groups):
        if i >= len(now.groups):
            parts.append(f"row group {i} (rows {start}-{start + rows - 1}) removed")
        elif now.groups[i][0] != rows:
            parts.append(f"row group {i} (rows {start}-{start + rows - 1}) now has {now.groups[i][0]} rows")
        elif now.groups[i][1] != leaf:
            parts.append(f"row group {i} (rows {start}-{start + rows - 1}) changed")
        start += rows
    for i in range(len(recorded.groups), len(now.groups)):
        parts.append(f"row group {i} ({now.groups[i][0]} rows) added")
    if not parts:
        parts.append("footer changed")
    rows = "" if now.rows == recorded.rows else f"; {now.rows} rows, committed {recorded.rows}"
    return ", ".join(parts) + rows


def _segment_version(rel: str) -> int | None:
    m = SEGMENT_VERSION.match(rel.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def _load(storage, v: int, rep: Report) -> dict[str, Any] | None:
    rel = f"{MANIFEST_DIR}/{v:08d}.json"
    try:
        body = json.loads(storage.fs.read_text(rel))
    except ValueError as e:
        rep.problems.append(Problem("manifest", None, v, rel, f"not valid JSON ({e})"))
        return None
    if not isinstance(body, dict) or body.get("version") != v:
        rep.problems.append(Problem("manifest", None, v, rel,
                                    f"holds version {body.get('version') if isinstance(body, dict) else None}"))
        return None
    return body


def check_chain(storage, upto: int | None = None) -> tuple[Report, dict[int, dict[str, Any]]]:
    """Read every manifest (up to version ``upto``) and check their roots and chain; the parsed
    bodies by version. Reads no table file."""
    rep = Report()
    versions = [v for v in storage.versions() if upto is None or v <= upto]
    rep.versions = len(versions)
    rep.head = versions[-1] if versions else 0
    bodies: dict[int, dict[str, Any]] = {}
    expected = 1
    prev_root: str | None = None
    seen_hashed = False
    for v in versions:
        rel = f"{MANIFEST_DIR}/{v:08d}.json"
        if v != expected:
            missing = f"{expected}" if v == expected + 1 else f"{expected}-{v - 1}"
            rep.problems.append(Problem("chain", None, expected, None,
                                        f"version {missing} missing: a commit was removed from the chain"))
            prev_root = "<missing>"
        expected = v + 1
        body = _load(storage, v, rep)
        if body is None:
            prev_root = "<unreadable>"
            continue
        bodies[v] = body
        integ = body.get("integrity")
        if not integ:
            rep.unhashed.append(v)
            if seen_hashed:
                rep.problems.append(Problem("manifest", None, v, rel,
                                            "has no hashes, but earlier versions have: its hashes were removed"))
            prev_root = None
            continue
        seen_hashed = True
        root = manifest_root(body)
        if integ.get("root") != root:
            rep.problems.append(Problem("manifest", None, v, rel,
                                        "edited after it was committed: its root does not match its contents"))
        if integ.get("prev") != prev_root and prev_root not in ("<missing>", "<unreadable>"):
            rep.problems.append(Problem("chain", None, v, rel,
                                        f"does not follow version {v - 1}: the previous manifest was replaced "
                                        "or rewritten"))
        prev_root = integ.get("root")
    rep.root = prev_root if prev_root and not prev_root.startswith("<") else None
    return rep, bodies


def _orphans(storage, head: int, rep: Report) -> None:
    """Segment folders of versions after the head (local stores): commits removed from the end
    of the chain."""
    later: dict[int, list[str]] = {}
    base = storage.file_path(TABLES_DIR)
    for dirpath, dirnames, _ in os.walk(base):
        for d in list(dirnames):
            sv = _segment_version(d)
            if sv is None:
                continue
            dirnames.remove(d)  # a segment: do not walk into it
            if sv > head:
                rel = os.path.relpath(os.path.join(dirpath, d), storage.file_path("")).replace(os.sep, "/")
                later.setdefault(sv, []).append(rel)
        dirnames.sort()
    for sv, segs in sorted(later.items()):
        table = segs[0][len(TABLES_DIR) + 1:].rsplit("/", 1)[0]
        rep.problems.append(Problem("chain", table, sv, segs[0],
                                    f"{len(segs)} segment folder(s) of version {sv} exist but the chain ends at "
                                    f"version {head}: later commits were removed (or a writer was killed "
                                    "mid-commit)"))


def recorded_files(storage, bodies: dict[int, dict[str, Any]],
                   rep: Report) -> dict[str, tuple[str, int, dict[str, Any]]]:
    """Every file the hashed commits recorded: relative path -> (table, version, digest JSON),
    from each commit's digests file (checked against the BLAKE2b its manifest holds; a missing
    or edited one is a `manifest` problem)."""
    out = {}
    for v, body in sorted(bodies.items()):
        integ = body.get("integrity") or {}
        tables = integ.get("files") or {}
        ref = integ.get("digests")
        if ref:
            try:
                text = storage.fs.read_text(ref["file"])
            except OSError:
                rep.problems.append(Problem("manifest", None, v, ref["file"], "the commit's digests file is missing"))
                continue
            if hash_parts(text) != ref.get("blake2b"):
                rep.problems.append(Problem("manifest", None, v, ref["file"],
                                            "the commit's digests file was edited after it was committed"))
                continue
            tables = json.loads(text).get("tables", {})
        for name, files in tables.items():
            for rel, d in files.items():
                out[rel] = (name, v, d)
    return out


def verify(storage, expect_root: str | None = None, upto: int | None = None) -> Report:
    """Check the whole store (as of version ``upto``): the chain, then every recorded file's
    digest, and the segment folders for files nobody committed."""
    rep, bodies = check_chain(storage, upto)
    if expect_root and rep.root != expect_root:
        rep.problems.append(Problem("chain", None, rep.head, None,
                                    f"head root {rep.root} is not the expected {expect_root}: the chain was "
                                    "truncated or replaced"))
    if not storage.on_this_machine:
        rep.notes.append("store on a Hadoop URI: manifests and chain checked; file contents are not hashed")
        return rep
    if upto is None:
        _orphans(storage, rep.head, rep)
    files = recorded_files(storage, bodies, rep)
    hashed_segments: dict[str, tuple[str, int]] = {}
    for v, body in bodies.items():
        for name, t in ((body.get("integrity") or {}).get("tables") or {}).items():
            for seg in t.get("segments") or ():
                hashed_segments[seg] = (name, v)
    for rel, (name, v, d) in sorted(files.items()):
        path = storage.file_path(rel)
        recorded = FileDigest.from_json(d)
        if not os.path.exists(path):
            rep.problems.append(Problem("removed", name, v, rel,
                                        f"file missing ({recorded.rows} rows committed)"))
            continue
        now = digest_file(path)
        rep.files += 1
        rep.bytes += now.bytes
        rep.row_groups += len(now.groups)
        if now.digest != recorded.digest:
            rep.problems.append(Problem("changed", name, v, rel, _describe(recorded, now)))
    untrusted = {p.version for p in rep.problems if p.kind == "manifest"}  # already reported
    for seg, (name, v) in sorted(hashed_segments.items()):
        if v in untrusted or not os.path.isdir(storage.file_path(seg)):
            continue  # its files are reported as removed
        for rel in visible_files(storage, seg):
            if rel not in files:
                rep.problems.append(Problem("added", name, v, rel, "file in a committed segment that no commit "
                                            "recorded: readers of the table read its rows"))
    if rep.unhashed:
        rep.notes.append(_unhashed_note(rep.unhashed))
    return rep


def _unhashed_note(versions: list[int]) -> str:
    span = f"{versions[0]}" if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"
    return (f"version(s) {span} were committed before Strata hashed its commits: their manifests and files "
            "cannot be checked (segments they wrote are not covered)")


def verify_rows(storage, tables: dict[str, Sequence[str]], ids: set[str], upto: int | None = None) -> Report:
    """Check the chain, and in each table of ``tables`` (name -> id columns) only the row groups
    whose Parquet statistics say they may hold one of ``ids``, plus each such file's footer.

    A row group is checked by hashing its bytes against the leaf its commit recorded; a file
    that was replaced, removed or rewritten around the rows is reported like `verify` does."""
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    rep, bodies = check_chain(storage, upto)
    if not storage.on_this_machine:
        rep.notes.append("store on a Hadoop URI: manifests and chain checked; file contents are not hashed")
        return rep
    files = recorded_files(storage, bodies, rep)
    head = bodies.get(rep.head) or {}
    lo, hi = (min(ids), max(ids)) if ids else ("", "")
    for name, cols in tables.items():
        entry = (head.get("tables") or {}).get(name)
        if entry is None:
            continue
        for seg in entry.get("segments", ()):
            for rel in visible_files(storage, seg) if os.path.isdir(storage.file_path(seg)) else ():
                if rel not in files:
                    sv = _segment_version(seg)
                    if sv in rep.unhashed or sv in {p.version for p in rep.problems if p.kind == "manifest"}:
                        continue
                    rep.problems.append(Problem("added", name, sv, rel, "file in a committed segment that no "
                                                "commit recorded"))
                    continue
                _, v, d = files[rel]
                recorded = FileDigest.from_json(d)
                path = storage.file_path(rel)
                try:
                    md = pq.ParquetFile(path).metadata
                except Exception:  # noqa: BLE001 - unreadable: the whole-file check names it
                    md = None
                wanted = [i for i in range(md.num_row_groups) if _may_hold(md.row_group(i), cols, ids, lo, hi)] \
                    if md is not None else None
                _check_groups(path, rel, name, v, recorded, wanted, rep)
            if not os.path.isdir(storage.file_path(seg)):
                sv = _segment_version(seg)
                if sv not in rep.unhashed:
                    rep.problems.append(Problem("removed", name, sv, seg, "segment folder missing"))
    if rep.unhashed:
        rep.notes.append(_unhashed_note(rep.unhashed))
    return rep


def _may_hold(rg, cols: Sequence[str], ids: set[str], lo: str, hi: str) -> bool:
    for j in range(rg.num_columns):
        c = rg.column(j)
        if c.path_in_schema not in cols:
            continue
        st = c.statistics
        if st is None or not st.has_min_max:
            return True
        mn, mx = st.min, st.max
        if isinstance(mn, bytes):
            mn, mx = mn.decode("utf-8", "replace"), mx.decode("utf-8", "replace")
        if mx < lo or mn > hi:
            continue
        if any(mn <= i <= mx for i in ids):
            return True
    return False


def _check_groups(path: str, rel: str, name: str, v: int, recorded: FileDigest, wanted: list[int] | None,
                  rep: Report) -> None:
    """Hash row groups ``wanted`` (None: the whole file) and the footer of one file."""
    if not os.path.exists(path):
        rep.problems.append(Problem("removed", name, v, rel, f"file missing ({recorded.rows} rows committed)"))
        return
    size = os.path.getsize(path)
    bounds = row_groups(path, size)
    if wanted is None or bounds is None or len(bounds) - 1 != len(recorded.groups) or size != recorded.bytes:
        now = digest_file(path)
        rep.files += 1
        rep.bytes += now.bytes
        if now.digest != recorded.digest:
            rep.problems.append(Problem("changed", name, v, rel, _describe(recorded, now)))
        return
    rep.files += 1
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        view = memoryview(buf)
        bad = []
        footer = leaf_digest(view, bounds[-1][0], size)
        rep.bytes += size - bounds[-1][0]
        for i in wanted:
            rep.row_groups += 1
            rep.bytes += bounds[i + 1][0] - bounds[i][0]
            if (bounds[i][1], leaf_digest(view, bounds[i][0], bounds[i + 1][0])) != recorded.groups[i]:
                bad.append(i)
        view.release()
    if bad or footer != recorded.footer:
        start = [sum(r for r, _ in recorded.groups[:i]) for i in range(len(recorded.groups) + 1)]
        parts = [f"row group {i} (rows {start[i]}-{start[i + 1] - 1}) changed" for i in bad]
        if footer != recorded.footer:
            parts.append("footer changed")
        rep.problems.append(Problem("changed", name, v, rel, ", ".join(parts)))


# Core tables and the columns that hold the ids a lineage consists of.
LINEAGE_COLUMNS = {"edges": ("src", "dst", "process"), "vertices": ("id",), "elements": ("id",),
                   "parents": ("id",), "ancestors": ("id",), "complex": ("vertex",)}


def verify_lineage(st, item: str, forward: bool = False) -> tuple[Report, Any]:
    """Check the rows one item's lineage rests on (`verify_rows` over the core tables, for the
    item, its ancestors or descendants and the operators between them); (report, lineage)."""
    from store.lineage import lineage  # deferred: lineage loads the engines only for `verify ITEM`

    found = lineage(st, item, forward=forward)
    ids = {item, *found.nodes, *(op for _, _, op in found.edges)}
    return verify_rows(st.storage, LINEAGE_COLUMNS, ids, upto=st.version), found
