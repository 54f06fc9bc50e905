"""Ids of source items: the top-level id each item of a tracked input gets when it is read.

A Parquet input's items are named by file and row index (:func:`file_row_ids`), a JSON input
read with the offset reader (capture/jvm) by file and line offset (:func:`file_line_ids`); both
keep filter pushdown into the scan. Any other input's items are named by row position under a
layout key that names how Spark cut the input into partitions (:func:`item_ids`,
:func:`layout_key`). Every id is deterministic: re-reading the same input gives the same ids.
"""

from __future__ import annotations

import hashlib
import re

from py4j.protocol import Py4JError
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from capture import jvm
from capture.locator import Locator
from capture.tracking.paths import scala_map


def item_ids(dataset: str, layout: str) -> F.Column:
    """Top-level item ids of an input: ``xxhash64(dataset name, layout, row position)``.

    The row position is Spark's ``monotonically_increasing_id`` right after the scan (file
    split + row in split). What a position means depends on how Spark cut the input into
    partitions, so ``layout`` (:func:`layout_key`) names that cut: re-reading the same files
    under the same cut gives the same ids, and a different cut (other files, more cores on a
    mid-sized input, other split settings) gives other ids instead of reusing one id for another
    row.
    """
    return F.xxhash64(F.lit(dataset), F.lit(layout), F.monotonically_increasing_id())


def file_row_ids(df: DataFrame, dataset: str) -> F.Column:
    """Top-level item ids of a Parquet input: ``xxhash64(dataset name, file path, row index in
    the file)``. Parquet readers report each row's index in its file (``_metadata.row_index``),
    so these ids do not depend on how the files are cut into splits, and a filter right after the
    read is still pushed into the scan (row groups are skipped; the indexes stay right)."""
    meta = df.metadataColumn("_metadata")
    return F.xxhash64(F.lit(dataset), meta.getField("file_path"), meta.getField("row_index"))


def file_line_ids(df: DataFrame, dataset: str) -> F.Column:
    """Top-level item ids of a JSON input read with the offset reader (capture/jvm):
    ``xxhash64(dataset name, file path, file modification time, line offset)``. The offset is
    the byte at which the record's line starts, known whether or not a filter keeps the record,
    so a filter after the read is still pushed into the JSON parser, and the ids do not depend
    on how the files are cut into splits. The modification time tells a file rewritten in place
    from the one read before."""
    meta = df.metadataColumn("_metadata")
    return F.xxhash64(F.lit(dataset), meta.getField("file_path"), meta.getField("file_modification_time"),
                      F.col(jvm.OFFSET))


def _split_bytes(spark, conf, files: int, size: int) -> int:
    """The split size Spark will use for ``files`` files of ``size`` bytes in all (Spark's
    ``FilePartition.maxSplitBytes``, which depends on the core count for inputs below 128 MB per
    core). Any split size that holds the whole input cuts it the same way (one partition), so
    those are reported as one value. ``conf`` is the session's SQLConf."""
    cores = conf.filesMinPartitionNum()
    cores = cores.get() if cores.isDefined() else spark._jsparkSession.leafNodeDefaultParallelism()
    open_cost = conf.filesOpenCostInBytes()
    split = min(conf.filesMaxPartitionBytes(), max(open_cost, (size + files * open_cost) // max(cores, 1)))
    return min(split, size + max(files - 1, 0) * open_cost)


_STATUS = re.compile(r"path=([^;]*);.*?length=(\d+);.*?modification_time=(\d+);")


def file_statuses(index) -> tuple[tuple[str, int, int], ...]:
    """The files of a file index as (Hadoop path, length, modification time in ms), sorted,
    fetched in one py4j call (Hadoop's ``FileStatus`` text, without its access time, which reads
    may change). Empty when the index does not list its statuses, or lists them in another format."""
    try:
        statuses = index.allFiles()
        found = _STATUS.findall(statuses.mkString("\n"))
    except Py4JError:
        return ()
    if len(found) != statuses.size():
        return ()
    return tuple(sorted((p, int(n), int(t)) for p, n, t in found))


def _listing(index) -> list[str]:
    """The input files of a file index as sorted ``path length mtime`` lines (the paths alone when
    the index does not list its statuses)."""
    statuses = file_statuses(index)
    return sorted(" ".join(map(str, f)) for f in statuses) if statuses else sorted(index.inputFiles())


def _leaves(df: DataFrame) -> list:
    """The leaves of ``df``'s analyzed plan."""
    leaves = df._jdf.queryExecution().analyzed().collectLeaves()
    return [leaves.apply(i) for i in range(leaves.size())]


def _is_file_scan(leaf) -> bool:
    """Whether a plan leaf reads files (a ``LogicalRelation`` over a ``HadoopFsRelation``)."""
    return leaf.getClass().getSimpleName() == "LogicalRelation" and \
        leaf.relation().getClass().getSimpleName() == "HadoopFsRelation"


def layout_key(df: DataFrame, options: dict | None = None) -> str:
    """What the row positions of ``df`` depend on, as a short string: for every file scan under
    it the files (path, length, modification time), their total size and the split size; the
    reader options (they decide what a row is); the Spark version; and for anything but a plain
    file read the number of partitions."""
    spark = df.sparkSession
    conf = spark._jsparkSession.sessionState().conf()
    leaves = _leaves(df)
    parts = [spark.version.rsplit(".", 1)[0], repr(sorted((options or {}).items()))]
    scans = 0
    for leaf in leaves:
        if not _is_file_scan(leaf):
            continue
        index = leaf.relation().location()
        files = _listing(index)
        size = index.sizeInBytes()
        scans += 1
        parts.append(f"{len(files)} files {size} B split {_split_bytes(spark, conf, len(files), size)} "
                     f"open {conf.filesOpenCostInBytes()} max {conf.filesMaxPartitionNum()} "
                     f"{hashlib.sha256(chr(10).join(files).encode()).hexdigest()[:16]}")
    if scans != 1 or len(leaves) != 1:  # not a plain file read: the partitioning decides
        parts.append(f"{df.rdd.getNumPartitions()} partitions")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


# ---- where the items live ------------------------------------------------------------------------
def _scan(df: DataFrame):
    """The one file relation (``HadoopFsRelation``) ``df`` reads, or None."""
    found = [leaf.relation() for leaf in _leaves(df) if _is_file_scan(leaf)]
    return found[0] if len(found) == 1 else None


def locator(df: DataFrame, ids: str, fmt: str, options: dict | None = None, *, relation=None,
            table: str | None = None, layout: str | None = None, layout_options: dict | None = None) -> Locator:
    """The :class:`Locator` of a file read ``df`` (its relation found in its analyzed plan unless
    given): the files with their lengths and times, root paths, options and schema."""
    rel = relation if relation is not None else _scan(df)
    files = file_statuses(rel.location()) if rel is not None else ()
    paths = tuple(str(p) for p in rel.location().rootPaths().mkString("\n").split("\n")) if rel is not None else ()
    schema = StructType([f for f in df.schema.fields if not f.name.startswith("__strata_")]).json()
    opts = tuple(sorted((str(k), str(v)) for k, v in (options or {}).items()
                        if str(k).lower() not in ("path", "paths")))
    lopts = tuple(sorted((str(k), str(v)) for k, v in layout_options.items())) if layout_options is not None else None
    return Locator(ids, fmt, files, paths, opts, schema, table, layout, lopts)


def program_locator(what: str) -> Locator:
    """The :class:`Locator` of rows the program made (``what``: local, range, rdd, track ...)."""
    return Locator("program", what)


# ---- Hive-format tables ----------------------------------------------------------------------------
_TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
_LAZY_SIMPLE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


def hive_split_ids(dataset: str) -> F.Column:
    """Top-level item ids of a Hive-format table read through its SerDe: ``xxhash64(dataset name,
    file, split start, record index in the split)``. Spark reads such a table with Hadoop's input
    format, one task per split (a file cut at split starts), and reports each task's file and split
    start (``input_file_name``, ``input_file_block_start``); the low 33 bits of
    ``monotonically_increasing_id`` count the records of the task. The ids depend on the files
    and where Hadoop cuts them, not on task numbers or on how many tables the query reads."""
    record = F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1))
    return F.xxhash64(F.lit(dataset), F.input_file_name(), F.expr("input_file_block_start()"), record)


