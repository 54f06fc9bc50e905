"""Where traced input items live, and their values read back: TRACE's ``source`` and ``value``.

A source item's id is a hash (capture/tracking/sources.py), so it does not say where the item is.
Each captured source records a :class:`~capture.tracking.sources.Locator` (table
``capture_sources``): the input's files with their lengths and modification times, the reader and
its options. Finding an item again computes the ids the capture computed, for the input as it is
now, and keeps the traced ones -- PROVision's lazy provenance: nothing per item is stored.

* JSON Lines read with the offset reader and Parquet files, on a local file system: on the driver,
  no JVM. Every line start (JSON) or row index (Parquet) of each unchanged file is hashed with
  numpy as Spark's ``xxhash64`` hashes it; a JSON item is then ``file:line`` (lines counted from 1)
  and its value the line's JSON, a Parquet item ``file#row`` (row indexes from 0) and its value
  the row, read from the row group that holds it.
* Every other file input (CSV, text, ORC: ids by row position), and the two above on other file
  systems: one Spark job reads the input again, checks that Spark cuts it as the capture saw it
  (the layout key), and keeps the traced ids with their file and row (``file:line`` for CSV and
  text, counting one line per record after a header; ``file#row`` otherwise; JSON on a Hadoop
  path shows the line's byte offset, ``file@offset``). Under ``--engine local`` no job runs and the
  source says so.
* Rows the program made (``createDataFrame``, ``range``, literals, ``Tracker.track``): the source
  names them; there is nothing to read back.

An input whose files changed since the run (other length or time, or missing) is not guessed at:
its items' ``source`` says it changed and ``value`` is null. A catalog table's items show the
table and the file and row they sit in.
"""

from __future__ import annotations

import base64
import bz2
import datetime as dt
import decimal
import gzip
import json
import lzma
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from capture.operators import POS, OpType
from capture.tracking.sources import Locator
from store.index.xxh import hash_longs

Key = tuple[str, int]  # (dataset, item id)


@dataclass(frozen=True, slots=True)
class Place:
    """Where one input item lives (``source``) and, when it was read back, its record."""

    source: str
    record: object = None
    found: bool = False  # the record was read back from the unchanged input

    def value(self, path: str) -> str | None:
        """The record's value at ``path`` as JSON text; None when the record was not read back."""
        if not self.found:
            return None
        return json.dumps(value_at(self.record, path.split(".") if path else []), ensure_ascii=False,
                          default=_plain)


def _plain(v):
    if isinstance(v, (dt.datetime, dt.date, dt.time, decimal.Decimal)):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode()
        except UnicodeDecodeError:
            return base64.b64encode(bytes(v)).decode()
    return str(v)


def value_at(record, segments: list[str]):
    """The value at an attribute path: field names step into objects, ``[n]`` into position n
    of a list (counted from 1, as capture numbers positions), ``[pos]`` into every position."""
    cur = record
    for i, seg in enumerate(segments):
        if cur is None:
            return None
        if seg == POS:
            if not isinstance(cur, list):
                return None
            return [value_at(x, segments[i + 1:]) for x in cur]
        if seg.startswith("[") and seg.endswith("]") and seg[1:-1].isdigit():
            n = int(seg[1:-1])
            cur = cur[n - 1] if isinstance(cur, list) and 0 < n <= len(cur) else None
        elif isinstance(cur, dict):
            cur = cur.get(seg)
        else:
            return None
    return cur


# ---- Spark's xxhash64 -------------------------------------------------------------------------
def _seed(*parts) -> int:
    """The hash after Spark's ``xxhash64`` has taken ``parts`` (strings, then longs)."""
    import xxhash

    from capture.ids import _SEED, _mix

    h = _SEED
    for p in parts:
        if isinstance(p, str):
            v = xxhash.xxh64_intdigest(p.encode(), seed=h & ((1 << 64) - 1))
            h = v - (1 << 64) if v >= 1 << 63 else v
        else:
            h = _mix(h, p, "<q")
    return h


_URI_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'(),;:$&+=/@")


