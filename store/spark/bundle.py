"""Bundles loaded into section DataFrames for the Spark engine (the format and the record shapes:
store/bundle.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from store.bundle import (
    SECTIONS,
    check_document,
    folder_header,
    jsonl_header,
    normalize,
    read_json,
    section_files,
    section_schemas,
)
from store.errors import BundleError
from store.schema import spark_json
from store.spark.frames import local_frame

SECTION_SCHEMAS: dict[str, StructType] = {
    s: StructType.fromJson(spark_json(cols)) for s, cols in section_schemas().items()}


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
    return local_frame(spark, rows, SECTION_SCHEMAS[section])


def from_dict(spark, doc: Mapping[str, Any], where: str = "<dict>") -> Bundle:
    """A bundle given as Python data. Sections may also be DataFrames (for large inputs)."""
    types = check_document(doc, where)
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



__all__ = ["Bundle", "SECTION_SCHEMAS", "from_dict", "from_path", "from_dataframe"]
