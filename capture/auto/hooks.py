"""Capture every write of unmodified PySpark code: ``with capturing(spark, store): ...``.

Inside the block, each ``DataFrameWriter`` a DataFrame hands out (``df.write``) records its format,
mode, options and partitioning; its terminal call (``save``, ``parquet``, ``json``, ``csv``, ``orc``,
``text``, ``saveAsTable``, ``insertInto``) translates the DataFrame's analyzed plan
(capture/auto/plan.py) and writes it with :meth:`Tracker.write`: the program's output, written
from the same expressions, and its provenance in one store commit — one run per write.
``spark.sql`` is intercepted for ``CREATE TABLE … AS SELECT`` and ``INSERT INTO/OVERWRITE …
SELECT``: the query's plan is captured the same way and written into the table. Everything else
passes through. A write that cannot be captured raises before any job runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrameWriter, SparkSession
from pyspark.sql.types import StructType

from capture.auto.plan import translate
from capture.errors import UnsupportedOperation
from capture.tracking.tracker import Tracker
from store import progress

_state = threading.local()
_TERMINAL = ("save", "parquet", "json", "csv", "orc", "text", "saveAsTable", "insertInto")


def _inside() -> bool:
    return getattr(_state, "writing", False)


@contextmanager
def _writing() -> Iterator[None]:
    """Writes made by capture itself (the tracked result, the store) pass through untouched."""
    before = _inside()
    _state.writing = True
    try:
        yield
    finally:
        _state.writing = before


@dataclass
class Capture:
    """What a ``capturing`` block did: one ``RunInfo`` per captured write, in order."""

    tracker: Tracker
    runs: list = field(default_factory=list)

    def write(self, df, target: str, fmt: str, mode: str, options: dict[str, str],
              table: tuple[str, str] | None = None):
        """Translate ``df``'s plan with a fresh tracker (operator ids start at 1 for every
        write, so a run's ids do not depend on the writes before it) and write it."""
        t = self.tracker
        tracker = Tracker(t.spark, t.store, pipeline=t.pipeline, model=t.model)
        with progress.step(f"capture write {len(self.runs) + 1}: {target}", total=2) as step:
            tdf = translate(tracker, df)
            step.advance()
            with _writing():
                info = tracker.write(tdf, target, format=fmt, mode=mode, table=table, **options)
            step.advance()
        self.runs.append(info)
        return info


class _Writer:
    """Stands in for the JVM ``DataFrameWriter`` of a ``df.write``: records its settings and turns
    its terminal call into a captured write. Anything else goes to the JVM writer."""

    def __init__(self, jwrite, df, capture: Capture):
        self._j = jwrite
        self._df = df
        self._capture = capture
        self._format: str | None = None
        self._mode = "errorifexists"
        self._options: dict[str, str] = {}
        self._refused: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._j, name)

    def _keep(self, jwrite) -> _Writer:
        self._j = jwrite
        return self

    def format(self, source):
        self._format = str(source)
        return self._keep(self._j.format(source))

    def mode(self, mode):
        self._mode = str(mode).lower()
        return self._keep(self._j.mode(mode))

    def option(self, key, value):
        self._options[str(key)] = str(value)
        return self._keep(self._j.option(key, value))

    def options(self, opts):
        self._options.update({str(k): str(v) for k, v in dict(opts).items()})
        return self._keep(self._j.options(opts))

    def partitionBy(self, cols):  # noqa: N802 - the JVM writer's name
        if cols.size():
            self._refused = "partitionBy (a partitioned output)"
        return self._keep(self._j.partitionBy(cols))

    def bucketBy(self, *args):  # noqa: N802
        self._refused = "bucketBy"
        return self._keep(self._j.bucketBy(*args))

    def sortBy(self, *args):  # noqa: N802
        self._refused = "sortBy"
        return self._keep(self._j.sortBy(*args))

    def _target(self, method: str, args: tuple) -> Any:
        if self._refused:
            raise UnsupportedOperation(
                f"capture: a write with {self._refused} cannot be captured yet. Nothing was written",
                hint="write without it under capture, or run the script without capture")
        spark = self._df.sparkSession
        default = spark.conf.get("spark.sql.sources.default", "parquet")
        opts = dict(self._options)
        if method in ("saveAsTable", "insertInto"):
            fmt = self._format or default
            mode = self._mode
            if method == "insertInto":
                mode = "overwrite" if mode == "overwrite" else "append"
            return self._capture.write(self._df, args[0], fmt, mode, opts, table=(method, args[0]))
        if method == "save":
            path = args[0] if args else opts.pop("path", None)
            if path is None:
                raise UnsupportedOperation("capture: a save() without a path cannot be captured",
                                           hint="pass the path: df.write.save(path)")
            return self._capture.write(self._df, path, self._format or default, self._mode, opts)
        return self._capture.write(self._df, args[0], method, self._mode, opts)


def _terminal(method: str):
    def call(self, *args):
        self._target(method, args)

    call.__name__ = method
    return call


