"""Traced input items found with Spark: one job reads the input again.

For every file input the driver does not read (CSV, text, ORC: ids by row position; JSON Lines
and Parquet on other file systems): the job computes the ids the capture computed, checks that
Spark cuts the input as the capture saw it (the layout key), and keeps the traced ids with their
file and row (``file:line`` for CSV and text, counting one line per record after a header;
``file#row`` otherwise; JSON on a Hadoop path shows the line's byte offset, ``file@offset``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import unquote

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from capture import jvm
from capture.tracing.places import Key, Place, every, file_path_of, gone, label, place_of_input
from capture.tracking.sources import file_line_ids, file_row_ids, file_statuses, item_ids, layout_key

if TYPE_CHECKING:
    from capture.locator import Locator


def read_input(spark, dataset: str, loc: Locator, wanted: dict[int, list[Key]], values: bool) -> dict[Key, Place]:
    """Items of any file input, read again with Spark (one job): the ids computed as the capture
    computed them, kept when traced, with each one's file and index."""


    if loc.ids == "split":
        return every(wanted, f"{place_of_input(loc)} (a Hive table's files are read back on a local file "
                             "system only)")
    schema = StructType.fromJson(json.loads(loc.schema)) if loc.schema else None
    reader = spark.read.options(**dict(loc.options))
    paths = list(loc.paths)
    if loc.ids == "offset":
        df = reader.schema(StructType([*schema.fields, StructField(jvm.OFFSET, LongType(), False)])) \
            .format(jvm.CLASS).load(paths)
    else:
        df = (reader.schema(schema) if schema is not None else reader).format(loc.format).load(paths)
    if file_statuses(df._jdf.queryExecution().analyzed().relation().location()) != loc.files:
        return every(wanted, gone(loc, [file_path_of(f[0]) or f[0] for f in loc.files]))
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
            return every(wanted, f"{place_of_input(loc)} "
                                 "(Spark now cuts the input otherwise than at the run: not read back)")
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
            out[key] = Place(label(loc, place), record, values)
    return out | every(wanted, gone(loc, []))


def _file_name(uri: str) -> str:
    """A file as Spark's ``_metadata.file_path`` names it (a URI): its local path, else the URI."""
    return file_path_of(unquote(uri)) or uri


