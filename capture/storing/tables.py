"""The capture tables: their names and the schemas of the fixed ones (docs/capture.md).

* ``capture_result/<run>`` (:func:`result_table`): the run's annotated result -- the visible
  columns with every hidden id, position and collected-id column, except the derived ids
  (capture/ids.py); the run's id associations (Pebble's P) in compressed form
  (capture/storing/runs.py derives P from it) and the result items TRACE matches on. In a split
  copy it holds the hidden columns only;
* ``capture_output/<run>`` (:func:`output_table`): a split copy's visible columns, the written
  Parquet output's files, linked;
* ``capture_operators`` (:data:`OPERATORS`, :data:`OPERATORS_SCHEMA`): one row per operator,
  Definition 5.1's <oid, type, I, M> (schema level);
* ``capture_sources`` (:data:`SOURCES`, :data:`SOURCES_SCHEMA`): one row per source operator
  whose input can be found again: where its items live (``capture.locator.Locator``
  as JSON: files with lengths and times, reader, options), for a trace's ``source`` and ``value``;
* ``capture_tables`` (:data:`TABLES`, :data:`TABLES_SCHEMA`): one row per catalog table a run
  read or wrote, as the session's catalog had it at the commit (capture/storing/catalog_tables.py): its
  location, database, name and schema, the session's warehouse and Hive metastore, and for the
  table written which result column went into which table column; the OpenLineage export names
  tables by it (capture/storing/ol_names.py). Stores written before it have none;
* ``capture_programs`` (:data:`PROGRAMS`, :data:`PROGRAMS_SCHEMA`): one row per run captured from
  a script (``strata capture``): the script, its arguments, the working folder and which of its
  writes made the run, so the run can be replayed (capture/tracing/checking.py). Runs captured
  otherwise, or before it, have none;
* ``capture_runs`` (:data:`RUNS`, :data:`RUNS_SCHEMA`): one row per run (pipeline, output,
  times, result items, the slots saying where each operator's associations sit in the annotated
  result, and how to compute the derived ids).

The schema of a run's result tables is the annotated result's own.
"""

from __future__ import annotations

import re

import pyarrow as pa

RUNS, OPERATORS, SOURCES, TABLES = "capture_runs", "capture_operators", "capture_sources", "capture_tables"
PROGRAMS = "capture_programs"
RESULT_PREFIX, OUTPUT_PREFIX = "capture_result/", "capture_output/"
RUN = "run"  # the run id column of capture_runs and capture_operators


def _safe(run: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]|^\.+", "_", run)


def result_table(run: str) -> str:
    """The store table holding run ``run``'s annotated result (one folder: characters a file
    system or Hadoop path could trip on become ``_``; run ids end in a unique random part). In a
    split copy it holds the hidden columns only, and :func:`output_table` the visible ones."""
    return RESULT_PREFIX + _safe(run)


def output_table(run: str) -> str:
    """A split copy's visible columns: the files of the run's written output, linked."""
    return OUTPUT_PREFIX + _safe(run)


PART = r"^part-(\d+)"  # a part file's name starts with its task's partition number (ours and Spark's)


def part_of(name: str) -> int | None:
    """The partition number of part file ``name`` (a file name, no folder), or None: a split
    copy pairs the output's part files with the hidden columns' by this number."""
    m = re.match(PART, name)
    return int(m.group(1)) if m else None


_S, _I = pa.string(), pa.int32()


def _f(name: str, type_: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable)


def _list(type_: pa.DataType, nullable: bool = True) -> pa.DataType:
    return pa.list_(pa.field("element", type_, nullable))


OPERATORS_SCHEMA = pa.schema([
    _f(RUN, _S),
    _f("oid", _I),
    _f("type", _S),
    _f("method", _S),
    _f("inputs", _list(pa.struct([
        _f("input", _I),
        _f("pred", _I),
        _f("accessed", _list(_S, False), True),  # null = undefined (⊥)
    ]), False)),
    _f("manipulated", _list(pa.struct([_f("input", _I), _f("src", _S), _f("dst", _S)]), False),
       True),  # null = undefined (⊥)
    _f("dataset", _S, True),
    _f("detail", _S, True),
])

SOURCES_SCHEMA = pa.schema([
    _f(RUN, _S),
    _f("oid", _I),
    _f("locator", _S),  # capture.locator.Locator.to_json
])

TABLES_SCHEMA = pa.schema([
    _f(RUN, _S),
    _f("table", _S),  # the dataset name capture gives the table (`spark_catalog.db.t`)
    _f("database", _S, True),
    _f("name", _S),
    _f("location", _S),  # URI: the table's storage location, else the catalog's default path for it
    _f("warehouse", _S, True),  # the session's spark.sql.warehouse.dir
    _f("metastore", _S, True),  # the Hive metastore URI of a session with Hive support, if one is set
    _f("schema", _S),  # the table's schema (Spark JSON)
    _f("columns", _S, True),  # JSON [[result column, table column], ...] for the table written, else null
])

PROGRAMS_SCHEMA = pa.schema([
    _f(RUN, _S),
    _f("script", _S),  # the script's absolute path
    _f("args", _S),  # JSON list: its arguments
    _f("cwd", _S),  # the working folder it ran in
    _f("write", _I),  # which of the script's writes made the run (1, 2, ...)
])

RUNS_SCHEMA = pa.schema([
    _f(RUN, _S),
    _f("pipeline", _S),
    _f("result_oid", _I),
    _f("output_path", _S),
    _f("output_format", _S),
    _f("started", _S),
    _f("finished", _S),
    _f("operators", _I),
    _f("items", pa.int64()),
    _f("id_column", _S),
    _f("slots", _S),  # JSON: capture.storing.runs.slots_json
])
