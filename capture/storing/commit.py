"""``tracker.write``: write the result and commit its provenance in ONE store commit.

The transaction writes the capture tables (capture/storing/tables.py: the run's annotated result
``capture_result/<run>``, a split copy's ``capture_output/<run>``, its rows of
``capture_operators`` and ``capture_runs``) and, with ``model=True``, ingests the run's
multi-granularity bundle into the core tables (capture/storing/to_model.py).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from capture import jvm
from capture.id_columns import hydrate
from capture.operators import OperatorProv
from capture.storing import catalog_tables, driver_model, tee, to_model
from capture.storing.materialize import assoc_frame, identity_frame
from capture.storing.runs import require_current_format, slots_json
from capture.storing.tables import (
    OPERATORS,
    OPERATORS_SCHEMA,
    PROGRAMS,
    PROGRAMS_SCHEMA,
    RUNS,
    RUNS_SCHEMA,
    SOURCES,
    SOURCES_SCHEMA,
    TABLES,
    TABLES_SCHEMA,
    output_table,
    part_of,
    result_table,
)
from store.engine import Engine
from store.errors import StoreError, UserError
from store.segments import parquet_files
from store.storage import spark_conf

if TYPE_CHECKING:
    from capture.tracking.frame import TrackedDataFrame
    from capture.tracking.tracker import Tracker

@dataclass(frozen=True)
class RunInfo:
    """What ``tracker.write`` returns."""

    run: str
    version: int
    output_path: str
    operators: int
    items: int  # result items (rows of the written result)
    seconds_result: float
    seconds_provenance: float
    # seconds per phase: result (pipeline + result write; in one pass, the store copy too),
    # provenance (the stored annotated result; in one pass, reading its row count), runs (the
    # capture_operators and capture_runs segments), model (bundle ingest, model=True only)
    phases: dict[str, float] = field(default_factory=dict)
    one_pass: bool = False  # one job wrote the result and the store copy (capture/storing/tee.py)
    split: bool = False  # the store copy is split: hidden columns + the output's files (capture_output)


def operator_rows(run: str, ops: list[OperatorProv]) -> list[tuple]:
    out = []
    for o in ops:
        inputs = [(i, inp.pred, list(inp.accessed) if inp.accessed is not None else None)
                  for i, inp in enumerate(o.inputs)]
        manip = [(m.input, m.src, m.dst) for m in o.manipulated] if o.manipulated is not None else None
        out.append((run, o.oid, o.type.value, o.method, inputs, manip, o.dataset, o.detail))
    return out


def new_run_id(pipeline: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{pipeline}/run-{stamp}-{uuid.uuid4().hex[:8]}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


@contextmanager
def _uncompressed_cache(spark) -> Iterator[None]:
    """Build the annotated result's cache without columnar compression: it lives for one commit,
    and compressing it costs 10-40 % of the result write (benchmarks/RESULTS.md). The setting is
    read when the cache is built (the first job) and restored right after."""
    with spark_conf(spark, "spark.sql.inMemoryColumnarStorage.compressed", "false"):
        yield


# Spark aggregates collect_list (grouping.py: every member of a group) in a hash map of objects,
# and sorts the rest of a task's rows once the map holds this many groups (Spark's default: 128)
OBJECT_AGG_FALLBACK = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"
OBJECT_AGG_GROUPS = 1 << 20


def _hashed_members(spark, ops: list[OperatorProv]):
    """For a plan with an ``expand`` (GROUPING SETS, ROLLUP, CUBE): collect the members of up to
    ``OBJECT_AGG_GROUPS`` groups per task in Spark's hash map before it falls back to sorting the
    task's rows. After an expand the sort orders every row once per grouping set by all the
    grouping columns; with Spark's default (128 groups) that doubled the captured time of TPC-DS
    Q22. Elsewhere the sort is the cheaper way (TPC-H Q17, 200,000 groups over one long key: 11 s
    sorted, 19-21 s hashed) and Spark's default stays. A setting the program made stands; the
    session's setting is restored after the write (docs/capture.md, "Memory")."""
    if not any(o.method == "expand" for o in ops) or spark.conf.get(OBJECT_AGG_FALLBACK, None) is not None:
        return nullcontext()
    return spark_conf(spark, OBJECT_AGG_FALLBACK, str(OBJECT_AGG_GROUPS))


