"""Capture every write of unmodified PySpark code: ``with capturing(spark, store): ...``.

Inside the block, each ``DataFrameWriter`` a DataFrame hands out (``df.write``) records its format,
mode, options and layout (``partitionBy``, ``bucketBy``, ``sortBy``); its terminal call (``save``,
``parquet``, ``json``, ``csv``, ``orc``, ``text``, ``saveAsTable``, ``insertInto``) translates the
DataFrame's analyzed plan (capture/auto/plan.py) and writes it with :meth:`Tracker.write`: the
program's output, written from the same expressions (a layout replayed on the captured result),
and its provenance in one store commit — one run per write. ``spark.sql`` is intercepted for
``CREATE TABLE … AS SELECT``, ``INSERT INTO/OVERWRITE … SELECT`` and ``INSERT OVERWRITE DIRECTORY``:
the query's plan is captured the same way and the statement runs with the captured result as its
query; ``LOAD DATA`` too, as a run from the loaded files' records to the table. Everything else
passes through. A write that cannot be captured raises before any job runs.
"""

from __future__ import annotations

import logging
import runpy
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from pyspark import RDD
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.types import StructType

from capture.auto.plan import translate
from capture.errors import CaptureError, UnsupportedOperation
from capture.tracking.paths import analyzed, frame_of, seq, to_seq
from capture.tracking.sources import hive_locator, hive_split_ids
from capture.tracking.tracker import Tracker
from store import progress
from store.errors import StrataError

_state = threading.local()
_OOM_WAIT = 10.0  # seconds a JVM out of memory is given to stop its context (_jvm_stopped)
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


_MEMORY_HINT = ("a captured aggregate holds the ids of every row of each group (docs/capture.md, \"Cost\"): give "
                "Spark more memory ($STRATA_DRIVER_MEMORY=8g, or --conf spark.driver.memory=8g), or run the script "
                "without capture")