def _option(value) -> object:
    return value.get() if value.isDefined() else None


def hive_locator(spark, node, table: str | None) -> Locator:
    """The :class:`Locator` of a ``HiveTableRelation``: the table's files (every partition's
    location), its SerDe's properties as options, its schema and, for text tables (Hadoop's
    ``TextInputFormat``, read by lines), the split starts Hadoop cuts each file at as Spark's
    Hive reader asks for them (no minimum split count in local mode, else Spark's default
    parallelism or ``mapreduce.job.maps``), so that a trace finds a record again from its line.
    ``table``: the catalog table its items are shown in (None: the files, named by their path)."""
    meta = node.tableMeta()
    jspark = spark._jsparkSession
    storage = meta.storage()
    if meta.partitionColumnNames().isEmpty():
        locations = [str(_option(storage.locationUri()))]
    else:
        parts = jspark.sessionState().catalog().listPartitions(meta.identifier(), _none(spark))
        locations = [str(_option(parts.apply(i).storage().locationUri())) for i in range(parts.size())]
    locations = [p for p in locations if p != "None"]
    fmt = "hive-text" if (_option(storage.inputFormat()) == _TEXT_INPUT
                          and _option(storage.serde()) == _LAZY_SIMPLE) else "hive"
    props, table_props = scala_map(storage.properties()), scala_map(meta.properties())
    if "skip.header.line.count" in table_props:
        props["skip.header.line.count"] = table_props["skip.header.line.count"]
    files: tuple = ()
    if locations:
        listing = spark.read.format("text").load(locations)
        files = file_statuses(listing._jdf.queryExecution().analyzed().relation().location())
    splits = _text_splits(spark, locations) if fmt == "hive-text" else ()
    return Locator("split", fmt, files, tuple(locations), tuple(sorted((str(k), str(v)) for k, v in props.items())),
                   meta.schema().json(), table, splits=splits)


def _none(spark):
    return getattr(getattr(spark._jvm, "scala.None$"), "MODULE$")


def _text_splits(spark, locations: list[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Where Hadoop's ``TextInputFormat`` cuts each file of each location, as Spark's Hive reader
    asks it to (one request per location, the way Spark's Hive table reader asks)."""
    jvm = spark._jvm
    sc = spark.sparkContext._jsc.sc()
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    minimum = 0 if sc.isLocal() else max(conf.getInt("mapreduce.job.maps", 1), sc.defaultMinPartitions())
    starts: dict[str, list[int]] = {}
    for loc in locations:
        job = getattr(jvm, "org.apache.hadoop.mapred.JobConf")(conf)
        getattr(jvm, "org.apache.hadoop.mapred.FileInputFormat").setInputPaths(job, loc)
        fmt = getattr(jvm, "org.apache.hadoop.mapred.TextInputFormat")()
        fmt.configure(job)
        try:
            found = fmt.getSplits(job, minimum)
        except Py4JError:
            continue
        for s in found:
            starts.setdefault(str(s.getPath().toString()), []).append(int(s.getStart()))
    return tuple(sorted((f, tuple(sorted(set(v)))) for f, v in starts.items()))
