"""Load `strata-bundle/1` bundles on the driver, without Spark (the local ingest path).

Every source `store.bundle` accepts — a dict, a `.json` document, a `.jsonl` file, a folder of
per-section JSON Lines / Parquet files — becomes a `LocalBundle`: the header as Python data and
each section as a list of rows in the layout of `store.bundle.SECTION_SCHEMAS` (tuples made by
the same `store.bundle.normalize`), numbered as Spark numbers them, so that validation reports
the same record for the same input. Files are read with `json` and pyarrow.

`count_records` counts a source's records cheaply (line counts of JSON Lines, Parquet footers),
for the choice between this path and Spark's (`store.duckdb.ingest`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.bundle import (
    SECTIONS,
    check_document,
    folder_header,
    jsonl_header,
    normalize,
    parquet_paths,
    read_json,
    section_files,
)
from store.errors import BundleError
from store.ingest import is_dataframe


@dataclass
class LocalBundle:
    """A loaded bundle: the header as Python data, the sections as normalized row tuples."""

    gsets: Mapping[str, Any]
    types: list[Any]
    elements: list[tuple] = field(default_factory=list)
    vertices: list[tuple] = field(default_factory=list)
    edges: list[tuple] = field(default_factory=list)
    source: str = "<bundle>"

    def sizes(self) -> tuple[int, int, int]:
        return len(self.elements), len(self.vertices), len(self.edges)


class NotLocal(Exception):
    """The source cannot be read without Spark (a section is a Spark DataFrame)."""


# ---------------------------------------------------------------------------- sources
def from_dict(doc: Any, where: str = "<dict>") -> LocalBundle:
    """A bundle given as Python data (`store.bundle.from_dict`'s checks, in the same order)."""
    types = check_document(doc, where)
    sections = {}
    for s in SECTIONS:
        records = doc.get(s)
        if is_dataframe(records):
            raise NotLocal(s)
        if records is None:
            records = []
        if isinstance(records, _Rows):
            sections[s] = records.rows
            continue
        if not isinstance(records, list):
            raise BundleError(f"invalid bundle {where}: section '{s}' must be a list")
        sections[s] = [normalize(s, i, r) for i, r in enumerate(records)]
    return LocalBundle(doc.get("gsets") or {}, types, source=where, **sections)


@dataclass
class _Rows:
    """A section read from a file, already normalized."""

    rows: list[tuple]


def from_path(path: str | os.PathLike[str]) -> LocalBundle:
    """A bundle from a `.json` file, a `.jsonl` file or a folder of section files."""
    p = Path(path)
    where = str(path)
    if not p.exists():
        raise BundleError(f"no such bundle file or folder: {where}")
    if p.is_dir():
        return _from_folder(p)
    if p.suffix == ".jsonl":
        return _from_jsonl(p)
    return from_dict(read_json(p, where), where)


_EOL = re.compile(r"\r\n|\r|\n")


def _lines(p: Path) -> list[str]:
    """The file's lines as Hadoop's text reader splits them (LF, CR or CR LF; no final empty line)."""
    with open(p, "rb") as fh:
        text = fh.read().decode("utf-8", errors="replace")
    lines = _EOL.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _parsed(p: Path, skip_first: bool) -> list[tuple[int, Any, str | None]]:
    """(line number from 0, record, error) for every non-blank line, as `store.bundle` parses them."""
    out = []
    for lineno, line in enumerate(_lines(p)):
        if (skip_first and lineno == 0) or not line.strip():
            continue
        try:
            out.append((lineno, json.loads(line), None))
        except ValueError as e:
            out.append((lineno, None, f"line {lineno + 1} is not valid JSON ({e.msg})"))
    return out


def _from_jsonl(p: Path) -> LocalBundle:
    where = str(p)
    header = jsonl_header(p)
    sections: dict[str, list[tuple]] = {s: [] for s in SECTIONS}
    for lineno, rec, error in _parsed(p, skip_first=True):
        tag = rec.get("section") if isinstance(rec, dict) else None
        if error is not None or tag not in SECTIONS:
            reason = error or f"record has section {tag!r}; use elements, vertices or edges"
            raise BundleError(f"invalid bundle {where}: line {lineno + 1}: {reason}")
        rows = sections[tag]
        rows.append(normalize(tag, len(rows), {k: v for k, v in rec.items() if k != "section"}))
    return LocalBundle(header.get("gsets") or {}, header.get("types") or [], source=where, **sections)


def _from_folder(p: Path) -> LocalBundle:
    where = str(p)
    doc = folder_header(p)
    for s in SECTIONS:
        jsonl, parquet = section_files(p, s)
        if jsonl.exists():
            parsed = _parsed(jsonl, skip_first=False)
            bad = [error for _, _, error in parsed if error is not None]
            if bad:
                raise BundleError(f"invalid bundle {jsonl}: {bad[0]}")
            doc[s] = _Rows([normalize(s, i, rec) for i, (_, rec, _) in enumerate(parsed)])
        elif parquet.exists():
            doc[s] = _Rows([normalize(s, i, {k: v for k, v in rec.items() if v is not None})
                            for i, rec in enumerate(parquet_records(parquet))])
    return from_dict(doc, where)


# ---------------------------------------------------------------------------- Parquet
def parquet_records(path: Path) -> list[dict[str, Any]]:
    """A Parquet file's (or folder's) rows as dicts of the values Spark's rows hold: maps as
    dicts, structs as tuples (Spark's Row is a tuple, not a mapping), lists as lists."""
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    out: list[dict[str, Any]] = []
    for f in parquet_paths(path):
        table = pq.read_table(f)
        names = table.column_names
        cols = [[_spark_value(v, table.schema.field(n).type) for v in table.column(n).to_pylist()]
                for n in names]
        out += [dict(zip(names, vals, strict=True)) for vals in zip(*cols, strict=True)] if cols else []
    return out


def _spark_value(value: Any, arrow_type) -> Any:
    import pyarrow as pa  # deferred: only this path needs pyarrow

    if value is None:
        return None
    if pa.types.is_map(arrow_type):
        return {k: _spark_value(v, arrow_type.item_type) for k, v in value}
    if pa.types.is_struct(arrow_type):
        return tuple(_spark_value(value[arrow_type.field(i).name], arrow_type.field(i).type)
                     for i in range(arrow_type.num_fields))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return [_spark_value(v, arrow_type.value_type) for v in value]
    return value


__all__ = ["LocalBundle", "NotLocal", "from_dict", "from_path", "parquet_records"]