@dataclass
class Capture:
    """What a ``capturing`` block did: one ``RunInfo`` per captured write, in order."""

    tracker: Tracker
    runs: list = field(default_factory=list)
    program: dict | None = None  # the script captured (script, args, cwd): recorded with each run
    writes: int = 0  # writes the program made so far, captured or refused (a replay counts them alike)
    failed: list = field(default_factory=list)  # the CaptureErrors raised to the program (it may catch them)

    def write(self, df, target: str, fmt: str, mode: str, options: dict[str, str],
              table: tuple[str, str] | None = None, sink=None, source=None):
        """Translate ``df``'s plan with a fresh tracker (operator ids start at 1 for every
        write, so a run's ids do not depend on the writes before it) and write it (with
        ``sink(result)``, when given: the program's own write of the result). ``source(tracker)``,
        when given, is the tracked DataFrame itself (a write whose rows are one input's)."""
        t = self.tracker
        self.writes += 1
        tracker = Tracker(df.sparkSession, t.store, pipeline=t.pipeline, model=t.model)
        if self.program is not None:
            tracker.program = {**self.program, "write": self.writes}
        with progress.step(f"capture write {len(self.runs) + 1}: {target}", total=2) as step:
            try:
                with _quiet_py4j():  # a JVM gone before or while the plan is built is reported below, once
                    tdf = translate(tracker, df) if source is None else source(tracker)
            except StrataError:
                raise
            except Exception as e:  # noqa: BLE001 - Strata's own failure, never the script's
                how = _jvm_stopped(df.sparkSession, e)
                if how is not None:  # Spark's JVM went away before or while the plan was built
                    raise self._jvm_gone("capture built the tracked plan", target, how) from e
                raise self._failed(CaptureError(
                    f"capture failed on write {len(self.runs) + 1} ({target}), not the script: {type(e).__name__}: "
                    f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}. Nothing was written",
                    hint="run with --debug for the traceback and report it; run the script without capture to "
                         "write it untracked")) from e
            step.advance()
            try:
                with _writing(), _quiet_py4j():  # a JVM that stops mid-write is reported below, once
                    info = tracker.write(tdf, target, format=fmt, mode=mode, table=table, sink=sink, **options)
            except StrataError:
                raise
            except Exception as e:  # the write's own error goes to the script as Spark raised it ...
                how = _jvm_stopped(df.sparkSession, e)
                if how is None:
                    raise
                # ... unless Spark's JVM is gone, most often out of memory
                raise self._jvm_gone("writing the captured result", target, how) from e
            step.advance()
        self.runs.append(info)
        return info

    def _jvm_gone(self, doing: str, target: str, how: str) -> CaptureError:
        """The write's failure when Spark's JVM stopped ``how`` while capture was ``doing``. From here
        on py4j's records of calls that fail for want of a JVM are dropped (:func:`_quiet_py4j`)."""
        logging.getLogger().addFilter(_not_a_failed_send)
        return self._failed(CaptureError(
            f"Spark's JVM stopped while {doing} of write {len(self.runs) + 1} ({target}): {how}. Nothing of this "
            "write was committed", hint=_MEMORY_HINT))

    def _failed(self, error: CaptureError) -> CaptureError:
        self.failed.append(error)
        return error


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
        self._layout: list[tuple[str, tuple]] = []  # partitionBy / bucketBy / sortBy, as called

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
        self._layout.append(("partitionBy", tuple(seq(cols))))
        return self._keep(self._j.partitionBy(cols))

    def bucketBy(self, n, col, cols):  # noqa: N802
        self._layout.append(("bucketBy", (int(n), str(col), *seq(cols))))
        return self._keep(self._j.bucketBy(n, col, cols))

    def sortBy(self, col, cols):  # noqa: N802
        self._layout.append(("sortBy", (str(col), *seq(cols))))
        return self._keep(self._j.sortBy(col, cols))

    def _sink(self, method: str, target: str, fmt: str, mode: str, opts: dict[str, str]):
        """The program's write, replayed on the captured result: its format, mode, options and
        layout (``partitionBy``, ``bucketBy``, ``sortBy``) and terminal call. None without a
        layout (the commit then writes the result itself, and may split it)."""
        layout = [(name, args) for name, args in self._layout if args]
        if not layout:
            return None

        def sink(df) -> None:
            writer = df.write.mode(mode).options(**opts)
            for name, args in layout:
                writer = getattr(writer, name)(*args)
            if method == "insertInto":
                writer.insertInto(target, overwrite=mode == "overwrite")
            elif method == "saveAsTable":
                writer.format(fmt).saveAsTable(target)
            else:
                writer.format(fmt).save(target)

        return sink

    def _target(self, method: str, args: tuple) -> Any:
        spark = self._df.sparkSession

        def default() -> str:  # asked only where no format is given: a JVM gone is then capture.write's to say
            return spark.conf.get("spark.sql.sources.default", "parquet")

        opts = dict(self._options)
        if method in ("saveAsTable", "insertInto"):
            fmt = self._format or default()
            mode = self._mode
            if method == "insertInto":
                mode = "overwrite" if mode == "overwrite" else "append"
            return self._capture.write(self._df, args[0], fmt, mode, opts, table=(method, args[0]),
                                       sink=self._sink(method, args[0], fmt, mode, opts))
        if method == "save":
            path = args[0] if args else opts.pop("path", None)
            if path is None:
                raise UnsupportedOperation("capture: a save() without a path cannot be captured",
                                           hint="pass the path: df.write.save(path)")
            fmt = self._format or default()
        else:
            path, fmt = args[0], method
        return self._capture.write(self._df, path, fmt, self._mode, opts,
                                   sink=self._sink("save", path, fmt, self._mode, opts))


def _terminal(method: str):
    def call(self, *args):
        self._target(method, args)

    call.__name__ = method
    return call


for _m in _TERMINAL:
    setattr(_Writer, _m, _terminal(_m))


# SQL statements that write, but not from one query capture can translate
_REFUSED_SQL = {"MergeIntoTable": "MERGE INTO", "UpdateTable": "UPDATE", "DeleteFromTable": "DELETE FROM",
                "TruncateTable": "TRUNCATE TABLE",
                "TruncatePartition": "TRUNCATE TABLE … PARTITION"}
# RDD writes: Spark's plan does not reach them (their functions are opaque to capture), so each
# is refused by name before it runs.
_RDD_WRITES = ("saveAsTextFile", "saveAsPickleFile", "saveAsSequenceFile", "saveAsHadoopFile",
               "saveAsNewAPIHadoopFile", "saveAsHadoopDataset", "saveAsNewAPIHadoopDataset")


