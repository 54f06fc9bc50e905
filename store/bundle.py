"""Load `strata-bundle/1` provenance bundles (docs/bundle-format.md) into section DataFrames.

Whatever the source — a dict, a `.json` document, a `.jsonl` file, or a folder of per-section
JSON Lines / Parquet files — the three large sections become DataFrames with one fixed layout,
so validation (`store.validate`) and ingest (`store.ingest`) have a single code path and never
collect the data to the driver:

    elements: idx long, id string, granularity string, parents array<string>,
              attrs map<string,string>, attr_types map<string,string>, problem string
    vertices: idx long, id string, type array<string>, type_is_list boolean,
              elements array<map<string,string>>, attrs map<string,string>,
              attr_types map<string,string>, problem string
    edges:    idx long, src string, process string, dst string, problem string

`idx` is the record's position within its section (what error messages call "record N"),
`attrs` holds attribute values as strings and `attr_types` their JSON value types
(`string|int|float|bool`, or `invalid` for lists and objects); `problem` is set when a record's
shape is wrong (e.g. a missing id), so it is reported with its index like every other error.

Files (one per section) in a bundle folder: `bundle.json` (header: format, gsets, types, and
optionally small sections), `elements.jsonl|.parquet`, `vertices.jsonl|.parquet`,
`edges.jsonl|.parquet`. A single `.jsonl` file holds a header line `{"format": ..., "gsets": ...,
"types": ...}` and then one record per line tagged with `"section": "elements"|"vertices"|"edges"`.
In Parquet sections `parents` is `array<string>`, `type` a string or `array<string>`, `elements`
`array<map<string,string>>`, and `attrs` a JSON object text column.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from store.errors import BundleError
from store.model import AttrType

FORMAT = "strata-bundle/1"
SECTIONS = ("elements", "vertices", "edges")

def section_schemas() -> dict:
    """The normalized layout of each section as Arrow schemas (the driver's reader and Spark's
    share it; store/spark/bundle.py derives the Spark schemas from it)."""
    import pyarrow as pa  # deferred: loaded by the readers, not by every start

    s, m = pa.string(), pa.map_(pa.string(), pa.string())
    idx = pa.field("idx", pa.int64(), False)
    return {
        "elements": pa.schema([idx, ("id", s), ("granularity", s), ("parents", pa.list_(s)), ("attrs", m),
                               ("attr_types", m), ("problem", s)]),
        "vertices": pa.schema([idx, ("id", s), ("type", pa.list_(s)), ("type_is_list", pa.bool_()),
                               ("elements", pa.list_(m)), ("attrs", m), ("attr_types", m), ("problem", s)]),
        "edges": pa.schema([idx, ("src", s), ("process", s), ("dst", s), ("problem", s)]),
    }


# The columns of each section's normalized rows (`section_schemas` gives their types).
SECTION_FIELDS = {
    "elements": ("idx", "id", "granularity", "parents", "attrs", "attr_types", "problem"),
    "vertices": ("idx", "id", "type", "type_is_list", "elements", "attrs", "attr_types", "problem"),
    "edges": ("idx", "src", "process", "dst", "problem"),
}


# ---------------------------------------------------------------------------- record shapes
# an attribute value of exactly one of these types: its type's name (AttrType.of_value's answer)
_PLAIN = {str: "string", int: "int", float: "float", bool: "bool"}


def _attrs(obj: Any) -> tuple[dict | None, dict | None, str | None]:
    if obj is None:
        return None, None, None
    if isinstance(obj, str):  # Parquet sections carry attrs as JSON object text
        try:
            obj = json.loads(obj)
        except ValueError:
            return None, None, "'attrs' is not valid JSON object text"
    if not isinstance(obj, Mapping):
        return None, None, "'attrs' must be an object"
    values: dict[str, str | None] = {}
    types: dict[str, str | None] = {}
    for k, v in obj.items():
        plain = _PLAIN.get(type(v))  # the usual values, without AttrType's checks (the same result)
        if plain is not None and type(k) is str:
            types[k] = plain
            values[k] = v if plain == "string" else ("true" if v else "false") if plain == "bool" else str(v)
            continue
        values[str(k)], types[str(k)] = _attr(v)
    return values, types, None


def _attr(v: Any) -> tuple[str | None, str | None]:
    """Any attribute value as text and its type (AttrType.of_value's, "invalid" for a list or
    an object, None for null)."""
    t = AttrType.of_value(v)
    kind = t.value if t else (None if v is None else "invalid")
    if v is None:
        return None, kind
    if isinstance(v, bool):
        return ("true" if v else "false"), kind
    if isinstance(v, (int, float, str)):
        return str(v), kind
    return json.dumps(v), kind


def _str(rec: Mapping[str, Any], key: str, required: bool = True) -> tuple[str | None, str | None]:
    v = rec.get(key)
    if v is None:
        return None, (f"missing '{key}'" if required else None)
    if not isinstance(v, str) or not v:
        return None, f"'{key}' must be a non-empty string, got {v!r}"
    return v, None


def normalize(section: str, idx: int, rec: Any) -> tuple:
    """One raw record -> a row of SECTION_SCHEMAS[section] (pure; runs on executors too)."""
    if not isinstance(rec, Mapping):
        blank = (idx,) + (None,) * (len(SECTION_FIELDS[section]) - 2)
        return blank + (f"a record must be a JSON object, got {type(rec).__name__}",)
    if hasattr(rec, "asDict"):
        rec = rec.asDict(recursive=True)
    problems: list[str] = []
    if section == "edges":
        src, p1 = _str(rec, "src")
        proc, p2 = _str(rec, "process")
        dst, p3 = _str(rec, "dst")
        problems += [p for p in (p1, p2, p3) if p]
        return (idx, src, proc, dst, problems[0] if problems else None)
    ident, p = _str(rec, "id")
    problems += [p] if p else []
    values, types, p = _attrs(rec.get("attrs"))
    problems += [p] if p else []
    if section == "elements":
        gran, p = _str(rec, "granularity")
        problems += [p] if p else []
        parents = rec.get("parents") or []
        if isinstance(parents, str):
            parents = [parents]
        if not isinstance(parents, (list, tuple)) or not all(isinstance(x, str) for x in parents):
            problems.append("'parents' must be a list of element ids")
            parents = []
        return (idx, ident, gran, list(parents), values, types, problems[0] if problems else None)
    raw_type = rec.get("type")
    if isinstance(raw_type, str) and raw_type:
        type_names, is_list = [raw_type], False
    elif isinstance(raw_type, (list, tuple)) and raw_type and all(isinstance(t, str) for t in raw_type):
        # A one-element list means the same as the bare name (a granularity is its own type);
        # Parquet sections need this, since a column holds either names or lists, not both.
        type_names, is_list = list(raw_type), len(raw_type) > 1
    else:
        type_names, is_list = None, None
        problems.append("'type' must be a type name or a list of granularities")
    ces = rec.get("elements")
    out_ces: list[dict[str, str]] = []
    if not isinstance(ces, (list, tuple)) or not ces:
        problems.append("'elements' must be a non-empty list of complex elements")
    else:
        for i, ce in enumerate(ces):
            if hasattr(ce, "items") and all(isinstance(k, str) and isinstance(v, str) for k, v in ce.items()):
                out_ces.append(dict(ce.items()))
            else:
                problems.append(f"complex element {i} must map granularity names to element ids")
                break
    return (idx, ident, type_names, is_list, out_ces, values, types, problems[0] if problems else None)


# ---------------------------------------------------------------------------- sources
def check_header(doc: Mapping[str, Any], where: str) -> None:
    fmt = doc.get("format")
    if fmt != FORMAT:
        raise BundleError(
            f"invalid bundle {where}: 'format' is {fmt!r}, expected '{FORMAT}'",
            hint='add "format": "strata-bundle/1" at the top of the bundle',
        )
    unknown = set(doc) - {"format", "gsets", "types", "section", *SECTIONS}
    if unknown:
        raise BundleError(f"invalid bundle {where}: unknown top-level key(s) {sorted(unknown)}",
                          hint="a bundle has format, gsets, types, elements, vertices and edges")


def check_document(doc: Any, where: str) -> list[Any]:
    """A whole bundle document given as Python data, checked (an object, its header, a list of
    types) in the order both engines' loaders report it; its types."""
    if not isinstance(doc, Mapping):
        raise BundleError(f"invalid bundle {where}: the document must be a JSON object")
    check_header(doc, where)
    types = doc.get("types") or []
    if not isinstance(types, list):
        raise BundleError(f"invalid bundle {where}: section 'types' must be a list")
    return types


