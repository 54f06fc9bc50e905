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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from store.errors import BundleError
from store.model import AttrType

FORMAT = "strata-bundle/1"
SECTIONS = ("elements", "vertices", "edges")

_S = StringType()
_MAP = MapType(_S, _S, True)
SECTION_SCHEMAS: dict[str, StructType] = {
    "elements": StructType([
        StructField("idx", LongType(), False), StructField("id", _S), StructField("granularity", _S),
        StructField("parents", ArrayType(_S)), StructField("attrs", _MAP),
        StructField("attr_types", _MAP), StructField("problem", _S),
    ]),
    "vertices": StructType([
        StructField("idx", LongType(), False), StructField("id", _S),
        StructField("type", ArrayType(_S)), StructField("type_is_list", BooleanType()),
        StructField("elements", ArrayType(_MAP)), StructField("attrs", _MAP),
        StructField("attr_types", _MAP), StructField("problem", _S),
    ]),
    "edges": StructType([
        StructField("idx", LongType(), False), StructField("src", _S), StructField("process", _S),
        StructField("dst", _S), StructField("problem", _S),
    ]),
}


@dataclass
class Bundle:
    """A loaded bundle: the small header as Python data, the sections as DataFrames."""

    gsets: Mapping[str, Any]
    types: list[Any]
    elements: DataFrame
    vertices: DataFrame
    edges: DataFrame
    source: str = "<bundle>"
    sizes: tuple[int, int, int] | None = None  # record counts, when known without a Spark job

    def section(self, name: str) -> DataFrame:
        return getattr(self, name)


# ---------------------------------------------------------------------------- record shapes
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
        t = AttrType.of_value(v)
        types[str(k)] = t.value if t else (None if v is None else "invalid")
        if v is None:
            values[str(k)] = None
        elif isinstance(v, bool):
            values[str(k)] = "true" if v else "false"
        elif isinstance(v, (int, float, str)):
            values[str(k)] = str(v)
        else:
            values[str(k)] = json.dumps(v)
    return values, types, None


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
        blank = (idx,) + (None,) * (len(SECTION_SCHEMAS[section]) - 2)
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
def _check_header(doc: Mapping[str, Any], where: str) -> None:
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


def _rows_df(spark, section: str, records: Any, where: str) -> DataFrame:
    if isinstance(records, DataFrame):
        if records.columns == SECTION_SCHEMAS[section].fieldNames():
            return records  # already normalized
        return from_dataframe(section, records)
    if records is None:
        records = []
    if not isinstance(records, list):
        raise BundleError(f"invalid bundle {where}: section '{section}' must be a list")
    rows = [normalize(section, i, r) for i, r in enumerate(records)]
    return spark.createDataFrame(rows, SECTION_SCHEMAS[section])


def from_dict(spark, doc: Mapping[str, Any], where: str = "<dict>") -> Bundle:
    """A bundle given as Python data. Sections may also be DataFrames (for large inputs)."""
    if not isinstance(doc, Mapping):
        raise BundleError(f"invalid bundle {where}: the document must be a JSON object")
    _check_header(doc, where)
    types = doc.get("types") or []
    if not isinstance(types, list):
        raise BundleError(f"invalid bundle {where}: section 'types' must be a list")
    frames = {s: _rows_df(spark, s, doc.get(s), where) for s in SECTIONS}
    local = [doc.get(s) for s in SECTIONS]
    sizes = None
    if all(x is None or isinstance(x, list) for x in local):
        sizes = tuple(len(x or []) for x in local)
    return Bundle(doc.get("gsets") or {}, types, source=where, sizes=sizes, **frames)


def from_dataframe(section: str, df: DataFrame) -> DataFrame:
    """Normalize a DataFrame section (e.g. read from Parquet) with executors, keeping order."""
    names = df.columns
    schema = SECTION_SCHEMAS[section]

    def rows(it):
        for row, i in it:
            rec = {n: row[n] for n in names}
            yield normalize(section, i, {k: v for k, v in rec.items() if v is not None})

    rdd = df.rdd.zipWithIndex().mapPartitions(rows)
    return df.sparkSession.createDataFrame(rdd, schema)


def _jsonl_section(spark, path: str, section: str | None) -> DataFrame:
    """Parse JSON Lines on executors; with section=None, keep records tagged for each section."""
    lines = spark.sparkContext.textFile(path).zipWithIndex()

    def parse(it):
        for line, lineno in it:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                yield ("__error__", lineno, f"line {lineno + 1} is not valid JSON ({e.msg})")
                continue
            yield (section or (rec.get("section") if isinstance(rec, dict) else None), lineno, rec)

    return lines.mapPartitions(parse)


def from_path(spark, path: str | os.PathLike[str], fmt: str | None = None) -> Bundle:
    """Load a bundle from a `.json` file, a `.jsonl` file or a folder of section files."""
    p = Path(path)
    where = str(path)
    if not p.exists():
        raise BundleError(f"no such bundle file or folder: {where}")
    if p.is_dir():
        return _from_folder(spark, p)
    if p.suffix == ".jsonl":
        return _from_jsonl(spark, p)
    return from_dict(spark, read_json(p, where), where)


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
    _check_header({k: v for k, v in header.items() if k not in SECTIONS}, where)
    return header


def _from_jsonl(spark, p: Path) -> Bundle:
    where = str(p)
    header = jsonl_header(p)
    tagged = _jsonl_section(spark, str(p.resolve()), None).filter(lambda t: t[1] > 0).cache()
    bad = tagged.filter(lambda t: t[0] not in SECTIONS).take(1)
    if bad:
        tag, lineno, rec = bad[0]
        reason = rec if tag == "__error__" else f"record has section {tag!r}; use elements, vertices or edges"
        raise BundleError(f"invalid bundle {where}: line {lineno + 1}: {reason}")
    frames = {}
    for s in SECTIONS:
        recs = tagged.filter(lambda t, s=s: t[0] == s).map(lambda t: t[2]).zipWithIndex()
        rdd = recs.map(lambda ri, s=s: normalize(s, ri[1], {k: v for k, v in ri[0].items() if k != "section"}))
        frames[s] = spark.createDataFrame(rdd, SECTION_SCHEMAS[s])
    return Bundle(header.get("gsets") or {}, header.get("types") or [], source=where, **frames)


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


def _from_folder(spark, p: Path) -> Bundle:
    where = str(p)
    doc = folder_header(p)
    for s in SECTIONS:
        jsonl, parquet = section_files(p, s)
        if jsonl.exists():
            rdd = _jsonl_section(spark, str(jsonl.resolve()), s)
            bad = rdd.filter(lambda t: t[0] == "__error__").take(1)
            if bad:
                raise BundleError(f"invalid bundle {jsonl}: {bad[0][2]}")
            doc[s] = spark.createDataFrame(
                rdd.map(lambda t: t[2]).zipWithIndex().map(lambda ri, s=s: normalize(s, ri[1], ri[0])),
                SECTION_SCHEMAS[s],
            )
        elif parquet.exists():
            doc[s] = from_dataframe(s, spark.read.parquet(str(parquet.resolve())))
    bundle = from_dict(spark, doc, where)
    return bundle


__all__ = ["Bundle", "FORMAT", "SECTION_SCHEMAS", "from_dict", "from_path", "from_dataframe",
           "normalize"]
