"""Where traced input items live, as both tracing wings report it: places, values and labels.

capture/tracing/locate.py finds the items (its docstring says how); this module holds what it and
the two wings that read inputs (capture/tracing/duckdb/locate.py, capture/tracing/spark/locate.py)
share: :class:`Place` (one item) and :class:`Located` (one dataset's items, column-wise), the
value at an attribute path, Spark's names of files, and the ``source`` texts of items that cannot
be read back.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from capture.operators import POS

if TYPE_CHECKING:
    from capture.locator import Locator

Key = tuple[str, int]  # (dataset, item id)


class Place(NamedTuple):  # a tuple: a large trace makes one per input item
    """Where one input item lives (``source``) and, when it was read back, its record: a Python
    value (``record``), or row ``row`` of an Arrow table ``rows``. The readers that find items one
    by one (JSON Lines, Hive text, the Spark job) make one per item; :func:`located` turns them
    into their dataset's :class:`Located`, the form the Parquet reader makes directly."""

    source: str
    record: object = None
    found: bool = False  # the record was read back from the unchanged input
    rows: pa.Table | None = None
    row: int = 0

    def value(self, path: str) -> str | None:
        """The record's value at ``path`` as JSON text; None when the record was not read back."""
        if not self.found:
            return None
        record = self.record if self.rows is None else self.rows.slice(self.row, 1).to_pylist()[0]
        return json_text(value_at(record, path.split(".") if path else []))


NO_RECORD, PYTHON_RECORD = -1, -2  # Located.table: not read back; a Python record


class Located(NamedTuple):
    """Where one dataset's traced items live, column-wise: item ``ids[i]`` is at ``source[i]``
    and its record is row ``row[i]`` of ``tables[table[i]]``, or (``table[i]`` is
    :data:`PYTHON_RECORD`) the Python value ``records[ids[i]]``, or was not read back
    (:data:`NO_RECORD`). The Parquet reader fills it without a Python object per item: a trace of
    one aggregate can reach 150,000 input rows."""

    ids: np.ndarray  # int64
    source: pa.Array  # string
    table: np.ndarray  # int64
    row: np.ndarray  # int64
    tables: tuple[pa.Table, ...] = ()
    records: Mapping[int, object] = {}


def located_all(ids: np.ndarray, source: str) -> Located:
    """Items ``ids``, all at the same ``source`` (why they cannot be read back), no record."""
    n = len(ids)
    return Located(np.asarray(ids, np.int64), pa.repeat(pa.scalar(source, pa.string()), n),
                   np.full(n, NO_RECORD, np.int64), np.zeros(n, np.int64))