def spark_file_path(hadoop_path: str) -> str:
    """``_metadata.file_path`` of a file as Spark reports it: the Hadoop path as a URI
    (``java.net.URI`` quoting: ASCII outside the path characters, spaces and controls as %XX)."""
    m = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):(//[^/]*)?(.*)", hadoop_path, re.S)
    if m is None:
        return hadoop_path
    out = []
    for ch in m[3]:
        if ch in _URI_SAFE or (ord(ch) > 127 and not ch.isspace() and ch.isprintable()):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode())
    return f"{m[1]}:{m[2] or ''}{''.join(out)}"


def local_file(hadoop_path: str) -> str | None:
    """The local path of a ``file:`` Hadoop path, else None."""
    if not hadoop_path.startswith("file:"):
        return None
    rest = hadoop_path[5:]
    return "/" + rest.lstrip("/") if rest.startswith("//") else rest


def _unchanged(path: str, length: int, mtime: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_size == length and st.st_mtime_ns // 1_000_000 == mtime


# ---- on the driver: JSON Lines and Parquet files ---------------------------------------------------
_OPENERS = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress}


def _line_starts(data: bytes, sep: bytes | None) -> np.ndarray:
    """The offsets at which lines start (Hadoop's LineRecordReader: ``\\n``, ``\\r\\n`` or ``\\r``
    end a line, or the reader's ``lineSep``)."""
    if sep:
        ends = np.array([m.end() for m in re.finditer(re.escape(sep), data)], dtype=np.int64)
    else:
        arr = np.frombuffer(data, dtype=np.uint8)
        nl = np.flatnonzero(arr == 10)
        cr = np.flatnonzero(arr == 13)
        if len(cr):
            nxt = cr + 1
            cr = cr[(nxt >= len(arr)) | (arr[np.minimum(nxt, len(arr) - 1)] != 10)]
            nl = np.sort(np.concatenate([nl, cr]))
        ends = nl + 1
    starts = np.concatenate([np.zeros(1, dtype=np.int64), ends.astype(np.int64)])
    return starts[starts < len(data)]


def _json_file(dataset: str, loc: Locator, file: tuple[str, int, int], local: str,
               wanted: dict[int, list[Key]], out: dict[Key, Place], values: bool) -> None:
    with open(local, "rb") as f:
        data = f.read()
    ext = os.path.splitext(local)[1].lower()
    if ext in _OPENERS:
        data = _OPENERS[ext](data)
    opts = {k.lower(): v for k, v in loc.options}
    sep = opts.get("linesep")
    starts = _line_starts(data, sep.encode() if sep else None)
    ids = hash_longs(starts, _seed(dataset, spark_file_path(file[0]), file[2] * 1000))
    hit = np.flatnonzero(np.isin(ids, np.fromiter(wanted, dtype=np.int64, count=len(wanted))))
    encoding = opts.get("encoding") or opts.get("charset") or "utf-8"
    for i in hit.tolist():
        record, found = None, False
        if values:
            end = starts[i + 1] if i + 1 < len(starts) else len(data)
            try:
                record, found = json.loads(data[starts[i]:end].decode(encoding)), True
            except (ValueError, LookupError):
                pass
        for key in wanted.pop(int(ids[i])):
            out[key] = Place(_label(loc, f"{local}:{i + 1}"), record, found)


def _parquet_file(dataset: str, loc: Locator, file: tuple[str, int, int], local: str,
                  wanted: dict[int, list[Key]], out: dict[Key, Place], values: bool) -> None:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(local)
    ids = hash_longs(np.arange(pf.metadata.num_rows, dtype=np.int64), _seed(dataset, spark_file_path(file[0])))
    hit = np.flatnonzero(np.isin(ids, np.fromiter(wanted, dtype=np.int64, count=len(wanted))))
    if not len(hit):
        return
    starts = np.cumsum([0] + [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)])
    groups: dict[int, object] = {}
    for row in hit.tolist():
        record = None
        if values:
            g = int(np.searchsorted(starts, row, side="right") - 1)
            if g not in groups:
                groups[g] = pf.read_row_group(g)
            record = groups[g].slice(row - int(starts[g]), 1).to_pylist()[0]
        for key in wanted.pop(int(ids[row])):
            out[key] = Place(_label(loc, f"{local}#{row}"), record, values)


