"""The match on the driver: a run of a local store matched with no Spark job and no JVM.

1. what is matched: the run's stored result (or, for a split copy, the linked output files), read
   with pyarrow from the Parquet files of the store's committed version (``store.local().files``),
   file by file in the order Spark reads small files (largest first), each item matched by the
   reference matcher (capture/tracing/pattern.py ``match``) on its JSON view
   (capture/tracing/duckdb/view.py), or, where the Spark wing uses the Python matcher over
   ``to_json`` (``compiled=False``, map columns), the values of that JSON; with a limit, reading
   stops at the limit's last match;
2. the matched rows' hidden columns: pyarrow reads only the row groups that hold them (the same
   file, or the split copy's hidden file of the same part), and the ids the run does not store
   are computed on the driver, column-wise (``capture.storing.runs.take``).

:func:`unreadable` says why a run cannot be matched here (a column type or table layout this
wing does not read); capture/tracing/entry.py ``choose`` asks it once, before choosing this wing.
Timestamps are rendered in the session time zone: the running SparkSession's, else UTC, the one
Strata's sessions use (store/spark/session.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from capture.ids import is_hidden
from capture.storing.runs import ROW_KEY, RunHead, rows_by_key, take
from capture.storing.tables import output_table, part_of, result_table
from capture.tracing.duckdb.view import struct, time_zone, unviewable, viewer, why_not_cast
from capture.tracing.pattern import Pattern, match
from store.duckdb.tables import arrow_schema
from store.errors import UserError

_HINT = "trace it with --engine spark"


@dataclass(frozen=True, slots=True)
class _Source:
    """What is matched: the table, its items' type (JSON form), their columns, and how items are
    viewed: ``cast`` (the JSON view) or the reason for the ``to_json`` view."""

    table: str
    items: dict
    visible: list[str]
    why: str


def _schema(store, name: str) -> dict | str:
    """The stored Spark schema of table ``name`` (JSON form), or why it is not read here."""
    entry = store.manifest.tables.get(name)
    if entry is None:
        return f"store {store.root} has no table '{name}'"
    if entry.partition_by:
        return f"table '{name}' is partitioned"
    return json.loads(entry.schema)


def _source(store, head: RunHead) -> _Source | str:
    """What :func:`matched_rows` matches, or why the driver cannot read it."""
    name = output_table(head.run) if head.split else result_table(head.run)
    schema = _schema(store, name)
    if isinstance(schema, str):
        return schema
    if head.split and isinstance(hidden := _schema(store, result_table(head.run)), str):
        return hidden
    fields = [f for f in schema["fields"] if not is_hidden(f["name"])]
    items = struct(fields)
    why = why_not_cast(items) or "cast"
    problem = unviewable(items, as_json=why != "cast")
    if problem is not None:
        return problem
    return _Source(name, items, [f["name"] for f in fields], why)


def unreadable(store, head: RunHead) -> str | None:
    """Why run ``head`` cannot be matched on the driver (reads nothing but the manifest), or None."""
    if not store.storage.on_this_machine:
        return "the store is not on this machine's file system"
    found = _source(store, head)
    return found if isinstance(found, str) else None


def _readable(store, head: RunHead) -> _Source:
    found = _source(store, head)
    if isinstance(found, str):
        raise UserError(f"run {head.run!r} cannot be traced by the local engine: {found}", hint=_HINT)
    return found


def _in_read_order(paths: list[str]) -> list[str]:
    """Files in the order Spark reads small files (by size, largest first; then by name), so
    "the first n matches" are the same items the Spark wing takes."""
    return sorted(paths, key=lambda p: (-os.path.getsize(p), p))


def _matches(files: list[str], src: _Source, convert, pattern: Pattern,
             limit: int | None) -> list[tuple[str, int, list[str]]]:
    """(file, row index in the file, matched paths) of the matching items, in read order."""


    out: list[tuple[str, int, list[str]]] = []
    if limit is not None and limit <= 0:
        return out
    # the pyarrow schema the stored items are read as (Spark's types: timestamps as UTC
    # instants, whatever physical type the writer used)
    want = arrow_schema(src.items)
    for path in files:
        row = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=8192, columns=src.visible):
            table = pa.Table.from_batches([batch])
            try:
                table = table.cast(want)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                pass  # read as stored: the viewer takes either
            for item in table.to_pylist():
                paths = match(pattern, convert(item))
                if paths is not None:
                    out.append((path, row, paths))
                    if limit is not None and len(out) >= limit:
                        return out
                row += 1
    return out


def _part(path: str, what: str, run: str) -> int:
    part = part_of(os.path.basename(path))
    if part is None:
        raise UserError(f"{what} {path} of run {run!r} has no part number", hint=_HINT)
    return part


def matched_rows(store, head: RunHead, pattern: Pattern, limit: int | None = None,
                 compiled: bool = True) -> list[dict]:
    """The matched result rows as the Spark wing brings them to the driver: ``id`` (the result
    item id), ``_paths`` (matched node paths) and every hidden column (derived ids computed)."""
    src = _readable(store, head)
    convert = viewer(src.items, src.why != "cast" or not compiled, time_zone(store))
    local = store.local()
    found = _matches(_in_read_order(local.files(src.table)), src, convert, pattern, limit)
    if not found:
        return []
    if head.split:
        keys: dict[int, list[str]] = {}
        for path, row, paths in found:
            keys[(_part(path, "output file", head.run) << 40) | row] = paths
        hidden_files = {_part(path, "hidden file", head.run): path for path in local.files(result_table(head.run))}
        rows = rows_by_key(hidden_files, list(keys), head.derived)
        return [{**r, "id": r[head.id_col], "_paths": keys[r[ROW_KEY]]} for r in rows]
    hidden = [f["name"] for f in _schema(store, src.table)["fields"] if is_hidden(f["name"])]
    by_file: dict[str, list[tuple[int, list[str]]]] = {}
    for path, row, paths in found:
        by_file.setdefault(path, []).append((row, paths))
    out = []
    for path, hits in by_file.items():
        rows = take(path, [r for r, _ in hits], hidden, head.derived)
        out += [{**r, "id": r[head.id_col], "_paths": paths} for r, (_, paths) in zip(rows, hits, strict=True)]
    return out


def plan_lines(store, head: RunHead, pattern: Pattern) -> list[str]:
    """How :func:`matched_rows` matches (for EXPLAIN; reads nothing but the manifest)."""
    why = _readable(store, head).why
    table = "the linked output files" if head.split else "the run's stored result"
    view = ("its JSON view, the values the compiled Spark expression sees" if why == "cast"
            else f"the values of to_json(item) ({why})")
    lines = [f"match {pattern.text!r}",
             f"  on the driver (no Spark job): the reference matcher over each item of {table}, read with "
             f"pyarrow file by file, as {view}"]
    if head.split:
        lines.append("then the matched rows' hidden columns, by row key (the run's stored copy is split): "
                     "pyarrow reads their row groups")
    return lines