def _counter(df: DataFrame) -> tuple[DataFrame, Observation]:
    """``df`` with its row count observed by the job that reads it (no count job)."""
    counted = Observation(f"strata_capture_{uuid.uuid4().hex[:8]}")
    return df.observe(counted, F.count(F.lit(1)).alias("n")), counted


def _landed(spark, folder: str, schema: StructType, counted: Observation) -> dict[int, int]:
    """The rows the tasks wrote into ``folder``, per partition (:func:`tee.finish`), checked
    against the count observed during the job: executors that cannot reach the store's local
    folder (a cluster) fail the commit instead of storing a partial copy."""
    rows = tee.finish(folder, schema, spark.conf.get("spark.sql.session.timeZone"))
    n_items, expected = sum(rows.values()), int(counted.get["n"])
    if n_items != expected:
        raise StoreError(
            f"the store copy of this run has {n_items} of {expected} result rows: the Spark executors could not "
            f"write into the store's local folder {folder}. The result was written; its provenance was not "
            "committed", hint="with a Spark cluster, open the store on a path every executor shares (hdfs://, s3a://)")
    return rows


def _write_one_pass(folder: str, ordered: DataFrame, visible: list[str], save: Callable[[DataFrame], None],
                    phases: dict[str, float]) -> tuple[DataFrame, int]:
    """The user's output and the store copy (into the staged ``folder``) in one job (capture/storing/tee.py)."""
    spark = ordered.sparkSession
    t0 = time.perf_counter()
    observed, counted = _counter(ordered)
    save(tee.teed(observed, visible, folder))
    t1 = time.perf_counter()
    n_items = sum(_landed(spark, folder, ordered.schema, counted).values())
    phases["result"], phases["provenance"] = t1 - t0, time.perf_counter() - t1
    return spark.read.schema(ordered.schema).parquet(folder), n_items


_OVERWRITING = ("overwrite", "errorifexists", "error", "default")


def output_name(spark, path: str, catalog: tuple[str, str] | None) -> str:
    """The name of a captured output's dataset: the name a read of it gets (capture/auto/plan.py,
    `visit_LogicalRelation`), so that the run that writes it and the runs that read it meet at one
    dataset. A catalog table: its qualified identifier (`spark_catalog.db.name`); a path: qualified
    by its file system (absolute, no trailing `/`; a local one without `file:`). Where Spark
    cannot qualify the name, it stays as the program wrote it."""
    try:
        if catalog is not None and catalog[0] in ("saveAsTable", "insertInto"):
            session = spark._jsparkSession.sessionState()
            ident = session.sqlParser().parseTableIdentifier(catalog[1])
            return str(session.catalog().qualifyIdentifier(ident).unquotedString())
        jvm = spark._jvm
        p = getattr(jvm, "org.apache.hadoop.fs.Path")(path)
        qualified = str(p.getFileSystem(spark._jsc.hadoopConfiguration()).makeQualified(p).toString())
        return qualified.removeprefix("file:")
    except Exception:  # noqa: BLE001 - a name Spark cannot qualify (a v2 catalog's, say) stays as written
        return path


def split_output(spark, path: str, fmt: str, mode: str, options: dict[str, Any]) -> str | None:
    """The local folder of the user's output when the split store copy can pair its files with the
    task's hidden-column files: Parquet, one file per task (no ``maxRecordsPerFile``), a write
    that leaves only this job's files in the folder (not append or ignore), no speculative tasks
    (two attempts could both write), and a path on the local file system. Else None."""
    if fmt.lower() != "parquet" or mode.lower() not in _OVERWRITING:
        return None
    if any(k.lower() == "maxrecordsperfile" and str(v) not in ("0", "") for k, v in options.items()):
        return None
    conf = spark.conf
    if conf.get("spark.sql.files.maxRecordsPerFile", "0") != "0" or conf.get("spark.speculation", "false") == "true":
        return None
    jvm = spark.sparkContext._jvm
    hpath = getattr(jvm, "org.apache.hadoop.fs.Path")(str(path))
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if fs.getScheme() != "file":
        return None
    return str(fs.makeQualified(hpath).toUri().getPath())