def read_json(p: Path, where: str) -> Any:
    """A JSON document; errors name the line and column."""
    try:
        with open(p, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as e:
        raise BundleError(
            f"invalid bundle {where}: not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        ) from e
    except UnicodeDecodeError as e:
        raise BundleError(f"invalid bundle {where}: not UTF-8 text ({e.reason})") from e


def jsonl_header(p: Path) -> dict:
    """The checked header (line 1) of a JSON Lines bundle."""
    where = str(p)
    with open(p, encoding="utf-8") as fh:
        first = fh.readline()
    try:
        header = json.loads(first) if first.strip() else {}
    except ValueError as e:
        raise BundleError(f"invalid bundle {where}: line 1 is not valid JSON ({e})") from e
    if not isinstance(header, dict) or "format" not in header:
        raise BundleError(f"invalid bundle {where}: line 1 must be the header "
                          '{"format": "strata-bundle/1", "gsets": ..., "types": ...}')
    check_header({k: v for k, v in header.items() if k not in SECTIONS}, where)
    return header


def folder_header(p: Path) -> dict:
    """The header of a bundle folder (its bundle.json, a JSON object), checked."""
    header_file = p / "bundle.json"
    if not header_file.exists():
        raise BundleError(f"invalid bundle folder {p}: missing bundle.json (the header with "
                          "format, gsets and types)")
    doc = read_json(header_file, str(header_file))
    if not isinstance(doc, dict):
        raise BundleError(f"invalid bundle {p}: the document must be a JSON object")
    return doc


def section_files(p: Path, section: str) -> tuple[Path, Path]:
    """(`<section>.jsonl`, `<section>.parquet`) of a bundle folder; at most one may exist."""
    jsonl, parquet = p / f"{section}.jsonl", p / f"{section}.parquet"
    if jsonl.exists() and parquet.exists():
        raise BundleError(f"invalid bundle folder {p}: both {section}.jsonl and {section}.parquet exist")
    return jsonl, parquet


# ---------------------------------------------------------------------------- counting
def parquet_paths(path: Path) -> list[Path]:
    """The data files Spark reads for a Parquet path, in the order Spark numbers their rows: a
    file, or a folder's files (not those starting with `_` or `.`), largest first."""
    if path.is_file():
        return [path]
    files = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
        files += [Path(dirpath, f) for f in sorted(filenames) if not f.startswith(("_", "."))]
    return sorted(files, key=lambda f: -f.stat().st_size)


def parquet_rows(path: Path) -> int:
    """Rows of a Parquet file or folder, from the footers (no data read)."""
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    return sum(pq.ParquetFile(f).metadata.num_rows for f in parquet_paths(path))


def line_count(path: Path) -> int:
    """Lines of a text file (a last line without a newline counts), without parsing it."""
    n, last = 0, b"\n"
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def count_records(path: Path) -> int:
    """Records of a bundle file or folder, counted without parsing the records."""
    if path.is_dir():
        n = 0
        for s in SECTIONS:
            if (path / f"{s}.jsonl").exists():
                n += line_count(path / f"{s}.jsonl")
            elif (path / f"{s}.parquet").exists():
                n += parquet_rows(path / f"{s}.parquet")
        return n
    return line_count(path)
