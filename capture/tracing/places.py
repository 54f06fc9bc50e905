"""Where traced input items live, as both tracing wings report it: places, values and labels.

capture/tracing/locate.py finds the items (its docstring says how); this module holds what it and
the two wings that read inputs (capture/tracing/duckdb/locate.py, capture/tracing/spark/locate.py)
share: :class:`Place`, the value at an attribute path, Spark's names of files, and the ``source``
texts of items that cannot be read back.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from capture.operators import POS

if TYPE_CHECKING:
    from capture.locator import Locator

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
        return json_text(value_at(self.record, path.split(".") if path else []))


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