@dataclass(frozen=True)
class _SqlWrite:
    """A SQL statement that writes one query's rows: the query, where they go, and ``sink(df)``,
    which runs the statement itself with ``df`` (the captured result) in place of its query, so
    every clause (PARTITIONED BY, LOCATION, OPTIONS, a PARTITION clause, a column list, BY NAME …)
    means what Spark makes of it."""

    df: Any
    target: str
    method: str
    mode: str
    fmt: str
    sink: Any
    source: Any = None  # for LOAD DATA: the tracked file (``Capture.write``'s ``source``)


def _sql_write(spark, query: str) -> _SqlWrite | None:
    """The write of ``query`` when it is a CTAS, RTAS, INSERT … SELECT, INSERT OVERWRITE
    DIRECTORY or LOAD DATA, else None; raises for writes capture cannot translate."""
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(query)
    except Exception:  # noqa: BLE001 - Spark reports the syntax error when it runs the query
        return None
    kind = plan.getClass().getSimpleName()
    if kind in _REFUSED_SQL:
        raise UnsupportedOperation(f"capture: {_REFUSED_SQL[kind]} cannot be captured yet. Nothing was written",
                                   hint="write the result with CREATE TABLE … AS SELECT, INSERT … SELECT or df.write")
    default = spark.conf.get("spark.sql.sources.default", "parquet")
    if kind in ("CreateTableAsSelect", "ReplaceTableAsSelect"):
        name = ".".join(str(p) for p in seq(plan.name().nameParts()))
        if kind == "CreateTableAsSelect" and plan.ignoreIfExists() and \
                spark._jsparkSession.catalog().tableExists(name):
            return None  # IF NOT EXISTS of a table that exists: Spark writes nothing
        provider = plan.tableSpec().provider()
        fmt = provider.get() if provider.isDefined() else default
        mode = "overwrite" if kind == "ReplaceTableAsSelect" else "errorifexists"
        return _SqlWrite(frame_of(spark, plan.query()), name, "saveAsTable", mode, fmt, _replay(spark, plan))
    if kind == "InsertIntoStatement":
        table = plan.table()
        if table.getClass().getSimpleName() != "UnresolvedRelation":
            return None
        name = ".".join(str(p) for p in seq(table.multipartIdentifier()))
        if plan.ifPartitionNotExists():
            raise UnsupportedOperation(
                f"capture: INSERT OVERWRITE {name} PARTITION (…) IF NOT EXISTS cannot be captured yet. "
                "Nothing was written", hint="drop IF NOT EXISTS under capture")
        mode = "overwrite" if plan.overwrite() else "append"
        return _SqlWrite(frame_of(spark, plan.query()), name, "insertInto", mode, default, _replay(spark, plan))
    if kind == "LoadData":
        return _load_data(spark, plan, query)
    if kind == "InsertIntoDir":
        location = plan.storage().locationUri()
        provider = plan.provider()
        target = str(location.get().toString()) if location.isDefined() else "directory"
        fmt = provider.get() if provider.isDefined() else "hive"
        mode = "overwrite" if plan.overwrite() else "append"
        return _SqlWrite(frame_of(spark, plan.child()), target, "insertIntoDirectory", mode, fmt, _replay(spark, plan))
    return None