def concat(parts: list[Located]) -> Located:
    """The items of ``parts`` in one :class:`Located` (their tables one after the other)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return located_all(np.zeros(0, np.int64), "")
    tables: list[pa.Table] = []
    table = []
    records: dict[int, object] = {}
    for part in parts:
        table.append(np.where(part.table >= 0, part.table + len(tables), part.table))
        tables += part.tables
        records.update(part.records)
    return Located(np.concatenate([p.ids for p in parts]), pa.concat_arrays([p.source for p in parts]),
                   np.concatenate(table), np.concatenate([p.row for p in parts]), tuple(tables), records)


def located(places: Mapping[Key, Place]) -> dict[str, Located]:
    """Per dataset, the :class:`Located` of items found one by one (``places``: a wing that
    makes a :class:`Place` per item)."""
    grouped: dict[str, list[tuple[int, Place]]] = {}
    for (dataset, item_id), place in places.items():
        grouped.setdefault(dataset, []).append((item_id, place))
    out = {}
    for dataset, found in grouped.items():
        tables: dict[int, int] = {}  # id(rows) -> its index
        kept: list[pa.Table] = []
        table, row, records = [], [], {}
        for item_id, p in found:
            if not p.found:
                table.append(NO_RECORD)
            elif p.rows is None:
                table.append(PYTHON_RECORD)
                records[item_id] = p.record
            else:
                if id(p.rows) not in tables:
                    tables[id(p.rows)] = len(kept)
                    kept.append(p.rows)
                table.append(tables[id(p.rows)])
            row.append(p.row)
        out[dataset] = Located(np.fromiter((i for i, _ in found), np.int64, len(found)),
                               pa.array([p.source for _, p in found], pa.string()), np.asarray(table, np.int64),
                               np.asarray(row, np.int64), tuple(kept), records)
    return out


def json_column(rows: pa.Table, path: str) -> pa.Array:
    """:func:`json_text` of the value at ``path`` of every record (row) of ``rows``, as a string
    array. A column or struct field of integers, booleans, dates, decimals of scale 0 to 6 or
    strings with nothing to escape is written by Arrow, whose text for these is exactly Python's
    (``str`` of the value, quoted where json_text quotes it); anything else goes value by value."""
    segments = path.split(".") if path else []
    if segments and segments[0] in rows.column_names and rows.column_names.count(segments[0]) == 1:
        column = rows.column(segments[0]).combine_chunks()
        found: pa.Array | None = column
        for seg in segments[1:]:
            if found is None or not pa.types.is_struct(found.type) or found.type.get_field_index(seg) < 0:
                found = None
                break
            found = pc.struct_field(found, seg)
        text = _arrow_json(found) if found is not None else None
        if text is not None:
            return text
        return pa.array([json_text(value_at(v, segments[1:])) for v in column.to_pylist()], pa.string())
    return pa.array([json_text(value_at(r, segments)) for r in rows.to_pylist()], pa.string())


def _arrow_json(a: pa.Array) -> pa.Array | None:
    """json_text of each value of ``a`` written by Arrow, or None where Arrow's text could differ."""
    t = a.type
    if pa.types.is_integer(t):
        text = pc.cast(a, pa.string())
    elif pa.types.is_boolean(t):
        text = pc.if_else(a, "true", "false")
    elif pa.types.is_date32(t) or (pa.types.is_decimal(t) and 0 <= t.scale <= 6):
        # str(date) is ISO (years padded to 4); str(Decimal) of scale <= 6 is plain notation
        text = _quoted(pc.cast(a, pa.string()))
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        if pc.any(pc.match_substring_regex(a, r'[\x00-\x1f"\\]')).as_py():
            return None  # escapes: json's encoder writes them
        text = _quoted(pc.cast(a, pa.string()))
    else:
        return None
    return pc.fill_null(text, "null")


def _quoted(a: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', a, '"', "")


def json_text(v) -> str:
    """``v`` as JSON text (non-ASCII kept; dates, decimals and bytes as strings: ``_plain``). A
    trace prints one per node of every traced item, millions for a large group: the common scalars
    skip the encoder."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    kind = type(v)
    if kind is str:
        return _encode_string(v)
    if kind is int:
        return int.__repr__(v)
    if kind in (dt.datetime, dt.date, dt.time, decimal.Decimal):
        return _encode_string(str(v))
    return _ENCODER.encode(v)


def _plain(v):
    if isinstance(v, (dt.datetime, dt.date, dt.time, decimal.Decimal)):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode()
        except UnicodeDecodeError:
            return base64.b64encode(bytes(v)).decode()
    return str(v)


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_plain)
_encode_string = json.encoder.encode_basestring  # what _ENCODER does with a str


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


def file_path_of(hadoop_path: str) -> str | None:
    """The local path of a ``file:`` Hadoop path, else None."""
    if not hadoop_path.startswith("file:"):
        return None
    rest = hadoop_path[5:]
    return "/" + rest.lstrip("/") if rest.startswith("//") else rest


def place_of_input(loc: Locator) -> str:
    return loc.table or ", ".join(file_path_of(p) or p for p in loc.paths) or loc.format


def label(loc: Locator, place: str) -> str:
    return f"{loc.table} ({place})" if loc.table else place


def every(wanted: dict[int, list[Key]], source: str) -> dict[Key, Place]:
    """The same ``source`` (why an item cannot be read back) for every item still wanted."""
    return {k: Place(source) for keys in wanted.values() for k in keys}


def gone(loc: Locator, changed: list[str]) -> str:
    if not changed:
        return f"{place_of_input(loc)} (not found in the input: it was read another way)"
    if len(changed) == 1 and len(loc.files) == 1:
        return f"{label(loc, changed[0])} (changed since the run: not read back)"
    return f"{place_of_input(loc)} (changed since the run: {len(changed)} of {len(loc.files)} files; not read back)"


