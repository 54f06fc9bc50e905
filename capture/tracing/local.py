"""TRACE on the driver: a run of a local store traced with no Spark job and no JVM.

When the local engine answers (:func:`on_driver`: a store on this machine, and ``auto`` with a
run of at most the store's ``local_rows`` result items, or ``local`` forced), :func:`trace` and
:func:`describe` in capture/tracing/backtrace.py take this path instead of the Spark one:

1. the run's operators and run row: pyarrow (capture/storing/runs.py ``read_head``);
2. the match: the run's stored result (or, for a split copy, the linked output files) read with
   pyarrow from the Parquet files of the store's committed version (``store.local().files``),
   file by file in the order Spark reads small files (largest first), each item matched by the
   reference matcher (capture/tracing/pattern.py ``match``) on its JSON view -- the values the
   compiled Spark expression sees (compile.py ``json_view``: integers as long, numbers as double,
   dates and timestamps as Spark's strings, binary as UTF-8 text), or, where the Spark path uses
   the Python matcher over ``to_json`` (``compiled=False``, map columns), the values of that JSON;
   with a limit, reading stops at the limit's last match;
3. the matched rows' hidden columns: pyarrow reads only the row groups that hold them (the same
   file, or the split copy's hidden file of the same part), and the ids the run does not store
   are computed on the driver (``hydrate_rows``).

The backtrace itself is the one the Spark path runs. Timestamps are rendered in the session time
zone: the running SparkSession's, else UTC, the one Strata's sessions use (store/session.py).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
from collections.abc import Callable
from typing import Any

from capture.ids import hydrate_rows, is_hidden
from capture.storing.runs import ROW_KEY, RunHead, rows_by_key, take
from capture.storing.tables import output_table, result_table
from capture.storing.tee import part_of
from capture.tracing.pattern import Pattern, match
from store.engine import Engine
from store.errors import UserError

_HINT = "trace it with --engine spark"
SESSION_TIME_ZONE = "UTC"  # spark.sql.session.timeZone of the sessions Strata starts (store/session.py)


class NotLocal(UserError):
    """This run cannot be traced on the driver (a column type or table layout the local path does
    not read); with ``auto`` the caller traces it on Spark."""


def on_driver(store, head: RunHead) -> bool:
    """Whether :func:`capture.tracing.trace` runs on the driver for this run (the store's engine
    setting, the run's result items against the local threshold, the tables' layout)."""
    if not store.storage.is_local:
        return False
    if store.choose(head.items).engine is not Engine.LOCAL:
        return False
    try:
        _source(store, head)
    except NotLocal:
        if store.engine is Engine.LOCAL:
            raise
        return False
    return True


def readable(store, head: RunHead) -> bool:
    """Whether the driver can trace this run at all: a local store, and a result layout and
    column types this module reads (whichever engine a caller then picks)."""
    if not store.storage.is_local:
        return False
    try:
        _source(store, head)
    except NotLocal:
        return False
    return True


# ---- the items' JSON view ------------------------------------------------------------------
def _spark_types():
    from pyspark.sql import types as T  # pure Python: no JVM

    return T


def time_zone(store) -> dt.tzinfo:
    """The time zone Spark renders timestamps in: the running session's, else Strata's default."""
    from zoneinfo import ZoneInfo

    name = SESSION_TIME_ZONE
    if store.spark_started:
        name = store.spark.conf.get("spark.sql.session.timeZone") or name
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError):
        return dt.timezone.utc


def _timestamp_text(value: dt.datetime, instant: bool, as_json: bool, tz: dt.tzinfo) -> str:
    """Spark's text of a timestamp: `cast(ts as string)` (``yyyy-MM-dd HH:mm:ss[.f]``, trailing
    zeros of the fraction dropped) or to_json's ``yyyy-MM-dd'T'HH:mm:ss.SSS[XXX]``."""
    if instant:
        value = (value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)).astimezone(tz)
    elif value.tzinfo is not None:
        value = value.replace(tzinfo=None)
    head = value.strftime("%Y-%m-%d %H:%M:%S") if not as_json else value.strftime("%Y-%m-%dT%H:%M:%S")
    if as_json:
        text = f"{head}.{value.microsecond // 1000:03d}"
        if instant:
            offset = value.strftime("%z")
            text += "Z" if offset in ("+0000", "-0000") else f"{offset[:3]}:{offset[3:]}"
        return text
    frac = f"{value.microsecond:06d}".rstrip("0")
    return f"{head}.{frac}" if frac else head


