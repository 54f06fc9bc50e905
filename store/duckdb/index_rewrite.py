"""An index table written again after an incremental update (store/duckdb/index_update.py,
store/duckdb/scope_update.py): the old segment without the rows an update removes plus the rows it
adds, bucket by bucket, where files holding no removed row are hard-linked, not written.

Also what both updates share: `Fallback` (why an update cannot be incremental) and the Arrow
schemas of the index tables.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from store.arrays import unique
from store.duckdb import index as X
from store.index import layout as L
from store.index.files import bucket_files, holds_any
from store.index.xxh import buckets_of

MAX_ADDED_FILES = 16  # a bucket gathering more files of added rows than this is merged (sorted) into pieces
# A file written again is cut into files of about this many bytes (uncompressed), in key order,
# so a later update writes again only the piece holding a row it changes. The full build writes
# one file per bucket (point reads then open one file; benchmarks/bench_index_layout.py).
PIECE_BYTES = 4 << 20
PIECE_MIN_ROWS = 1024
_ADDED = "-added."  # in the name of a file of added rows
# a row's identity in each table (unique in it): what a file written again drops
ROW_KEY = {L.NODES: ("id",), L.TRIPLES: ("src", "dst", L.OP), L.SETDEPS: (L.SRC_CSID, L.DST_CSID),
           L.SETS: (L.CSID,), L.COMPONENTS: (L.CCID,),
           # a scope's rows are dropped whole (its label changed), a vertex's scope row by id
           L.SCOPE_NODES: ("id",), L.SCOPE_ROWS_TABLE: ("scope",)}


class Fallback(Exception):  # noqa: N818 - a reason, not an error
    """The update cannot be incremental; the message says why (the meta's `update_reason`)."""


def one_segment_folder(st, name: str) -> str:
    """The folder of table ``name``'s one segment (`Fallback` when it has more, or the store is
    not a folder on this machine): what an update rewrites file by file."""
    entry = st.manifest.tables.get(name)
    if entry is None or len(entry.segments) != 1:
        raise Fallback(f"{name} is not one segment")
    path = st.storage.file_path(entry.segments[0])
    if path is None or not os.path.isdir(path):
        raise Fallback("the store is not a folder on this machine")
    return path


def table_schema(name: str):
    import pyarrow as pa  # deferred: only this path needs pyarrow

    types = {"string": pa.string(), "integer": pa.int32(), "long": pa.int64()}
    return pa.schema([(f["name"], types[f["type"]]) for f in X.SCHEMAS[name]])


def _columns(name: str) -> list[str]:
    return [f["name"] for f in X.SCHEMAS[name]]


def _empty(name: str):
    return table_schema(name).empty_table()


def conform(name: str, table):
    """`table` (None: no rows) with exactly the columns and types of index table `name`."""
    if table is None:
        return _empty(name)
    return table.select(_columns(name)).cast(table_schema(name))


def row_strings(table, columns: Sequence[str]):
    """One string per row joining `columns` (nulls as a mark no value holds): row identity."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    parts = [pc.fill_null(pc.cast(table.column(c), pa.string()), "\x02") for c in columns]
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "\x01")


def _write_file(path: str, table, row_group_bytes: int = L.ROW_GROUP_BYTES) -> None:
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    per_row = max(1, table.nbytes // max(table.num_rows, 1))
    pq.write_table(table, path, compression="zstd", row_group_size=max(1024, row_group_bytes // per_row))


def _link(src: str, dst: str) -> None:
    """`dst` names `src`'s bytes (segment files are never modified), else a copy."""
    import shutil  # deferred: shutil imports bz2, lzma and more

    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _write_pieces(out: str, stem: str, table, row_group_bytes: int = L.ROW_GROUP_BYTES) -> int:
    """`table` (in order) as files of about PIECE_BYTES each (uncompressed), named in order;
    returns how many."""
    per_row = max(1, table.nbytes // max(table.num_rows, 1))
    rows = max(PIECE_MIN_ROWS, PIECE_BYTES // per_row)
    n = 0
    for at in range(0, table.num_rows, rows):
        _write_file(os.path.join(out, f"{stem}-{n:04d}.c000.zstd.parquet"), table.slice(at, rows), row_group_bytes)
        n += 1
    return n


def rewrite_table(tx, name: str, old_folder: str, removed, added, buckets: int,  # noqa: C901 - one bucket's files
                  row_group_bytes: int = L.ROW_GROUP_BYTES, update=None) -> dict:
    """Table `name` in `tx` as its old segment without the rows `removed` (a pyarrow Table with
    the table's bucket key and ROW_KEY columns) plus the rows `added` (a pyarrow Table of the
    table's columns), bucket by bucket (module docstring, step 7): a file that holds none of the
    removed rows is kept (hard-linked; row-group statistics of the bucket key rule most files
    out unread), a file that holds some is written again without them (in its order, as pieces
    of about PIECE_BYTES), the added rows of a bucket become one more file sorted by the
    table's sort columns, and a bucket left with more than MAX_ADDED_FILES such files is merged
    and sorted into pieces. Returns how many files were kept, written again and added, and
    how many buckets were merged. Row groups hold about `row_group_bytes` (uncompressed).
    `update` (a function of a file's rows returning them changed in place, in their order, or
    None when none changes) is asked of every file, which is then read whole: for a change of
    columns outside the key and sort order, such as a scope's row count in index_scope_nodes."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    key, sort_by = L.LAYOUT[name]
    folder = X.stage(tx, name)
    schema = table_schema(name)
    row_key = ROW_KEY[name]
    g_bucket = buckets_of(removed.column(key), buckets) if removed.num_rows else np.zeros(0, np.int32)
    a_bucket = buckets_of(added.column(key), buckets) if added.num_rows else np.zeros(0, np.int32)
    g_present, a_present = set(unique(g_bucket).tolist()), set(unique(a_bucket).tolist())
    tag = uuid.uuid4()
    order = [(c, "ascending") for c in sort_by]

    def read(f: str):
        return pq.ParquetFile(f).read(columns=schema.names).cast(schema)

    def one(b: int) -> dict:
        counts = {"kept": 0, "rewritten": 0, "added": 0, "merged": 0}
        files = bucket_files(old_folder, [b])
        if not files and b not in a_present:
            return counts
        out = os.path.join(folder, f"{L.BUCKET}={b}")
        os.makedirs(out, exist_ok=True)
        drop = removed.filter(pa.array(g_bucket == b)) if b in g_present else None
        wanted = sorted(set(drop.column(key).to_pylist())) if drop is not None else []
        gone = row_strings(drop, row_key) if drop is not None else None
        clean, kept = [], []
        for f in files:
            if update is None and not (wanted and holds_any(f, key, wanted)):
                clean.append(f)
                continue
            t = read(f)
            hit = pc.is_in(row_strings(t, row_key), value_set=gone) if wanted else None
            changed = update(t) if update is not None else None
            if changed is None and (hit is None or not pc.any(hit).as_py()):
                clean.append(f)
                continue
            t = t if changed is None else changed
            kept.append(t if hit is None else t.filter(pc.invert(hit)))  # the rows that stay, in their order
            counts["rewritten"] += 1
        new = added.filter(pa.array(a_bucket == b)).cast(schema) if b in a_present else None
        # files of added rows overlap the others' key ranges: past MAX_ADDED_FILES, merge the bucket
        n_added = sum(1 for f in clean if _ADDED in os.path.basename(f)) + (new is not None)
        if n_added > MAX_ADDED_FILES:  # merge the bucket: one sorted run, in pieces
            table = pa.concat_tables([read(f) for f in clean] + kept + ([new] if new is not None else []))
            if table.num_rows:
                _write_pieces(out, f"part-{b:05d}-{tag}-m", table.sort_by(order), row_group_bytes)
            counts["merged"] += 1
            return counts
        for f in clean:
            _link(f, os.path.join(out, os.path.basename(f)))
        counts["kept"] += len(clean)
        for i, t in enumerate(kept):
            if t.num_rows:
                _write_pieces(out, f"part-{b:05d}-{tag}-r{i}", t, row_group_bytes)
        if new is not None:
            _write_file(os.path.join(out, f"part-{b:05d}-{tag}{_ADDED}c000.zstd.parquet"), new.sort_by(order),
                        row_group_bytes)
            counts["added"] += 1
        if not os.listdir(out):
            os.rmdir(out)
        return counts

    total = {"kept": 0, "rewritten": 0, "added": 0, "merged": 0}
    with ThreadPoolExecutor(2) as pool:  # pyarrow reads, sorts and writes without the GIL
        for counts in pool.map(one, range(buckets)):
            for k, v in counts.items():
                total[k] += v
    return total
