"""The items' JSON view on the driver, from the Spark schema a manifest stores (its JSON form).

Pure Python over the schema's JSON (``{"type": "struct", "fields": [...]}``, ``"long"``,
``"decimal(10,2)"``, ...): no pyspark. :func:`viewer` turns a value as pyarrow reads it into the
value the reference matcher sees -- the JSON view the compiled Spark expression sees
(capture/tracing/spark/compile.py ``json_view``: integers as long, numbers as double, dates and
timestamps as Spark's strings, binary as UTF-8 text), or the value of Spark's ``to_json`` read
back (maps, or ``compiled=False``). :func:`why_not_cast` and :func:`unviewable` say, with the Spark
path's words, when the first or either view does not exist.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Callable
from typing import Any

from store.errors import UserError

SESSION_TIME_ZONE = "UTC"  # spark.sql.session.timeZone of the sessions Strata starts (store/spark/session.py)

Type = str | dict  # a Spark data type in its JSON form

_INTS = frozenset({"byte", "short", "integer", "long"})
_FLOATS = frozenset({"float", "double"})
_TEXTS = frozenset({"date", "timestamp", "timestamp_ntz", "binary"})  # strings in the JSON view
_SIMPLE = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint", "null": "void"}


def _kind(t: Type) -> str:
    return t.get("type", "") if isinstance(t, dict) else t


def _is_string(t: Type) -> bool:
    return t == "string" or (isinstance(t, str) and t.startswith("string collate"))


def _is_decimal(t: Type) -> bool:
    return isinstance(t, str) and t.startswith("decimal")


def simple_string(t: Type) -> str:
    """Spark's ``DataType.simpleString`` of a type in its JSON form (for messages)."""
    kind = _kind(t)
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{simple_string(f['type'])}" for f in t["fields"]) + ">"
    if kind == "array":
        return f"array<{simple_string(t['elementType'])}>"
    if kind == "map":
        return f"map<{simple_string(t['keyType'])},{simple_string(t['valueType'])}>"
    if isinstance(t, dict):
        return str(t.get("sqlType") or kind)
    return _SIMPLE.get(t, t)


def struct(fields: list[dict]) -> dict:
    """A struct type of these fields (JSON form)."""
    return {"type": "struct", "fields": fields}


def why_not_cast(t: Type) -> str | None:
    """Why the items have no JSON view the compiled match casts them to (then they are matched
    over ``to_json``): the Spark path's reason (compile.py ``json_view``), else None."""
    kind = _kind(t)
    if kind == "struct":
        if not t["fields"]:
            return "the result items have no fields"
        return next((w for f in t["fields"] if (w := _no_view(f["type"])) is not None), None)
    return _no_view(t)


def _no_view(t: Type) -> str | None:
    kind = _kind(t)
    if kind == "struct":
        return next((w for f in t["fields"] if (w := _no_view(f["type"])) is not None), None)
    if kind == "array":
        return _no_view(t["elementType"])
    if kind in _INTS or kind in _FLOATS or kind in _TEXTS or kind == "boolean" or _is_string(t) or _is_decimal(t):
        return None
    return f"result column type {simple_string(t)} has no fixed JSON schema"


def unviewable(t: Type, as_json: bool) -> str | None:
    """Why the driver cannot view items of type ``t`` (``as_json``: over ``to_json``), or None."""
    kind = _kind(t)
    if kind == "struct":
        return next((w for f in t["fields"] if (w := unviewable(f["type"], as_json)) is not None), None)
    if kind == "array":
        return unviewable(t["elementType"], as_json)
    if kind == "map":
        if not as_json:
            return "a map column has no JSON view"
        return unviewable(t["keyType"], True) or unviewable(t["valueType"], True)
    if (kind in _INTS or kind in _FLOATS or kind in _TEXTS or kind == "boolean" or _is_string(t)
            or _is_decimal(t)):
        return None
    return f"result column type {simple_string(t)} is not read on the driver"


def time_zone(store) -> dt.tzinfo:
    """The time zone Spark renders timestamps in: the running session's, else Strata's default."""
    from zoneinfo import ZoneInfo  # deferred: only a timestamp column with a zone needs it

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
        import numpy as np  # deferred: only a single-precision float column needs numpy

        return float(str(np.float32(value)))
    return value


def viewer(t: Type, as_json: bool, tz: dt.tzinfo = dt.timezone.utc) -> Callable[[Any], Any]:
    """value (as pyarrow reads it) -> the value the matcher sees: the JSON view (``as_json``
    False) or the value of ``to_json`` read back (True); timestamps shown in ``tz``. Raises a
    UserError for a type :func:`unviewable` names."""
    kind = _kind(t)
    if kind == "struct":
        fields = [(f["name"], viewer(f["type"], as_json, tz)) for f in t["fields"]]

        def struct_value(v):
            if v is None:
                return None
            out = {name: conv(v.get(name)) for name, conv in fields}
            return {k: x for k, x in out.items() if x is not None} if as_json else out
        return struct_value
    if kind == "array":
        elem = viewer(t["elementType"], as_json, tz)
        return lambda v: None if v is None else [None if e is None else elem(e) for e in v]
    if kind == "map" and as_json:
        key, val = viewer(t["keyType"], True, tz), viewer(t["valueType"], True, tz)

        def text(k):
            k = key(k)
            return ("true" if k else "false") if isinstance(k, bool) else str(k)
        return lambda v: None if v is None else {text(k): val(x) for k, x in v}
    if kind in _INTS:
        return lambda v: None if v is None else int(v)
    if kind in _FLOATS:
        single = kind == "float"
        if as_json:
            return lambda v: None if v is None else _json_float(float(v), single)
        return lambda v: None if v is None else float(v)
    if _is_decimal(t):
        whole = as_json and (t == "decimal" or t.replace(" ", "").endswith(",0)"))
        return lambda v: None if v is None else (int(v) if whole else float(v))
    if kind == "boolean":
        return lambda v: None if v is None else bool(v)
    if _is_string(t):
        return lambda v: v
    if kind == "binary":
        if as_json:
            return lambda v: None if v is None else base64.b64encode(bytes(v)).decode("ascii")
        return lambda v: None if v is None else bytes(v).decode("utf-8", "replace")
    if kind == "date":
        return lambda v: None if v is None else v.isoformat()
    if kind in ("timestamp", "timestamp_ntz"):
        instant = kind == "timestamp"
        return lambda v: None if v is None else _timestamp_text(v, instant, as_json, tz)
    raise UserError(unviewable(t, as_json) or f"result column type {simple_string(t)} is not read on the driver",
                    hint="trace it with --engine spark")