def _json_float(value: float, single: bool) -> Any:
    """A float as json.loads reads Spark's JSON of it (NaN and infinities are strings there)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if single:  # Java's Float.toString: the shortest text that reads back as the same float
        import numpy as np

        return float(str(np.float32(value)))
    return value


def viewer(dtype, as_json: bool, tz: dt.tzinfo = dt.timezone.utc) -> Callable[[Any], Any]:
    """value (as pyarrow reads it) -> the value the matcher sees: the JSON view (``as_json``
    False) or the value of ``to_json`` read back (True); timestamps shown in ``tz``. Raises
    NotLocal for types neither has."""
    T = _spark_types()
    if isinstance(dtype, T.StructType):
        fields = [(f.name, viewer(f.dataType, as_json, tz)) for f in dtype.fields]

        def struct(v):
            if v is None:
                return None
            out = {name: conv(v.get(name)) for name, conv in fields}
            return {k: x for k, x in out.items() if x is not None} if as_json else out
        return struct
    if isinstance(dtype, T.ArrayType):
        elem = viewer(dtype.elementType, as_json, tz)
        return lambda v: None if v is None else [None if e is None else elem(e) for e in v]
    if isinstance(dtype, T.MapType):
        if not as_json:
            raise NotLocal("a map column has no JSON view", hint=_HINT)
        key, val = viewer(dtype.keyType, True, tz), viewer(dtype.valueType, True, tz)

        def text(k):
            k = key(k)
            return ("true" if k else "false") if isinstance(k, bool) else str(k)
        return lambda v: None if v is None else {text(k): val(x) for k, x in v}
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return lambda v: None if v is None else int(v)
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        single = isinstance(dtype, T.FloatType)
        if as_json:
            return lambda v: None if v is None else _json_float(float(v), single)
        return lambda v: None if v is None else float(v)
    if isinstance(dtype, T.DecimalType):
        whole = as_json and dtype.scale == 0
        return lambda v: None if v is None else (int(v) if whole else float(v))
    if isinstance(dtype, T.BooleanType):
        return lambda v: None if v is None else bool(v)
    if isinstance(dtype, T.StringType):
        return lambda v: v
    if isinstance(dtype, T.BinaryType):
        if as_json:
            return lambda v: None if v is None else base64.b64encode(bytes(v)).decode("ascii")
        return lambda v: None if v is None else bytes(v).decode("utf-8", "replace")
    if isinstance(dtype, T.DateType):
        return lambda v: None if v is None else v.isoformat()
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        instant = isinstance(dtype, T.TimestampType)
        return lambda v: None if v is None else _timestamp_text(v, instant, as_json, tz)
    raise NotLocal(f"result column type {dtype.simpleString()} is not read on the driver", hint=_HINT)


# ---- what is matched -----------------------------------------------------------------------
def _schema(store, name: str):
    T = _spark_types()
    entry = store.manifest.tables.get(name)
    if entry is None:
        raise NotLocal(f"store {store.root} has no table '{name}'", hint=_HINT)
    if entry.partition_by:
        raise NotLocal(f"table '{name}' is partitioned", hint=_HINT)
    return T.StructType.fromJson(json.loads(entry.schema))


def _source(store, head: RunHead):
    """(table matched, its schema, visible columns, how items are viewed: 'cast' or a reason for
    the to_json view)."""
    from capture.tracing.compile import NotCompilable, json_view

    T = _spark_types()
    name = output_table(head.run) if head.split else result_table(head.run)
    schema = _schema(store, name)
    if head.split:
        _schema(store, result_table(head.run))
    visible = [f.name for f in schema.fields if not is_hidden(f.name)]
    items = T.StructType([schema[c] for c in visible])
    try:
        view = json_view(items)
        why = "cast" if view.fields else "the result items have no fields"
    except NotCompilable as e:
        why = e.message
    if why == "cast":
        viewer(items, False)
    else:
        viewer(items, True)
    return name, items, visible, why


def _in_read_order(paths: list[str]) -> list[str]:
    """Files in the order Spark reads small files (by size, largest first; then by name), so
    "the first n matches" are the same items the Spark path takes."""
    return sorted(paths, key=lambda p: (-os.path.getsize(p), p))


def _arrow_types(items):
    """The pyarrow schema the stored items are read as (Spark's types: timestamps as UTC
    instants, whatever physical type the writer used)."""
    from store.duckdb.tables import arrow_schema

    return arrow_schema(items.jsonValue())


def _matches(files: list[str], items, visible: list[str], convert, pattern: Pattern,
             limit: int | None) -> list[tuple[str, int, list[str]]]:
    """(file, row index in the file, matched paths) of the matching items, in read order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: list[tuple[str, int, list[str]]] = []
    if limit is not None and limit <= 0:
        return out
    want = _arrow_types(items)
    for path in files:
        row = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=8192, columns=visible):
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


