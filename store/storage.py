"""Crash-safe storage: Parquet segments plus an atomically published manifest per commit.

Layout under the store root (a local path or any Hadoop-supported URI):

    _strata/manifests/00000001.json     one manifest per committed version
    _strata/digests/00000001-<id>.json  the digests of the files that commit wrote (store/seal.py)
    tables/<table>/<segment>/part-*.parquet

A commit writes new segment folders first, then publishes manifest N+1 with an exclusive create
(local: `os.link` of a fully written, fsynced temp file; Hadoop: `rename`, which refuses to
overwrite). A reader only sees segments listed by the newest manifest, so a writer killed at any
point leaves the store at its previous version; its orphan segments are never read. Two writers
that both start from version N race for manifest N+1: exactly one wins, the other gets
`ConcurrentWriteError` and its segments are removed (never a lost update).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store import seal
from store.errors import ConcurrentWriteError, StoreError
from store.schema import schema_json, spark_json

MANIFEST_DIR = "_strata/manifests"
TABLES_DIR = "tables"
FORMAT = "strata-store/1"
_MANIFEST_RE = re.compile(r"^(\d{8})\.json$")


# ---------------------------------------------------------------------------- file systems
class _FolderFS:
    """Plain local paths (the embedded default)."""

    def __init__(self, root: str) -> None:
        self.root = str(Path(root).expanduser().resolve())

    def join(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def uri(self, *parts: str) -> str:
        return "file://" + self.join(*parts)

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.join(rel))

    def listdir(self, rel: str) -> list[str]:
        path = self.join(rel)
        return sorted(os.listdir(path)) if os.path.isdir(path) else []

    def read_text(self, rel: str) -> str:
        with open(self.join(rel), encoding="utf-8") as fh:
            return fh.read()

    def publish(self, rel: str, text: str) -> bool:
        """Create `rel` with `text` atomically; False if it already exists."""
        final = self.join(rel)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = f"{final}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, final)  # atomic, and fails if `final` exists
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        dfd = os.open(os.path.dirname(final), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return True

    def delete(self, rel: str) -> None:
        import shutil  # deferred: shutil imports bz2, lzma and more (15 ms at every start)

        path = self.join(rel)
        if os.path.isfile(path):
            os.remove(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


class _HadoopFS:
    """Any Hadoop-supported URI (hdfs://, s3a://, abfs://, …) through the JVM's FileSystem."""

    def __init__(self, root: str, spark) -> None:
        self.root = root.rstrip("/")
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()
        self._fs = self._path("").getFileSystem(self._conf)

    def _path(self, rel: str):
        return self._jvm.org.apache.hadoop.fs.Path(self.uri(rel) if rel else self.root)

    def uri(self, *parts: str) -> str:
        return "/".join([self.root, *[p for p in parts if p]])

    join = uri

    def exists(self, rel: str) -> bool:
        return bool(self._fs.exists(self._path(rel)))

    def listdir(self, rel: str) -> list[str]:
        if not self.exists(rel):
            return []
        return sorted(s.getPath().getName() for s in self._fs.listStatus(self._path(rel)))

    def read_text(self, rel: str) -> str:
        stream = self._fs.open(self._path(rel))
        try:
            reader = self._jvm.java.io.BufferedReader(
                self._jvm.java.io.InputStreamReader(stream, "UTF-8")
            )
            lines = []
            line = reader.readLine()
            while line is not None:
                lines.append(line)
                line = reader.readLine()
            return "\n".join(lines)
        finally:
            stream.close()

    def publish(self, rel: str, text: str) -> bool:
        tmp = self._path(f"{rel}.{uuid.uuid4().hex}.tmp")
        out = self._fs.create(tmp, False)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        ok = bool(self._fs.rename(tmp, self._path(rel)))  # HDFS rename never overwrites
        if not ok:
            self._fs.delete(tmp, False)
        return ok

    def delete(self, rel: str) -> None:
        self._fs.delete(self._path(rel), True)


def _filesystem(root: str, storage: Storage):
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", root) and not root.startswith("file://"):
        return _HadoopFS(root, storage.spark)
    return _FolderFS(root[len("file://"):] if root.startswith("file://") else root)


# ---------------------------------------------------------------------------- manifest
@dataclass(frozen=True)
class TableEntry:
    segments: tuple[str, ...]
    schema: str  # Spark schema JSON
    partition_by: tuple[str, ...] = ()
    sort_by: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "segments": list(self.segments),
            "schema": json.loads(self.schema),
            "partition_by": list(self.partition_by),
            "sort_by": list(self.sort_by),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableEntry:
        return cls(
            tuple(d["segments"]),
            json.dumps(d["schema"]),
            tuple(d.get("partition_by", ())),
            tuple(d.get("sort_by", ())),
        )


@dataclass(frozen=True)
class Manifest:
    version: int = 0
    tables: dict[str, TableEntry] = field(default_factory=dict)
    catalog: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    created: str = ""
    integrity: dict[str, Any] = field(default_factory=dict)  # store/seal.py; {} before hashing

    def to_text(self) -> str:
        body = {
            "format": FORMAT,
            "version": self.version,
            "created": self.created,
            "message": self.message,
            "catalog": self.catalog,
            "meta": self.meta,
            "tables": {k: v.to_json() for k, v in sorted(self.tables.items())},
        }
        if self.integrity:
            body["integrity"] = self.integrity
        return json.dumps(body, indent=1, sort_keys=False)

    @classmethod
    def from_text(cls, text: str, where: str) -> Manifest:
        try:
            d = json.loads(text)
            if d.get("format") != FORMAT:
                raise StoreError(f"{where}: not a Strata manifest (format {d.get('format')!r})")
            return cls(
                version=int(d["version"]),
                tables={k: TableEntry.from_json(v) for k, v in d.get("tables", {}).items()},
                catalog=d.get("catalog", {}),
                meta=d.get("meta", {}),
                message=d.get("message", ""),
                created=d.get("created", ""),
                integrity=d.get("integrity") or {},
            )
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(f"{where}: corrupt manifest ({e})") from e


class Storage:
    """Reads and writes one store's manifests and segments.

    `spark` is a SparkSession or a function that returns one: a local store reads its manifests
    with plain file I/O and calls it only when a table is read or written through Spark; a
    Hadoop URI needs the JVM's FileSystem, so opening one starts Spark at once.
    """

    def __init__(self, root: str, spark) -> None:
        self.root = str(root)
        self._spark = spark
        self.fs = _filesystem(self.root, self)

    @property
    def spark(self):
        if callable(self._spark):
            self._spark = self._spark()
        return self._spark

    @property
    def on_this_machine(self) -> bool:
        """True when the store is a folder on this machine's file system."""
        return isinstance(self.fs, _FolderFS)

    def file_path(self, rel: str) -> str | None:
        """The local file-system path of `rel`, or None when the store is not a local folder."""
        return self.fs.join(rel) if self.on_this_machine else None

    def versions(self) -> list[int]:
        return [int(m.group(1)) for n in self.fs.listdir(MANIFEST_DIR) if (m := _MANIFEST_RE.match(n))]

    def exists(self) -> bool:
        return bool(self.versions())

    def manifest(self, version: int | None = None) -> Manifest:
        versions = self.versions()
        if not versions:
            return Manifest()
        v = versions[-1] if version is None else version
        if v not in versions:
            raise StoreError(f"store {self.root} has no version {v} (versions 1..{versions[-1]})")
        rel = f"{MANIFEST_DIR}/{v:08d}.json"
        return Manifest.from_text(self.fs.read_text(rel), f"{self.root}/{rel}")

    def read_table(self, entry: TableEntry | None, schema):
        """A committed table as a Spark DataFrame (empty with Arrow `schema` when there are no
        segments)."""
        from pyspark.sql.types import StructType  # deferred: pyspark, on the Spark path only

        if entry is None or not entry.segments:
            # from Arrow: an empty LocalRelation, which the optimizer prunes (no Python worker)
            return self.spark.createDataFrame(schema.empty_table(), StructType.fromJson(spark_json(schema)))
        stored = StructType.fromJson(json.loads(entry.schema))
        paths = [self.fs.uri(s) for s in entry.segments]
        if entry.partition_by:
            frames = [self.spark.read.parquet(p) for p in paths]
            df = frames[0]
            for f in frames[1:]:
                df = df.unionByName(f)
            return df.select(*stored.fieldNames())
        return self.spark.read.schema(stored).parquet(*paths)

    @staticmethod
    def _new_segment(table: str, version: int) -> str:
        return f"{TABLES_DIR}/{table}/v{version:08d}-{uuid.uuid4().hex[:12]}"

    def write_segment(self, table: str, version: int, df, partition_by: Sequence[str] = (),
                      sort_by: Sequence[str] = (), files: int | None = None) -> str:
        rel = self._new_segment(table, version)
        if files is not None:
            df = df.repartition(files, *partition_by) if partition_by else df.coalesce(files)
        if sort_by:
            # Partition columns lead: the writer needs rows ordered by them, and a sort that does
            # not start with them is replaced by one on them alone (Spark's planned writes drop
            # the inner sort), which would leave the files unsorted by `sort_by`.
            df = df.sortWithinPartitions(*partition_by, *sort_by)
        writer = df.write.mode("errorifexists").option("compression", "zstd")
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        writer.parquet(self.fs.uri(rel))
        return rel

    def write_rows(self, table: str, version: int, rows: Sequence[tuple], schema) -> str:
        """A segment of a few rows (tuples, nested structs as tuples) of Arrow ``schema``. A local
        store writes ONE Parquet file with pyarrow on the driver (milliseconds; a Spark write job
        costs ~0.3 s); another store writes it with Spark."""
        rel = self._new_segment(table, version)
        folder = self.file_path(rel)
        if folder is None:
            from pyspark.sql.types import StructType  # deferred: pyspark, for a store on a Hadoop URI

            df = self.spark.createDataFrame(list(rows), StructType.fromJson(spark_json(schema)))
            return self.write_segment(table, version, df, files=1)
        import pyarrow as pa  # deferred: a few rows written on the driver
        import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

        records = [_arrow_record(row, pa.struct(list(schema))) for row in rows]
        os.makedirs(folder)
        pq.write_table(pa.Table.from_pylist(records, schema=schema),
                       os.path.join(folder, "part-00000.zstd.parquet"), compression="zstd")
        return rel

    def publish(self, manifest: Manifest) -> None:
        rel = f"{MANIFEST_DIR}/{manifest.version:08d}.json"
        if not self.fs.publish(rel, manifest.to_text()):
            raise ConcurrentWriteError(
                f"another writer committed version {manifest.version} of {self.root} while this "
                "commit was being written; nothing of this commit was kept",
                hint="re-run the command: it will start from the new version",
            )


class Transaction:
    """One atomic commit: stage segments, then publish a manifest (see module docstring)."""

    def __init__(self, storage: Storage, base: Manifest, message: str) -> None:
        self.storage = storage
        self.base = base
        self.version = base.version + 1
        self.message = message
        self.tables: dict[str, TableEntry] = dict(base.tables)
        self.catalog: dict[str, Any] = dict(base.catalog)
        self.meta: dict[str, Any] = dict(base.meta)
        self.written: list[str] = []
        self.changed: set[str] = set()

    def append(self, name: str, df, files: int | None = None, sort_by: Sequence[str] = ()) -> None:
        old = self.tables.get(name)
        if old and old.partition_by:
            raise StoreError(f"table {name} is partitioned; use replace()")
        if old is not None and old.schema != df.schema.json():
            df = df.select(*[f["name"] for f in json.loads(old.schema)["fields"]])
        self._add_segment(name, self.storage.write_segment(name, self.version, df, files=files, sort_by=sort_by),
                          df.schema.json())

    def _add_segment(self, name: str, rel: str, schema_json: str) -> None:
        """Record an appended segment (a table keeps the schema it was created with)."""
        old = self.tables.get(name)
        self._set_segment(name, rel, TableEntry((old.segments if old else ()) + (rel,),
                                                old.schema if old else schema_json))

    def append_rows(self, name: str, rows: Sequence[tuple], schema) -> None:
        """Append a few rows (``Storage.write_rows``: no Spark job on a local store)."""
        old = self.tables.get(name)
        text = schema_json(schema)
        if old is not None and json.loads(old.schema) != json.loads(text):
            raise StoreError(f"table {name} has another schema than the rows appended to it")
        self._add_segment(name, self.storage.write_rows(name, self.version, rows, schema), text)

    def stage_local(self, name: str, schema_json: str, partition_by: Sequence[str] = (),
                    sort_by: Sequence[str] = ()) -> str | None:
        """A new, empty segment folder that replaces table ``name``, for a writer other than Spark's
        (the caller fills it with Parquet files of ``schema_json`` — in ``col=value`` folders for
        ``partition_by``, each file ordered by ``sort_by`` — before the commit; an abort deletes
        it). None when the store is not a local folder."""
        rel = self.storage._new_segment(name, self.version)
        folder = self.storage.file_path(rel)
        if folder is None:
            return None
        os.makedirs(folder)
        self._set_segment(name, rel, TableEntry((rel,), schema_json, tuple(partition_by), tuple(sort_by)))
        return folder

    def append_local(self, name: str, schema_json: str) -> str | None:
        """A new, empty segment folder appended to table ``name`` (like ``append``), for a writer
        other than Spark's: the caller fills it with Parquet files of the table's schema before the
        commit; an abort deletes it. None when the store is not a local folder."""
        rel = self.storage._new_segment(name, self.version)
        folder = self.storage.file_path(rel)
        if folder is None:
            return None
        os.makedirs(folder)
        self._add_segment(name, rel, schema_json)
        return folder

    def replace(self, name: str, df, partition_by: Sequence[str] = (), sort_by: Sequence[str] = (),
                files: int | None = None) -> None:
        rel = self.storage.write_segment(name, self.version, df, partition_by, sort_by, files)
        self._set_segment(name, rel, TableEntry((rel,), df.schema.json(), tuple(partition_by), tuple(sort_by)))

    def drop_segments(self, name: str, segments: Sequence[str]) -> None:
        """Leave `segments` out of table `name` from this commit on (their files stay: the
        manifests of earlier versions list them)."""
        old = self.tables.get(name)
        if old is None:
            return
        gone = set(segments)
        self.tables[name] = TableEntry(tuple(s for s in old.segments if s not in gone), old.schema,
                                       old.partition_by, old.sort_by)
        self.changed.add(name)

    def _set_segment(self, name: str, rel: str, entry: TableEntry) -> None:
        """Record a written segment (deleted on abort) and table ``name``'s new entry."""
        self.written.append(rel)
        self.tables[name] = entry
        self.changed.add(name)

    def set_meta(self, key: str, value: Any) -> None:
        json.dumps(value)  # must be JSON-serialisable
        self.meta[key] = value

    def commit(self) -> Manifest:
        """Publish the manifest, with the commit's hashes and chain (store/seal.py)."""
        sealed, digests = seal.commit_integrity(self.storage, self.base, self.version, self.tables,
                                                     self.changed)
        if digests is not None:  # written first; an abort deletes it, as it does the segments
            self.written.append(digests[0])
            self.storage.fs.publish(*digests)
        manifest = Manifest(
            version=self.version,
            tables=self.tables,
            catalog=self.catalog,
            meta=self.meta,
            message=self.message,
            created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            integrity=sealed,
        )
        manifest.integrity["root"] = seal.manifest_root(json.loads(manifest.to_text()))
        try:
            self.storage.publish(manifest)
        except ConcurrentWriteError:
            self.abort()
            raise
        return manifest

    def abort(self) -> None:
        for rel in self.written:
            self.storage.fs.delete(rel)
        self.written = []


def _arrow_record(value, dtype):
    """A Spark-style value (structs as tuples or Rows) as pyarrow's from_pylist wants it."""
    import pyarrow as pa  # loaded by the caller already

    if value is None:
        return None
    if pa.types.is_struct(dtype):
        return {f.name: _arrow_record(v, f.type) for f, v in zip(dtype, value, strict=True)}
    if pa.types.is_map(dtype):
        return [(k, _arrow_record(v, dtype.item_type)) for k, v in value.items()]
    if pa.types.is_list(dtype):
        return [_arrow_record(v, dtype.value_type) for v in value]
    return value


@contextmanager
def spark_conf(spark, key: str, value: str) -> Iterator[None]:
    """Set a Spark SQL setting for the duration of the block, then restore (or unset) it."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


@contextmanager
def transaction(storage: Storage, message: str) -> Iterator[Transaction]:
    tx = Transaction(storage, storage.manifest(), message)
    try:
        yield tx
    except BaseException:
        tx.abort()
        raise