def _load_data(spark, plan, query: str) -> _SqlWrite | None:
    """``LOAD DATA [LOCAL] INPATH … INTO TABLE t``: Spark copies (LOCAL) or moves the files into the
    Hive table as they are, so each of their records is a row of the table. Captured as a run
    whose source is the loaded path read as the table reads its files (its SerDe; ids as a Hive
    table's, by file, split and record) and whose output is the table; the statement itself then
    runs, after the run's rows were computed (a moved file is gone after it). None (Spark reports
    the error) for a table Spark would refuse, e.g. a data source table."""
    name = ".".join(str(p) for p in seq(plan.child().multipartIdentifier()))
    try:
        relation = analyzed(spark.table(name))
    except Exception:  # noqa: BLE001 - no such table: Spark reports it when the statement runs
        return None
    while relation.getClass().getSimpleName() in ("SubqueryAlias", "View"):
        relation = relation.child()
    if relation.getClass().getSimpleName() != "HiveTableRelation":
        return None
    if plan.partition().isDefined() or not relation.partitionCols().isEmpty():
        raise UnsupportedOperation(f"capture: LOAD DATA into the partitioned table {name} cannot be captured yet. "
                                   "Nothing was written",
                                   hint="load into an unpartitioned table, or INSERT … SELECT from the file")
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    path = getattr(jvm, "org.apache.hadoop.fs.Path")(str(plan.path()))
    fs = getattr(jvm, "org.apache.hadoop.fs.FileSystem").getLocal(conf) if plan.isLocal() else path.getFileSystem(conf)
    where = str(fs.makeQualified(path).toString())
    meta = relation.tableMeta()
    st = meta.storage()
    uri = getattr(jvm, "scala.Some")(getattr(jvm, "java.net.URI")(where))
    loaded = meta.withNewStorage(uri, st.inputFormat(), st.outputFormat(), st.compressed(), st.serde(),
                                 st.properties(), getattr(meta, "withNewStorage$default$7")())
    scan = getattr(jvm, "org.apache.spark.sql.catalyst.catalog.HiveTableRelation")(
        loaded, relation.dataCols(), relation.partitionCols(), relation.tableStats(), relation.prunedPartitions())
    df = frame_of(spark, scan)
    dataset = where.removeprefix("file:")

    def source(tracker):
        return tracker._source(df, dataset, "read.hive", f"hive files of {name}: {dataset}", hive_split_ids(dataset),
                               locator=hive_locator(spark, scan, table=None))

    def sink(result) -> None:
        result.write.format("noop").mode("overwrite").save()  # the rows first: LOAD DATA may move the file
        spark.sql(query)

    mode = "overwrite" if plan.isOverwrite() else "append"
    return _SqlWrite(df, str(meta.identifier().unquotedString()), "insertInto", mode, "hive", sink, source)


def _replay(spark, statement):
    """``sink(df)``: runs ``statement`` (a parsed CTAS, RTAS or INSERT) with ``df``'s plan in
    place of its query, and returns the statement run (its analyzed command maps the query's columns onto
    the table's: capture/storing/catalog_tables.py)."""
    query = statement.child() if statement.getClass().getSimpleName() == "InsertIntoDir" else statement.query()

    def sink(df) -> DataFrame:

        swapped = [analyzed(df) if k.equals(query) else k for k in seq(statement.children())]
        return frame_of(spark, statement.withNewChildren(to_seq(spark._jvm, swapped)))

    return sink


def _jvm_stopped(spark, error: BaseException | None = None) -> str | None:
    """None while the session's SparkContext runs; else how its JVM stopped, as far as its exit code
    tells (Spark exits with 52 when a task runs out of memory: SparkExitCode.OOM). When ``error``
    (the write's) says the JVM ran out of memory (``java.lang.OutOfMemoryError``), Spark may still
    be stopping as the error arrives: its context is asked again for up to ``_OOM_WAIT`` seconds."""
    with _quiet_py4j():
        return _stopped(spark, error)


def _stopped(spark, error: BaseException | None) -> str | None:
    deadline = None
    answers = False
    try:
        while not spark.sparkContext._jsc.sc().isStopped():  # a JVM that has gone refuses the connection
            if deadline is None:  # the JVM answered: the error's message can be asked for
                deadline = time.monotonic() + (_OOM_WAIT if error is not None and _out_of_memory(error) else 0.0)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.25)
        answers = True  # stopped, but the JVM is still there: exiting, or the script stopped it
    except Exception:  # noqa: BLE001 - whatever py4j raises for a gateway that is gone
        pass
    proc = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    code = None
    if proc is not None:
        with suppress(Exception):
            code = proc.wait(timeout=10)
    if code == 52:
        return "out of memory (Spark's exit code 52)"
    if code is None:  # still running: a context the script stopped is the script's own doing
        return None if answers else "it no longer answers"
    return f"exit code {code}"