def _link(src: str, dst: str) -> None:
    """``dst`` names ``src``'s bytes: a hard link (Spark replaces output files, it never edits
    them, so the store's copy cannot change), or a copy across file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _write_split(tx, run: str, ordered: DataFrame, visible: list[str], save: Callable[..., None],
                 output: str, phases: dict[str, float]) -> tuple[DataFrame, int, str] | None:
    """The split store copy (docs/capture.md, "Commit"): one job writes the user's output and,
    task by task, only the hidden columns into ``capture_result/<run>`` -- both with Spark's
    Parquet writer where Strata's JVM classes are loaded (capture/jvm ``SplitParquetFileFormat``),
    else the hidden ones from an Arrow UDF (capture/storing/tee.py ``sidecar``). The output's files are
    then linked into ``capture_output/<run>``.
    Row i of output file ``part-N`` and row i of hidden file ``part-N`` are the same result row.
    Returns the hidden table, the row count and its folder, or None (nothing written) when the
    hidden columns' types cannot cross Arrow."""
    hidden = [c for c in ordered.columns if c not in visible]
    hschema = StructType([ordered.schema[c] for c in hidden])
    if not tee.supported(hschema):
        return None
    folder = tx.stage_local(result_table(run), hschema.json())
    if folder is None:
        return None
    spark = ordered.sparkSession
    t0 = time.perf_counter()
    observed, counted = _counter(ordered)
    if jvm.available(spark, jvm.SPLIT):  # Spark's writer writes both files of a task (no Python)
        save(observed, jvm.SPLIT, {jvm.SPLIT_FOLDER: folder, jvm.SPLIT_ROWS: str(tee.ROW_GROUP_ROWS),
                                   jvm.SPLIT_BYTES: str(tee.ROW_GROUP_BYTES)})
    else:  # the hidden columns cross to a Python UDF through Arrow
        save(tee.sidecar(observed, visible, hidden, folder))
    t1 = time.perf_counter()
    hrows = _landed(spark, folder, hschema, counted)
    n_items = sum(hrows.values())
    vschema = StructType([ordered.schema[c] for c in visible])
    out_folder = tx.stage_local(output_table(run), vschema.json())
    parts: dict[int, str] = {}
    for name in sorted(os.listdir(output)):
        part = part_of(name) if name.endswith(".parquet") else None
        if part is None:
            continue
        if part in parts:  # two files of one task: rows cannot be paired
            parts = {}
            break
        parts[part] = name
    for part, name in parts.items():
        _link(os.path.join(output, name), os.path.join(out_folder, f"part-{part:05d}.parquet"))
    vrows = tee.part_rows(out_folder)
    if (not parts and n_items) or any(vrows.get(p, 0) != hrows.get(p, 0) for p in {*vrows, *hrows}):
        raise StoreError(
            f"the store copy of this run could not pair its {n_items} result rows with the output files in "
            f"{output} ({len(parts)} files, one per task expected). The result was written; its provenance was "
            "not committed", hint="write the result again; if this repeats, report it with the Spark settings in use")
    phases["result"], phases["provenance"] = t1 - t0, time.perf_counter() - t1
    return spark.read.schema(hschema).parquet(folder), n_items, folder


def _write_cached(tx, table: str, ordered: DataFrame, visible: list[str], save: Callable[[DataFrame], None],
                  phases: dict[str, float]) -> tuple[DataFrame, int]:
    """The user's output from a cache of the annotated result, then the store copy from the cache.
    The caller unpersists the returned (cached) DataFrame."""
    t0 = time.perf_counter()
    cached = ordered.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    try:
        with _uncompressed_cache(cached.sparkSession):
            save(cached.select(*visible))
        t1 = time.perf_counter()
        rows, counted = _counter(cached)
        tx.replace(table, rows)
    except BaseException:
        cached.unpersist()
        raise
    phases["result"], phases["provenance"] = t1 - t0, time.perf_counter() - t1
    return cached, int(counted.get["n"])


def _spark_model(tx, result: DataFrame, cap, ops: list[OperatorProv], run: str, pipeline: str,
                 run_attrs: dict[str, Any], info_out: dict[str, Any], cleanup: list[DataFrame],
                 checkpoints: list[DataFrame]) -> None:
    """Ingest the run's bundle with Spark (``to_model.sections``): any size, any store. The frames
    it caches go into ``cleanup``, those it checkpoints into ``checkpoints``, for the caller to
    release once the commit is done."""
    hydrated = hydrate(result, cap.derived)  # the derived ids the store copy left out
    stored = assoc_frame(hydrated, cap.slots).persist(StorageLevel.MEMORY_AND_DISK_DESER)
    cleanup.append(stored)
    full = stored.unionByName(  # computed once: the bundle reads it in every section
        identity_frame(stored, ops, cap.result_oid, hydrated.select(cap.id_col))
    ).localCheckpoint(eager=True)
    checkpoints.append(full)
    existing = tx.table("vertices").select("id")
    sections = to_model.materialized(
        to_model.sections(result.sparkSession, run, pipeline, ops, full, existing, run_attrs, info_out))
    checkpoints += [sections[k] for k in to_model.CHECKPOINTED]
    tx.ingest(sections)