for _m in _TERMINAL:
    setattr(_Writer, _m, _terminal(_m))


# SQL statements that write, but not from one query capture can translate
_REFUSED_SQL = {"MergeIntoTable": "MERGE INTO", "UpdateTable": "UPDATE", "DeleteFromTable": "DELETE FROM",
                "LoadData": "LOAD DATA"}


def _sql_write(spark, query: str, capture: Capture):
    """``(df, table, method, mode, fmt)`` when ``query`` is a CTAS or INSERT … SELECT, else None."""
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(query)
    except Exception:  # noqa: BLE001 - Spark reports the syntax error when it runs the query
        return None
    kind = plan.getClass().getSimpleName()
    ds = spark._jvm.org.apache.spark.sql.classic.Dataset
    from pyspark.sql import DataFrame

    if kind in ("CreateTableAsSelect", "ReplaceTableAsSelect"):
        name = ".".join(str(p) for p in _list(plan.name().nameParts()))
        spec = plan.tableSpec()
        if plan.partitioning().size() or spec.location().isDefined():
            raise UnsupportedOperation(
                f"capture: CREATE TABLE {name} AS SELECT with PARTITIONED BY or LOCATION cannot be captured yet",
                hint="create the table without them under capture")
        provider = spec.provider()
        fmt = provider.get() if provider.isDefined() else spark.conf.get("spark.sql.sources.default", "parquet")
        if kind == "ReplaceTableAsSelect":
            mode = "overwrite"
        else:
            mode = "ignore" if plan.ignoreIfExists() else "errorifexists"
        df = DataFrame(ds.ofRows(spark._jsparkSession, plan.query()), spark)
        return df, name, "saveAsTable", mode, fmt
    if kind in _REFUSED_SQL:
        raise UnsupportedOperation(f"capture: {_REFUSED_SQL[kind]} cannot be captured yet. Nothing was written",
                                   hint="write the result with CREATE TABLE … AS SELECT, INSERT … SELECT or df.write")
    if kind == "InsertIntoStatement":
        table = plan.table()
        if table.getClass().getSimpleName() != "UnresolvedRelation":
            return None
        if plan.partitionSpec().size() or plan.userSpecifiedCols().size() or plan.byName():
            raise UnsupportedOperation(
                "capture: INSERT with a PARTITION clause, a column list or BY NAME cannot be captured yet",
                hint="insert all columns in order under capture")
        name = ".".join(str(p) for p in _list(table.multipartIdentifier()))
        df = DataFrame(ds.ofRows(spark._jsparkSession, plan.query()), spark)
        return df, name, "insertInto", "overwrite" if plan.overwrite() else "append", "parquet"
    return None


def _list(jseq) -> list:
    return [jseq.apply(i) for i in range(jseq.size())]


@contextmanager
def capturing(spark, store, pipeline: str = "pipeline", model: bool = True) -> Iterator[Capture]:
    """Capture every write made inside the block into ``store`` (one run per write, each
    committed with its write). Yields a :class:`Capture` (``.runs``: what each write committed)."""
    capture = Capture(Tracker(spark, store, pipeline=pipeline, model=model))
    init, sql = DataFrameWriter.__init__, SparkSession.sql

    def writer_init(self, df):
        init(self, df)
        if not _inside():
            self._jwrite = _Writer(self._jwrite, df, capture)

    def session_sql(self, sqlQuery, args=None, **kwargs):  # noqa: N803 - pyspark's name
        if not _inside() and self is spark:
            found = _sql_write(self, sqlQuery, capture)
            if found is not None:
                if args or kwargs:
                    raise UnsupportedOperation("capture: a parameterized CREATE TABLE AS / INSERT cannot be "
                                               "captured yet", hint="inline the parameters under capture")
                df, name, method, mode, fmt = found
                capture.write(df, name, fmt, mode, {}, table=(method, name))
                return self.createDataFrame([], StructType([]))
        return sql(self, sqlQuery, args, **kwargs)

    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    write_to, write_stream = ClassicDataFrame.__dict__["writeTo"], ClassicDataFrame.__dict__["writeStream"]

    def refused(what: str):
        def call(self, *args, **kwargs):
            if _inside():
                return (write_to(self, *args, **kwargs) if what == "writeTo"
                        else write_stream.fget(self))  # capture's own writes pass through
            raise UnsupportedOperation(f"capture: df.{what} cannot be captured yet. Nothing was written",
                                       hint="write with df.write (save, parquet, saveAsTable, insertInto …) "
                                            "under capture")
        return call

    DataFrameWriter.__init__ = writer_init
    SparkSession.sql = session_sql
    ClassicDataFrame.writeTo = refused("writeTo")
    ClassicDataFrame.writeStream = property(refused("writeStream"))
    try:
        yield capture
    finally:
        DataFrameWriter.__init__ = init
        SparkSession.sql = sql
        ClassicDataFrame.writeTo = write_to
        ClassicDataFrame.writeStream = write_stream
