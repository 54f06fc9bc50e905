"""Committed capture runs opened on Spark: a run's stored annotated result as DataFrames
(:class:`StoredRun`, :func:`load_run`), P as a view of it, and a split copy's rows paired by
``ROW_KEY``. The run's operators and run row are read by capture/storing/runs.py (no pyspark),
whose :class:`~capture.storing.runs.RunHead` :func:`opened` turns into a :class:`StoredRun`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from capture import ids as drv
from capture.id_columns import hydrate, named
from capture.ids import is_hidden
from capture.operators import OperatorProv, Slot
from capture.storing.materialize import assoc_frame, identity_frame
from capture.storing.runs import ROW_KEY, RunHead, read_head, rows_by_key
from capture.storing.tables import PART, output_table, part_of, result_table


def keyed(df: DataFrame) -> DataFrame:
    """A split copy's table with ``ROW_KEY`` (from each row's file name and index in the file),
    the key that pairs a row of the output files with its row of hidden columns."""
    meta = df.metadataColumn("_metadata")
    part = F.regexp_extract(meta.getField("file_name"), PART, 1).cast("long")
    return df.withColumn(ROW_KEY, F.shiftleft(part, 40) + meta.getField("row_index"))


def hidden_rows(hidden: DataFrame, keys: list[int]) -> list[dict]:
    """The rows of a split copy's hidden table with the given ``ROW_KEY``s (each row a dict, with
    its key). On a local store pyarrow reads just the row groups that hold them (no Spark job: a
    TRACE's second step costs milliseconds, not a scan of every hidden file); elsewhere
    :func:`joined_rows`."""
    files: dict[int, str] = {}
    for uri in hidden.inputFiles():
        where = urlparse(uri)
        part = part_of(os.path.basename(where.path))
        if where.scheme != "file" or part is None:
            return joined_rows(hidden, keys)
        files[part] = unquote(where.path)
    return rows_by_key(files, keys)


def joined_rows(hidden: DataFrame, keys: list[int]) -> list[dict]:
    """:func:`hidden_rows` in one Spark job (a store on a cluster path): a broadcast join."""
    keys_df = hidden.sparkSession.createDataFrame(pa.table({ROW_KEY: pa.array(keys, pa.int64())}))
    return keyed(hidden).join(F.broadcast(keys_df), ROW_KEY).toArrow().to_pylist()


@dataclass(frozen=True)
class StoredRun:
    """A committed capture run: its operators, result operator and annotated result (as Spark
    DataFrames; :class:`capture.storing.runs.RunHead` is the same run without them)."""

    run: str
    operators: tuple[OperatorProv, ...]
    result_oid: int
    hidden: DataFrame  # the stored hidden columns (in a one-table copy, every column), no job run yet
    id_col: str  # the hidden column holding each result item's id
    slots: tuple[Slot, ...]
    output: tuple[str, str, str] | None = None  # the written result: path, format, finished (ISO)
    outputs: DataFrame | None = None  # a split copy's visible columns (the linked output files)
    derived: tuple[drv.Derived, ...] = ()  # hidden id columns not stored but computed (capture/ids.py)

    @property
    def full(self) -> DataFrame:
        """The stored table with its derived id columns computed again (a split copy: the hidden
        columns only)."""
        return hydrate(self.hidden, self.derived)

    @property
    def result(self) -> DataFrame:
        """The annotated result: visible and every hidden column (a split copy's two tables joined
        by row; the backtracer avoids this join, see :func:`capture.tracing.backtrace.backtrace_run`)."""
        if self.outputs is None:
            rows = self.full
        else:
            rows = hydrate(keyed(self.outputs).join(keyed(self.hidden), ROW_KEY), self.derived)
        visible = self.visible
        cols = [self.id_col, *visible, *(c for c in rows.columns if c not in (*visible, ROW_KEY, self.id_col))]
        return rows.select(*[named(c) for c in cols])

    def match_source(self) -> tuple[DataFrame, str]:
        """The table a pattern is matched on and its row id column: the output files keyed by row
        in a split copy (the hidden columns are fetched for the matched rows only), else the one
        stored table and its result item ids."""
        return (keyed(self.outputs), ROW_KEY) if self.outputs is not None else (self.full, self.id_col)

    @property
    def visible(self) -> list[str]:
        cols = self.outputs.columns if self.outputs is not None else self.hidden.columns
        return [c for c in cols if not is_hidden(c)]

    def stored_associations(self) -> DataFrame:
        """P for the operators that change ids (``oid, out_id, input, in_id, pos``)."""
        return assoc_frame(self.full, self.slots)

    def associations(self) -> DataFrame:
        """Pebble's P for every operator (Table 6), derived from the stored annotated result."""
        stored = self.stored_associations()
        ids = self.full.select(self.id_col)
        return stored.unionByName(identity_frame(stored, self.operators, self.result_oid, ids))


def load_run(store, run: str | None = None) -> StoredRun:
    """Read a committed run (default: the store's last capture run): its operators and run row --
    with pyarrow on a local store, else in ONE Spark job -- and its stored result as DataFrames
    (no job runs; the SparkSession starts if it has not)."""
    return opened(store, read_head(store, run))


def opened(store, head: RunHead) -> StoredRun:
    """The run ``head`` describes with its stored result as DataFrames (no job runs)."""
    outputs = store.table(output_table(head.run)) if head.split else None
    return StoredRun(head.run, head.operators, head.result_oid, store.table(result_table(head.run)), head.id_col,
                     head.slots, head.output, outputs, head.derived)