def _out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` says the JVM ran out of memory, or its message can no longer be read (the
    JVM is going away)."""
    try:
        return "java.lang.OutOfMemoryError" in str(error)
    except Exception:  # noqa: BLE001 - the JVM no longer answers
        return True


def _not_a_failed_send(record: logging.LogRecord) -> bool:
    """False for py4j's record of a call that failed because its JVM is going away."""
    return not record.getMessage().endswith("while sending command.")


@contextmanager
def _quiet_py4j() -> Iterator[None]:
    """A call to a JVM that is going away fails, and py4j logs the failed call on the root logger
    with a traceback (the write's error chained in). Capture reports a JVM that stopped itself
    (``Capture._jvm_gone``, which then drops them for the rest of the process: the script's later
    Spark calls fail alike), so while capture builds a write's plan, writes it, asks whether the
    JVM stopped and reads an error's message, the root logger drops those records."""
    root = logging.getLogger()
    added = _not_a_failed_send not in root.filters  # already there: a stopped JVM's, for good
    root.addFilter(_not_a_failed_send)
    try:
        yield
    finally:
        if added:
            root.removeFilter(_not_a_failed_send)


def _message(e: BaseException) -> str:
    """``str(e)``, or what can be said when that fails (a Py4J error asks its JVM, which may be gone)."""
    try:
        with _quiet_py4j():
            return str(e)
    except Exception:  # noqa: BLE001 - the message itself could not be read
        return "(its message could not be read: Spark's JVM no longer answers)"


def run_script(script: str, error: type[StrataError], context: str = "") -> None:
    """Run ``script`` as ``__main__`` (``runpy``, as ``spark-submit`` runs a script; the caller
    sets ``sys.argv`` and ``sys.path``). Its own failure -- a non-zero ``sys.exit`` or an
    exception -- is raised as ``error`` naming the script, with ``context`` after the verb
    (e.g. ``" on replay"``); Strata's own errors pass unchanged."""
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise error(f"{script} exited with status {e.code}{context}") from e
    except StrataError:
        raise
    except Exception as e:  # noqa: BLE001 - the script's own error, reported as such
        raise error(f"{script} failed{context}: {type(e).__name__}: {_message(e)}",
                    hint="run with --debug for the traceback") from e


@contextmanager
def capturing(spark, store, pipeline: str = "pipeline", model: bool = True,
              program: dict | None = None) -> Iterator[Capture]:
    """Capture every write made inside the block into ``store`` (one run per write, each
    committed with its write). Yields a :class:`Capture` (``.runs``: what each write committed).
    Every session of the process is covered (``spark.newSession()``, a second builder); a write
    is translated in its DataFrame's session. ``spark`` may be None when the block starts the
    session itself (`strata capture`). ``program`` (``{"script": absolute path, "args": [...],
    "cwd": folder}``), when the block runs a script, is recorded with each run with the write's
    number (table ``capture_programs``), so that the run can be replayed."""
    capture = Capture(Tracker(spark, store, pipeline=pipeline, model=model), program=program)
    with hooked(capture):
        yield capture


@contextmanager
def hooked(capture: Capture) -> Iterator[None]:
    """Inside the block, each write DataFrames and ``spark.sql`` make goes to ``capture.write``
    (a refused write raises before anything runs); everything else passes through."""
    init, sql = DataFrameWriter.__init__, SparkSession.sql

    def writer_init(self, df):
        init(self, df)
        if not _inside():
            self._jwrite = _Writer(self._jwrite, df, capture)

    def session_sql(self, sqlQuery, args=None, **kwargs):  # noqa: N803 - pyspark's name
        if not _inside():
            found = _sql_write(self, sqlQuery)
            if found is not None:
                if args or kwargs:
                    raise UnsupportedOperation("capture: a parameterized CREATE TABLE AS / INSERT cannot be "
                                               "captured yet", hint="inline the parameters under capture")
                capture.write(found.df, found.target, found.fmt, found.mode, {}, table=(found.method, found.target),
                              sink=found.sink, source=found.source)
                return self.createDataFrame([], StructType([]))
        return sql(self, sqlQuery, args, **kwargs)


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

    rdd_writes = {name: RDD.__dict__[name] for name in _RDD_WRITES}

    def rdd_refused(name: str):
        def call(self, *args, **kwargs):
            if _inside():
                return rdd_writes[name](self, *args, **kwargs)
            raise UnsupportedOperation(f"capture: rdd.{name} cannot be captured: Spark's plan does not reach "
                                       "an RDD's functions. Nothing was written",
                                       hint="turn the RDD into a DataFrame (spark.createDataFrame(rdd) or "
                                            "rdd.toDF()) and write it with df.write under capture")
        return call

    DataFrameWriter.__init__ = writer_init
    SparkSession.sql = session_sql
    ClassicDataFrame.writeTo = refused("writeTo")
    ClassicDataFrame.writeStream = property(refused("writeStream"))
    for name in _RDD_WRITES:
        setattr(RDD, name, rdd_refused(name))
    try:
        yield
    finally:
        DataFrameWriter.__init__ = init
        SparkSession.sql = sql
        ClassicDataFrame.writeTo = write_to
        ClassicDataFrame.writeStream = write_stream
        for name, method in rdd_writes.items():
            setattr(RDD, name, method)
