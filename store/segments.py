"""The files of a store segment on this machine's file system (both engines and the commit's
hashing list them the same way)."""

from __future__ import annotations

import os


def parquet_files(folder: str) -> list[str]:
    """The Parquet files of one segment folder (Hive partition folders included), sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        out += [os.path.join(dirpath, f) for f in sorted(filenames)
                if f.endswith(".parquet") and not f.startswith((".", "_"))]
    return out


def segment_files(storage, segments) -> list[str]:
    """The Parquet files of these segments of a store on this machine (`Storage.file_path`), in
    segment order."""
    return [f for seg in segments for f in parquet_files(storage.file_path(seg))]