def _where(loc: Locator) -> str:
    return loc.table or ", ".join(local_file(p) or p for p in loc.paths) or loc.format


def _label(loc: Locator, place: str) -> str:
    return f"{loc.table} ({place})" if loc.table else place


def _on_driver(dataset: str, loc: Locator, wanted: dict[int, list[Key]], values: bool) -> dict[Key, Place] | None:
    """Items of a local JSON Lines or Parquet input, or None when it is not one."""
    if loc.ids not in ("offset", "row_index") or not loc.files:
        return None
    locals_ = [local_file(f[0]) for f in loc.files]
    if any(p is None for p in locals_):
        return None
    out: dict[Key, Place] = {}
    changed = []
    for file, local in zip(loc.files, locals_, strict=True):
        if not wanted:
            break
        if not _unchanged(local, file[1], file[2]):
            changed.append(local)
            continue
        if loc.ids == "offset":
            _json_file(dataset, loc, file, local, wanted, out, values)
        else:
            _parquet_file(dataset, loc, file, local, wanted, out, values)
    return out | _every(wanted, _changed(loc, changed))


def _every(wanted: dict[int, list[Key]], source: str) -> dict[Key, Place]:
    """The same ``source`` (why an item cannot be read back) for every item still wanted."""
    return {k: Place(source) for keys in wanted.values() for k in keys}


def _changed(loc: Locator, changed: list[str]) -> str:
    if not changed:
        return f"{_where(loc)} (not found in the input: it was read another way)"
    if len(changed) == 1 and len(loc.files) == 1:
        return f"{_label(loc, changed[0])} (changed since the run: not read back)"
    return f"{_where(loc)} (changed since the run: {len(changed)} of {len(loc.files)} files; not read back)"


# ---- with Spark --------------------------------------------------------------------------------
def _with_spark(spark, dataset: str, loc: Locator, wanted: dict[int, list[Key]], values: bool) -> dict[Key, Place]:
    """Items of any file input, read again with Spark (one job): the ids computed as the capture
    computed them, kept when traced, with each one's file and index."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    from capture import jvm
    from capture.tracking.sources import file_line_ids, file_row_ids, file_statuses, item_ids, layout_key

    schema = StructType.fromJson(json.loads(loc.schema)) if loc.schema else None
    reader = spark.read.options(**dict(loc.options))
    paths = list(loc.paths)
    if loc.ids == "offset":
        df = reader.schema(StructType([*schema.fields, StructField(jvm.OFFSET, LongType(), False)])) \
            .format(jvm.CLASS).load(paths)
    else:
        df = (reader.schema(schema) if schema is not None else reader).format(loc.format).load(paths)
    if file_statuses(df._jdf.queryExecution().analyzed().relation().location()) != loc.files:
        return _every(wanted, _changed(loc, [local_file(f[0]) or f[0] for f in loc.files]))
    meta = df.metadataColumn("_metadata")
    file = meta.getField("file_path")
    visible = [F.col(f"`{f.name}`") for f in (schema.fields if schema is not None else [])]
    if loc.ids == "offset":
        ids, index = file_line_ids(df, dataset), F.col(jvm.OFFSET)
    elif loc.ids == "row_index":
        ids, index = file_row_ids(df, dataset), meta.getField("row_index")
    else:
        layout = layout_key(df, dict(loc.layout_options or ()))
        if layout != loc.layout:
            return _every(wanted, f"{_where(loc)} (Spark now cuts the input otherwise than at the run: not read back)")
        ids, index = item_ids(dataset, loc.layout), F.monotonically_increasing_id()
    rows = df.select(ids.alias("_id"), file.alias("_file"), index.alias("_index"),
                     F.struct(*visible).alias("_record"))
    if loc.ids == "position":  # the row's index within its file (splits of a file are read in order)
        rows = rows.withColumn("_index", F.row_number().over(Window.partitionBy("_file").orderBy("_index")) - 1)
    found = rows.filter(F.col("_id").isin(list(wanted))).collect()
    header = dict((k.lower(), v.lower()) for k, v in loc.options).get("header") == "true"
    out: dict[Key, Place] = {}
    for r in found:
        name = _file_name(r["_file"])
        if loc.ids == "offset":
            place = f"{name}@{r['_index']}"
        elif loc.ids == "position" and loc.format in ("csv", "text"):
            place = f"{name}:{r['_index'] + 1 + (1 if header and loc.format == 'csv' else 0)}"
        else:
            place = f"{name}#{r['_index']}"
        record = r["_record"].asDict(recursive=True) if values else None
        for key in wanted.pop(r["_id"], ()):
            out[key] = Place(_label(loc, place), record, values)
    return out | _every(wanted, _changed(loc, []))


def _file_name(uri: str) -> str:
    """A file as Spark's ``_metadata.file_path`` names it (a URI): its local path, else the URI."""
    from urllib.parse import unquote

    return local_file(unquote(uri)) or uri