def matched_rows(store, head: RunHead, pattern: Pattern, limit: int | None = None,
                 compiled: bool = True) -> list[dict]:
    """The matched result rows as the Spark path brings them to the driver: ``id`` (the result
    item id), ``_paths`` (matched node paths) and every hidden column (derived ids computed)."""
    name, items, visible, why = _source(store, head)
    as_json = why != "cast" or not compiled
    convert = viewer(items, as_json, time_zone(store))
    local = store.local()
    found = _matches(_in_read_order(local.files(name)), items, visible, convert, pattern, limit)
    if not found:
        return []
    if head.split:
        keys: dict[int, list[str]] = {}
        for path, row, paths in found:
            part = part_of(os.path.basename(path))
            if part is None:
                raise NotLocal(f"output file {path} of run {head.run!r} has no part number", hint=_HINT)
            keys[(part << 40) | row] = paths
        hidden_files = {}
        for path in local.files(result_table(head.run)):
            part = part_of(os.path.basename(path))
            if part is None:
                raise NotLocal(f"hidden file {path} of run {head.run!r} has no part number", hint=_HINT)
            hidden_files[part] = path
        rows = hydrate_rows(rows_by_key(hidden_files, list(keys)), head.derived)
        return [{**r, "id": r[head.id_col], "_paths": keys[r[ROW_KEY]]} for r in rows]
    hidden = [f.name for f in _schema(store, name).fields if is_hidden(f.name)]
    by_file: dict[str, list[tuple[int, list[str]]]] = {}
    for path, row, paths in found:
        by_file.setdefault(path, []).append((row, paths))
    out = []
    for path, hits in by_file.items():
        rows = hydrate_rows(take(path, [r for r, _ in hits], hidden), head.derived)
        out += [{**r, "id": r[head.id_col], "_paths": paths} for r, (_, paths) in zip(rows, hits, strict=True)]
    return out


def plan_lines(store, head: RunHead, pattern: Pattern) -> list[str]:
    """How :func:`matched_rows` matches (for EXPLAIN; reads nothing but the manifest)."""
    name, _, _, why = _source(store, head)
    table = "the linked output files" if head.split else "the run's stored result"
    view = ("its JSON view, the values the compiled Spark expression sees" if why == "cast"
            else f"the values of to_json(item) ({why})")
    return [f"match {pattern.text!r}",
            f"  on the driver (no Spark job): the reference matcher over each item of {table}, read with "
            f"pyarrow file by file, as {view}"]
