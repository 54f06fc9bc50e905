"""The entry point: ``Tracker(spark, store)`` reads or wraps inputs and writes captured runs."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import cached_property

from py4j.protocol import Py4JError
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from capture import jvm
from capture.derived import Derived, hydrate, top
from capture.errors import UnsupportedOperation
from capture.materialize import assoc_frame, identity_frame
from capture.model import OperatorProv, OpType, Slot
from capture.plan import is_hidden
from capture.tracked import TrackedDataFrame


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


def _listing(index) -> list[str]:
    """The input files of a file index as sorted ``path length mtime`` lines, fetched in one py4j
    call (Hadoop's ``FileStatus`` text, without its access time, which reads may change). An
    index that does not list its statuses, or text in another format, gives the paths alone."""
    try:
        statuses = index.allFiles()
        found = [" ".join(m) for m in _STATUS.findall(statuses.mkString("\n"))]
        if len(found) == statuses.size():
            return sorted(found)
    except Py4JError:
        pass
    return sorted(index.inputFiles())


def layout_key(df: DataFrame, options: dict | None = None) -> str:
    """What the row positions of ``df`` depend on, as a short string: for every file scan under
    it the files (path, length, modification time), their total size and the split size; the
    reader options (they decide what a row is); the Spark version; and for anything but a plain
    file read the number of partitions."""
    spark = df.sparkSession
    conf = spark._jsparkSession.sessionState().conf()
    leaves = df._jdf.queryExecution().analyzed().collectLeaves()
    parts = [spark.version.rsplit(".", 1)[0], repr(sorted((options or {}).items()))]
    scans = 0
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() != "LogicalRelation" or \
                leaf.relation().getClass().getSimpleName() != "HadoopFsRelation":
            continue
        index = leaf.relation().location()
        files = _listing(index)
        size = index.sizeInBytes()
        scans += 1
        parts.append(f"{len(files)} files {size} B split {_split_bytes(spark, conf, len(files), size)} "
                     f"open {conf.filesOpenCostInBytes()} max {conf.filesMaxPartitionNum()} "
                     f"{hashlib.sha256(chr(10).join(files).encode()).hexdigest()[:16]}")
    if scans != 1 or leaves.size() != 1:  # not a plain file read: the partitioning decides
        parts.append(f"{df.rdd.getNumPartitions()} partitions")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Captured:
    """The provenance of one tracked DataFrame, before it is committed."""

    operators: tuple[OperatorProv, ...]
    slots: tuple[Slot, ...]
    result_oid: int
    built: DataFrame  # the tracked DataFrame's own columns (derived ids inside collected lists left out)
    id_col: str  # the hidden column of ``annotated`` holding each result item's id
    compact: DataFrame  # what a commit stores: ``annotated`` without its derived id columns
    derived: tuple[Derived, ...] = ()  # how to compute those again (capture/derived.py)

    @cached_property
    def annotated(self) -> DataFrame:
        """Visible columns and every hidden id column, derived ones included (built on first
        use: a commit stores ``compact`` and does not need it)."""
        return hydrate(self.built, self.derived)

    def stored_associations(self, annotated: DataFrame | None = None) -> DataFrame:
        """P for the operators that change ids: ``oid, out_id, input, in_id, pos``
        (flatten, join, union, aggregation); the rest of P is derived (:meth:`associations`).
        ``annotated`` may be the stored (compact) form: derived ids are computed again."""
        return assoc_frame(self._full(annotated), self.slots)

    def _full(self, annotated: DataFrame | None) -> DataFrame:
        return self.annotated if annotated is None else hydrate(annotated, self.derived)

    def associations(self, annotated: DataFrame | None = None) -> DataFrame:
        """Pebble's P for every operator (Table 6), the identity operators' ⟨id, id⟩ rows
        derived from the stored ones."""
        df = self._full(annotated)
        stored = assoc_frame(df, self.slots)
        derived = identity_frame(stored, self.operators, self.result_oid, df.select(self.id_col))
        return stored.unionByName(derived)

    def operator(self, oid: int) -> OperatorProv:
        return next(o for o in self.operators if o.oid == oid)


def _line_delimited(spark, options: dict) -> bool:
    """Whether a JSON read with ``options`` reads files one record per line: not ``multiLine``,
    and not entries of archives (Spark's ``spark.sql.files.archive.reader.enabled``)."""
    if spark.conf.get("spark.sql.files.archive.reader.enabled", "false").lower() == "true":
        return False
    return not any(k.lower() == "multiline" and str(v).lower() == "true" for k, v in options.items())


class _Reader:
    def __init__(self, tracker: Tracker):
        self._tracker = tracker

    def _read(self, fmt: str, path, name: str | None, options) -> TrackedDataFrame:
        """As ``spark.read.<fmt>(path, schema=..., **options)``. A given ``schema`` (a StructType
        or DDL string) is applied, not passed on as an option; ids do not depend on it (nor on a
        layout key): it does not change which rows a file holds, so the same rows keep their ids."""
        options = dict(options)
        schema = options.pop("schema", None)
        spark = self._tracker.spark
        reader = spark.read.options(**options)
        if schema is not None:
            reader = reader.schema(schema)
        df = reader.format(fmt).load(path)
        paths = [path] if isinstance(path, str) else list(path)
        dataset = name or ",".join(os.path.abspath(p) if "://" not in p else p for p in paths)
        detail = f"{fmt} {', '.join(paths)}"
        if fmt == "json" and _line_delimited(spark, options) and jvm.available(spark) \
                and not any(is_hidden(c) for c in df.columns):  # (reserved names: _source's error)
            # the same records, plus each line's offset (capture/jvm): the schema is the one just
            # inferred or given, so no second inference runs
            fields = [*df.schema.fields, StructField(jvm.OFFSET, LongType(), False)]
            df = spark.read.options(**options).schema(StructType(fields)).format(jvm.CLASS).load(path)
            return self._tracker._source(df, dataset, "read.json", detail, file_line_ids(df, dataset), (jvm.OFFSET,))
        ids = file_row_ids(df, dataset) if fmt == "parquet" else \
            item_ids(dataset, layout_key(df, {"format": fmt, **options}))
        return self._tracker._source(df, dataset, f"read.{fmt}", detail, ids)

    def json(self, path, name: str | None = None, **options) -> TrackedDataFrame:
        return self._read("json", path, name, options)

    def parquet(self, path, name: str | None = None, **options) -> TrackedDataFrame:
        return self._read("parquet", path, name, options)

    def csv(self, path, name: str | None = None, **options) -> TrackedDataFrame:
        return self._read("csv", path, name, options)


class Tracker:
    """Records the structural provenance of the DataFrame pipelines built from its inputs."""

    def __init__(self, spark, store=None, pipeline: str = "pipeline", model: bool = True):
        """``model=False`` commits only the capture tables, not the item-level elements and
        edges of the multi-granularity model (much cheaper to commit; IQL then does not see
        the run)."""
        self.spark = spark
        self.store = store
        self.pipeline = pipeline
        self.model = model
        self._ops: dict[int, OperatorProv] = {}
        self._oid = 0

    @property
    def read(self) -> _Reader:
        return _Reader(self)

    def track(self, df: DataFrame, name: str) -> TrackedDataFrame:
        """Start tracking an existing DataFrame; ``name`` identifies the dataset (and its ids)."""
        if isinstance(df, TrackedDataFrame):
            raise UnsupportedOperation.named("track", "the DataFrame is already tracked")
        if not name:
            raise UnsupportedOperation.named("track", "a dataset name is required: track(df, name='tweets')")
        return self._source(df, name, "track", f"track {name}", item_ids(name, layout_key(df)))

    def _source(self, df: DataFrame, dataset: str, method: str, detail: str, ids: F.Column,
                internal: tuple[str, ...] = ()) -> TrackedDataFrame:
        """A source operator over ``df`` with item ids ``ids``; ``internal`` names the reader's
        own columns the ids are computed from (dropped after)."""
        bad = [c for c in df.columns if is_hidden(c) and c not in internal]
        if bad:
            raise UnsupportedOperation.named(method, f"column names {bad} use the reserved prefix '__strata_'")
        oid = self._new_oid()
        idk = f"__strata_id_{oid}"
        op = OperatorProv(oid, OpType.SOURCE, method, (), (), detail=detail, dataset=dataset)
        self._register(op)
        annotated = df.withColumn(idk, ids)
        return TrackedDataFrame(self, annotated.drop(*internal) if internal else annotated, oid, idk, ())

    def _new_oid(self) -> int:
        self._oid += 1
        return self._oid

    def _register(self, op: OperatorProv) -> None:
        self._ops[op.oid] = op

    def operators(self, tdf: TrackedDataFrame) -> tuple[OperatorProv, ...]:
        """The operators ``tdf`` was built from, in id order."""
        seen: dict[int, OperatorProv] = {}
        stack = [tdf.oid]
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen[oid] = self._ops[oid]
            stack.extend(i.pred for i in seen[oid].inputs)
        return tuple(seen[o] for o in sorted(seen))

    def capture(self, tdf: TrackedDataFrame) -> Captured:
        """The in-memory provenance of ``tdf`` (nothing is computed until you ask for rows)."""
        if not isinstance(tdf, TrackedDataFrame) or tdf.tracker is not self:
            raise UnsupportedOperation.named("capture", "expects a DataFrame tracked by this Tracker")
        derived = top(tdf._derived)
        gone = [c for c in tdf.annotated.columns if c in derived]
        compact = tdf.annotated.drop(*gone) if gone else tdf.annotated  # drop: one py4j call, not one per column
        return Captured(self.operators(tdf), tdf._slots, tdf.oid, tdf.annotated, tdf.id_column,
                        compact, tdf._derived)

    def write(self, tdf: TrackedDataFrame, path: str, format: str = "parquet", mode: str = "errorifexists",
              message: str | None = None, **options):
        """Write the result and commit its provenance in one store commit (capture/commit.py)."""
        from capture.commit import write_and_commit

        return write_and_commit(self, tdf, path, format, mode, message, options)