# ---- entry point -------------------------------------------------------------------------------
def read_locators(store, run: str) -> dict[int, Locator]:
    """The locators of run ``run``'s source operators (pyarrow on a local store, else one job)."""
    from capture.storing.runs import _local_rows
    from capture.storing.tables import SOURCES

    if not store.has_table(SOURCES):
        return {}
    rows = _local_rows(store, SOURCES, run)
    if rows is None:
        from pyspark.sql import functions as F

        rows = [r.asDict() for r in store.table(SOURCES).filter(F.col("run") == F.lit(run)).collect()]
    return {r["oid"]: Locator.from_json(r["locator"]) for r in rows}


def locate(store, head, keys: Iterable[Key], values: bool = True) -> dict[Key, Place]:
    """Where each traced input item ``(dataset, item id)`` of run ``head`` lives, and (``values``)
    its record read back from the unchanged input."""
    from store.engine import Engine

    locators = read_locators(store, head.run)
    by_dataset: dict[str, Locator] = {}
    detail: dict[str, str] = {}
    for op in head.operators:
        if op.type is OpType.SOURCE and op.dataset is not None:
            detail.setdefault(op.dataset, op.detail or op.method)
            if op.oid in locators:
                by_dataset.setdefault(op.dataset, locators[op.oid])
    wanted: dict[str, dict[int, list[Key]]] = {}
    for key in keys:
        wanted.setdefault(key[0], {}).setdefault(key[1], []).append(key)
    out: dict[Key, Place] = {}
    for dataset, items in wanted.items():
        loc = by_dataset.get(dataset)
        if loc is None:
            found = _every(items, f"{detail.get(dataset, dataset)} "
                                  "(where its items live was not recorded with this run)")
        elif loc.ids == "program":
            found = _every(items, f"rows the program made ({detail.get(dataset, loc.format)}): nothing to read back")
        else:
            found = _on_driver(dataset, loc, items, values)
            if found is None and store.engine is Engine.LOCAL:
                found = _every(items, f"{_where(loc)} (finding its rows needs Spark: not with --engine local)")
            elif found is None:
                found = _with_spark(store.spark, dataset, loc, items, values)
        out.update(found)
    return out


def trace_rows(store, bt, where: bool = True, values: bool = True) -> list[tuple]:
    """The rows of TRACE (dataset, item, item_id, path, role, accessed_by, manipulated_by, source,
    value: ``iql.TRACE_COLUMNS``): one per node of each traced input item's tree,
    with the item's store element, its ``source`` (when ``where``) and the value at the node's
    path (when ``values``); input items are located only when one of the two is asked for."""
    from capture.ids import item_element_id
    from capture.storing.runs import read_head

    places: dict[Key, Place] = {}
    if (where or values) and bt.items and bt.run is not None:
        places = locate(store, read_head(store, bt.run), {(i.dataset, i.item_id) for i in bt.items}, values)
    rows = []
    for item in bt.items:
        place = places.get((item.dataset, item.item_id))
        source = place.source if place is not None and where else None
        element = item_element_id(item.dataset, item.item_id)
        for n in item.nodes:
            value = place.value(n.path) if place is not None and values else None
            rows.append((item.dataset, element, item.item_id, n.path, n.role, list(n.accessed),
                         list(n.manipulated), source, value))
    return rows