def model_stored(tx, store, head, pipeline: str, run_attrs: dict[str, Any], info_out: dict[str, Any]) -> None:
    """``_spark_model`` of a committed run (``head``: its capture/storing/runs.py ``RunHead``) from
    its stored copy, for runs captured without the model that the driver cannot model
    (capture/storing/model_later.py ``model_runs``)."""
    cleanup: list[DataFrame] = []
    checkpoints: list[DataFrame] = []
    try:
        _spark_model(tx, store.table(result_table(head.run)), head, list(head.operators), head.run, pipeline,
                     run_attrs, info_out, cleanup, checkpoints)
    finally:
        for df in cleanup:
            df.unpersist()
        for df in checkpoints:
            _drop_checkpoint(df)


def _drop_checkpoint(df: DataFrame) -> None:
    """Drop the blocks of a ``localCheckpoint``-ed DataFrame from Spark's block manager. Spark
    keeps them until the JVM collects the checkpointed RDD, which Python references to the run's
    frames can put off for the rest of a process that captures write after write."""
    plan = df._jdf.queryExecution().analyzed()
    if plan.nodeName() == "LogicalRDD":
        plan.rdd().unpersist(False)


def _tables(spark, run: str, locators: list, name: str, catalog: tuple[str, str] | None, visible: list[str],
            executed: list) -> list[tuple]:
    """The run's rows of ``capture_tables``: the catalog tables its sources read, and the table it
    wrote (``catalog``: saveAsTable or insertInto, named ``name``) with its columns."""
    reads = [loc.table for loc in locators if loc.table]
    written = name if catalog is not None and catalog[0] in ("saveAsTable", "insertInto") else None
    if not reads and written is None:
        return []
    traced = executed[-1] if executed else None
    if traced is not None:
        traced = [(r, t) for r, t in traced if r in visible]
    return catalog_tables.table_rows(spark, run, reads, written, catalog[0] if written else None, visible, traced)


def write_and_commit(tracker: Tracker, tdf: TrackedDataFrame, path: str, fmt: str, mode: str,
                     message: str | None, options: dict[str, Any], catalog: tuple[str, str] | None = None,
                     sink: Callable[[DataFrame], None] | None = None) -> RunInfo:
    """Compute the annotated result ONCE and write both the visible result (to ``path``) and the
    run's stored annotated result (``capture_result/<run>``, the id column first) from it.

    On a local store one Spark job does both: split for Parquet output (:func:`_write_split`: the
    hidden columns in ``capture_result/<run>``, the output's files linked into
    ``capture_output/<run>``), else the one-pass tee (capture/storing/tee.py). Elsewhere (or for column
    types Arrow cannot carry) the annotated result is cached by the result write and read again by
    the store write. Either way its row count is observed: no count job. The ``capture_operators`` and
    one-row ``capture_runs`` segments are written on the driver with pyarrow (a local store; Spark
    jobs elsewhere). With ``model=True`` the bundle ingest too: on the driver, with no Spark job,
    when the store copy is in a local folder and the run is small (result items × operators
    within the local limit, ``Store.choose``), else with Spark (``to_model.sections``).

    ``catalog`` = ``("saveAsTable" | "insertInto", name)`` writes into a catalog table instead of
    ``path`` (``path`` then names the table in the run row); never split. ``sink(df)``, when given,
    writes the visible columns instead of ``df.write``: the program's own write (partitioned,
    bucketed, or a SQL statement with the annotated result as its query); never split (a task may
    write several files)."""
    if tracker.store is None:
        raise UserError("tracker.write needs a store to commit the provenance to",
                        hint="create the tracker with Tracker(spark, Store.open(path))")
    store = tracker.store
    require_current_format(store)
    cap = tracker.capture(tdf)
    ops = list(cap.operators)
    run = new_run_id(tracker.pipeline)
    started = _now()
    spark = tracker.spark
    name = output_name(spark, str(path), catalog)
    visible = tdf.visible()
    kept = cap.compact.columns  # the derived id columns are computed again on read (capture/ids.py)
    first = ([cap.id_col] if cap.id_col in kept else []) + [
        *visible, *(c for c in kept if c != cap.id_col and c not in visible)]
    ordered = cap.compact.select(*[F.col(f"`{c}`") for c in first])

    executed: list[list[tuple[str, str]] | None] = []  # a SQL write's columns as Spark resolved them

    def save(df: DataFrame, source: str = fmt, extra: dict[str, str] | None = None) -> None:
        if sink is not None:
            done = sink(df)  # the program's SQL statement returns its executed command
            if isinstance(done, DataFrame):
                executed.append(catalog_tables.traced_columns(done, catalog_tables.output_ids(df)))
            return
        writer = df.write.mode(mode).options(**options).options(**(extra or {}))
        if catalog is None:
            writer.format(source).save(path)
        elif catalog[0] == "insertInto":
            writer.insertInto(catalog[1], overwrite=mode.lower() == "overwrite")
        else:
            writer.format(source).saveAsTable(catalog[1])

    phases: dict[str, float] = {}
    cleanup: list[DataFrame] = []
    checkpoints: list[DataFrame] = []
    t0 = time.perf_counter()
    try:
        with store.transaction(message or f"capture {run}") as tx:
            table = result_table(run)
            output = split_output(spark, path, fmt, mode, options) if catalog is None and sink is None else None
            with _hashed_members(spark, ops):
                split = _write_split(tx, run, ordered, visible, save, output, phases) if output is not None else None
                folder = None
                if split is None and tee.supported(ordered.schema):
                    folder = tx.stage_local(table, ordered.schema.json())
                if split is not None:
                    result, n_items, folder = split
                elif folder is not None:
                    result, n_items = _write_one_pass(folder, ordered, visible, save, phases)
                else:
                    result, n_items = _write_cached(tx, table, ordered, visible, save, phases)
                    cleanup.append(result)
            finished = _now()
            run_row = (run, tracker.pipeline, cap.result_oid, name, fmt, started, finished, len(ops), n_items,
                       cap.id_col, slots_json(cap.slots, cap.derived))
            program = tracker.program
            programs = [] if program is None else [
                (run, program["script"], json.dumps(list(program["args"])), program["cwd"], int(program["write"]))]
            located = [(run, o.oid, tracker._locators[o.oid].to_json()) for o in ops if o.oid in tracker._locators]
            tables = _tables(spark, run, [tracker._locators[o.oid] for o in ops if o.oid in tracker._locators],
                             name, catalog, visible, executed)
            phases["runs"] = _timed(lambda: (tx.append_rows(OPERATORS, operator_rows(run, ops), OPERATORS_SCHEMA),
                                             located and tx.append_rows(SOURCES, located, SOURCES_SCHEMA),
                                             tables and tx.append_rows(TABLES, tables, TABLES_SCHEMA),
                                             programs and tx.append_rows(PROGRAMS, programs, PROGRAMS_SCHEMA),
                                             tx.append_rows(RUNS, [run_row], RUNS_SCHEMA)))
            if tracker.model:
                run_attrs = {"started": started, "finished": finished, "output": name, "format": fmt}
                info_out = {"path": name, "format": fmt}
                files = parquet_files(folder) if folder is not None else None
                if files is not None and store.choose(n_items * len(ops)).engine is Engine.LOCAL \
                        and driver_model.stored_ids(files) <= driver_model.DRIVER_MODEL_IDS:
                    phases["model"] = _timed(lambda: driver_model.model_files(
                        tx, files, cap, ops, run, tracker.pipeline, run_attrs, info_out))
                else:
                    phases["model"] = _timed(lambda: _spark_model(
                        tx, result, cap, ops, run, tracker.pipeline, run_attrs, info_out, cleanup, checkpoints))
            tx.set_meta("capture.last_run", {"run": run, "pipeline": tracker.pipeline, "output": name})
        t2 = time.perf_counter()
    finally:  # the commit is done (or failed): the blocks its frames hold go
        for df in cleanup:
            df.unpersist()
        for df in checkpoints:
            _drop_checkpoint(df)
    return RunInfo(run, store.version, name, len(ops), n_items, phases["result"], t2 - t0 - phases["result"],
                   phases, folder is not None or split is not None, split is not None)
