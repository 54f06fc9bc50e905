"""`Store`: open a store, read committed tables, ingest bundles in atomic commits."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from store import schema as S
from store.engine import (
    INGEST_BYTES_PER_TRIPLE,
    Choice,
    Engine,
    choose,
    local_rows_setting,
    local_triples_setting,
    within_memory,
)
from store.errors import StoreError, UserError
from store.ingest import IngestCounts, Planned, is_triples, plan
from store.model import Catalog
from store.storage import Manifest, Storage, Transaction
from store.wings import engine_for
from store.writer_lock import check as check_writer

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

DEFAULT_STORE = ".strata"


@dataclass(frozen=True)
class CommitInfo:
    version: int
    message: str
    counts: IngestCounts | None = None
    engine: str | None = None  # the ingest's engine and why (`Choice.line()`)


class StoreTransaction:
    """A commit in progress: stage tables, catalog and metadata; all become visible at once."""

    def __init__(self, store: Store, tx: Transaction) -> None:
        self.store = store
        self._tx = tx
        self.catalog = Catalog.from_json(tx.catalog)
        self.counts = IngestCounts(0, 0, 0)
        # what this transaction's ingest_items calls have checked, for the calls after them
        # (store.duckdb.ingest.CheckedItems; None until the first)
        self.checked_items: Any = None

    @property
    def version(self) -> int:
        return self._tx.version

    def table(self, name: str) -> DataFrame:
        """A table as it will be after this commit (committed rows plus staged ones)."""
        return self.store._read(self._tx.tables.get(name), name)

    def append(self, name: str, df: DataFrame, files: int | None = None,
               sort_by: Sequence[str] = ()) -> None:
        self._tx.append(name, df, files=files, sort_by=sort_by)

    def append_rows(self, name: str, rows: Sequence[tuple], schema) -> None:
        """Append a few rows of Spark ``schema`` (no Spark job on a local store)."""
        self._tx.append_rows(name, rows, schema)

    def replace(self, name: str, df: DataFrame, partition_by: Sequence[str] = (),
                sort_by: Sequence[str] = (), files: int | None = None) -> None:
        self._tx.replace(name, df, partition_by=partition_by, sort_by=sort_by, files=files)

    def drop_segments(self, name: str, segments: Sequence[str]) -> None:
        """Leave these segments out of table ``name`` (``Transaction.drop_segments``)."""
        self._tx.drop_segments(name, segments)

    def segments(self, name: str) -> tuple[str, ...]:
        """The segments table ``name`` will have after this commit, as staged so far."""
        entry = self._tx.tables.get(name)
        return entry.segments if entry is not None else ()

    def stage_local(self, name: str, schema_json: str, partition_by: Sequence[str] = (),
                    sort_by: Sequence[str] = ()) -> str | None:
        """A local folder whose Parquet files become table ``name`` at commit (None: the store is
        not a local folder). See ``Transaction.stage_local``."""
        return self._tx.stage_local(name, schema_json, partition_by, sort_by)

    def set_meta(self, key: str, value: Any) -> None:
        self._tx.set_meta(key, value)

    def meta(self, key: str, default: Any = None) -> Any:
        return self._tx.meta.get(key, default)

    def set_catalog(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._tx.catalog = catalog.to_json()

    def append_arrow(self, name: str, rows, schema_json: str) -> None:
        """Append a pyarrow Table to table ``name`` as one Parquet file written on the driver (a
        local store only; ``schema_json`` is recorded when the table is new)."""
        self.append_arrows({name: (rows, schema_json)})

    def append_arrows(self, tables: Mapping[str, tuple[Any, str]],
                      written: Callable[[str], None] | None = None) -> None:
        """`append_arrow` of each table ``name -> (rows, schema_json)``, the files written side by
        side, a thread a core (pyarrow encodes and compresses without Python's lock: about half the
        time on 2 cores); ``written(name)`` is called as each table's file is done."""
        from concurrent.futures import ThreadPoolExecutor, as_completed  # deferred: ~10 ms a CLI start need not pay

        import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

        paths = {}
        for name, (_, schema_json) in tables.items():
            folder = self._tx.append_local(name, schema_json)
            if folder is None:
                raise StoreError(f"store {self.store.root} is not a local folder; its rows are written with Spark")
            paths[name] = os.path.join(folder, "part-00000.zstd.parquet")
        if len(tables) == 1:  # one file: no thread (the OpenLineage writer's commits write them one by one)
            (name, (rows, _)), = tables.items()
            pq.write_table(rows, paths[name], compression="zstd")
            if written is not None:
                written(name)
            return
        with ThreadPoolExecutor(max_workers=max(1, min(len(tables), os.cpu_count() or 1))) as pool:
            done = {pool.submit(pq.write_table, rows, paths[name], compression="zstd"): name
                    for name, (rows, _) in tables.items()}
            for f in as_completed(done):
                f.result()
                if written is not None:
                    written(done[f])

    def ingest_items(self, bundle: Mapping[str, Any], items, edges, granularity: str,
                     source: str = "items") -> IngestCounts | None:
        """Ingest ``bundle`` (a few elements, as a dict) with a bulk of new item elements (a
        pyarrow Table ``items`` of id, parent) and edges between them (``edges``: src, process,
        dst) computed column-wise, on a local store, when set-wise checks show the items and
        edges valid (``store.duckdb.ingest.item_rows`` says what is checked); None otherwise
        (nothing staged: ingest them as bundles instead). Ids already in the store are left out."""
        from store.duckdb.bundle import from_dict  # deferred: the DuckDB wing loads pyarrow
        from store.duckdb.ingest import ingest_items  # deferred: with it

        counts = ingest_items(self, from_dict(bundle, source), items, edges, granularity)
        if counts is not None:
            self.counts = self.counts + counts
        return counts

    def ingest(self, source, *, triples: bool = False, engine: Engine | None = None) -> IngestCounts:
        """Validate a bundle (or, with ``triples``, a triples file) against everything committed or
        staged so far, then stage its rows. engine: where it runs; None: the store's choice for
        this source (`Store.ingest_choice`)."""
        item = source if isinstance(source, Planned) else plan(source, triples)
        if engine is None:
            engine = self.store.ingest_choice([item]).engine
        counts = engine_for(engine).ingest(self, item)
        if engine is Engine.LOCAL or not item.triples:  # a Spark triples file counts through its bundle
            self.counts = self.counts + counts
        return counts


class Store:
    """A provenance store: a folder (or Hadoop URI) of Parquet tables and manifests.

    Opening a store reads its newest manifest and nothing else: no JVM starts until a step
    needs Spark (`store.spark` is created on first use). `engine` is the setting questions are
    answered with (`store.engine`: auto, local or spark; `choose()` decides per question).
    """

    def __init__(self, root: str, spark, *, engine: str | Engine | None = None, master: str | None = None,
                 local_rows: int | None = None, as_of: int | None = None) -> None:
        self.root = root
        self.storage = Storage(root, spark)
        self.engine = Engine.parse(engine)
        self.local_rows = local_rows_setting(local_rows)
        self.as_of = as_of
        self._master = master
        self._local = None
        self._manifest: Manifest = self._read_manifest()

    def _read_manifest(self) -> Manifest:
        if self.as_of is None:
            return self.storage.manifest()
        versions = self.storage.versions()
        if self.as_of not in versions:
            raise UserError(f"store {self.root} has no version {self.as_of} to read as of"
                            + (f" (versions {versions[0]}..{versions[-1]})" if versions else " (it is empty)"),
                            hint="`strata info` lists the versions")
        return self.storage.manifest(self.as_of)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, spark=None, master: str | None = None,
             conf: Mapping[str, str] | None = None, engine: str | Engine | None = None,
             local_rows: int | None = None, as_of: int | None = None) -> Store:
        """Open (lazily create) the store at `path` ($STRATA_STORE, else ./.strata).

        spark: a SparkSession, or a function that starts one; None: the active SparkSession, else
        one started with the store's defaults (`store.spark.session.get_session(master, conf)`), in
        both cases only when a step first needs Spark. engine: auto (default, or
        $STRATA_ENGINE), local or spark (store/engine.py); local_rows: `auto`'s threshold.
        as_of: read committed version `as_of` instead of the newest (a read-only view: commits
        are refused).
        """
        if spark is None:
            from store.spark.session import get_session  # deferred: pyspark, imported once Spark starts

            def spark():
                return get_session(master, conf)
        return cls(cls.path_of(path), spark, engine=engine, master=master, local_rows=local_rows, as_of=as_of)

    @staticmethod
    def path_of(path: str | os.PathLike[str] | None = None) -> str:
        """The store root `open` uses for `path` ($STRATA_STORE, else ./.strata), resolved."""
        root = str(path or os.environ.get("STRATA_STORE") or DEFAULT_STORE)
        if "://" not in root:
            p = Path(root).expanduser()
            if p.exists() and not p.is_dir():
                raise UserError(f"store path {root} exists and is not a folder",
                                hint="pass --store with a folder path")
            root = str(p.resolve())
        return root

    # ---------------------------------------------------------------- engines
    @property
    def spark(self):
        """The SparkSession (started on first use)."""
        return self.storage.spark

    @property
    def spark_started(self) -> bool:
        """True once this store holds a SparkSession (it was given one, or a step needed Spark)."""
        return not callable(self.storage._spark)

    def cluster(self) -> str | None:
        """Why Spark was asked for (a master other than `local[...]`), or None."""
        if self._master is not None:
            master = self._master
        elif self.spark_started:
            master = self.storage.spark.sparkContext.master
        else:
            master = os.environ.get("STRATA_SPARK_MASTER")
        if not master or master == "local" or master.startswith("local["):
            return None
        return f"master {master}"

    def choose(self, reads: int | None = None) -> Choice:
        """The engine for a question that reads `reads` rows (store/engine.py)."""
        return choose(self.engine, on_this_machine=self.storage.on_this_machine, cluster=self.cluster(),
                      reads=reads, local_rows=self.local_rows)

    def local(self):
        """DuckDB relations over this store's committed version (store/duckdb/tables.py)."""
        if self._local is None or self._local.version != self.version:
            from store.duckdb.tables import LocalTables  # deferred: DuckDB, imported at the first local read

            self._local = LocalTables(self)
        return self._local

    # ---------------------------------------------------------------- reading
    def refresh(self) -> Store:
        self._manifest = self._read_manifest()
        return self

    def at(self, version: int | None) -> Store:
        """This store as of committed `version` (None: the newest), sharing its Spark session."""
        return Store(self.root, self.storage._spark, engine=self.engine, master=self._master,
                     local_rows=self.local_rows, as_of=version)

    @property
    def version(self) -> int:
        return self._manifest.version

    @property
    def manifest(self) -> Manifest:
        return self._manifest

    @property
    def catalog(self) -> Catalog:
        return Catalog.from_json(self._manifest.catalog)

    def meta(self, key: str, default: Any = None) -> Any:
        return self._manifest.meta.get(key, default)

    def has_table(self, name: str) -> bool:
        entry = self._manifest.tables.get(name)
        return entry is not None and bool(entry.segments)

    def table(self, name: str) -> DataFrame:
        """A committed table as a Spark DataFrame; core tables exist (empty) even in a new store."""
        entry = self._manifest.tables.get(name)
        if entry is None and name not in S.SCHEMAS:
            raise StoreError(f"store {self.root} has no table '{name}'",
                             hint="run `strata index` if this is an index table")
        return self._read(entry, name)

    def _read(self, entry, name: str) -> DataFrame:
        return self.storage.read_table(entry, S.SCHEMAS.get(name))

    def history(self) -> list[dict[str, Any]]:
        """The committed versions up to the one read (all but later ones under `as_of`): version,
        time, message, and whether the commit recorded hashes (store/seal.py)."""
        out = []
        for v in self.storage.versions():
            if v > self.version:
                break
            m = self.storage.manifest(v)
            out.append({"version": v, "created": m.created, "message": m.message, "hashed": bool(m.integrity)})
        return out

    # ---------------------------------------------------------------- writing
    @contextmanager
    def transaction(self, message: str) -> Iterator[StoreTransaction]:
        """One atomic commit. On exception nothing is published and staged files are removed."""
        if self.as_of is not None:
            raise UserError(f"this store is opened as of version {self.as_of}: it cannot commit",
                            hint="drop --as-of to write; commits always follow the newest version")
        if self.storage.on_this_machine:
            check_writer(self.root)  # a store a server holds commits through the server alone
        base = self.storage.manifest()
        tx = Transaction(self.storage, base, message)
        stx = StoreTransaction(self, tx)
        try:
            yield stx
            self._manifest = tx.commit()
        except BaseException:
            tx.abort()
            raise

    def ingest_choice(self, planned) -> Choice:
        """Where an ingest of these sources (`store.duckdb.ingest.plan`) runs: the local path when
        the store is a local folder, its bundles hold at most the local limit of records and its
        triples files at most the local limit of triples (or `engine="local"` forces it), Spark
        otherwise (docs/engines.md, "Ingest")."""
        if any(p.records is None for p in planned):
            if self.engine is Engine.LOCAL:
                raise UserError("a bundle whose sections are Spark DataFrames is ingested with Spark",
                                hint="pass the sections as lists, files or folders, or use --engine spark/auto")
            return Choice(Engine.SPARK, "a bundle section is a Spark DataFrame")
        bundles = sum(p.records for p in planned if not p.triples)
        triples = sum(p.records for p in planned if p.triples)
        choices = []
        if bundles or not triples:
            choices.append(self.choose(bundles))
        if triples:
            choices.append(choose(self.engine, on_this_machine=self.storage.on_this_machine, cluster=self.cluster(),
                                  reads=triples, local_rows=local_triples_setting()))
        choice = next((c for c in choices if c.engine is Engine.SPARK), choices[0])
        if choice.engine is Engine.LOCAL and self.engine is Engine.AUTO and triples:
            return within_memory(triples * INGEST_BYTES_PER_TRIPLE,
                                 f"ingesting {triples:,} triples in this process") or choice
        return choice

    def ingest(self, *sources: Mapping[str, Any] | str | os.PathLike[str],
               fmt: str | None = None, message: str | None = None) -> CommitInfo:
        """Ingest bundles and triples files in ONE commit (all or nothing).

        fmt: "bundle" or "triples" when a path's extension is ambiguous. The sources are counted
        first (`store.duckdb.ingest.plan`) and all of them are ingested on the engine
        `ingest_choice` picks for their total.
        """
        if not sources:
            raise UserError("nothing to ingest", hint="name at least one bundle")
        names = [s if isinstance(s, (str, os.PathLike)) else "<bundle>" for s in sources]
        msg = message or "ingest " + ", ".join(str(n) for n in names)
        planned = [plan(src, isinstance(src, (str, os.PathLike)) and is_triples(src, fmt)) for src in sources]
        choice = self.ingest_choice(planned)
        with self.transaction(msg) as tx:
            for item in planned:
                tx.ingest(item, engine=choice.engine)
        return CommitInfo(self.version, msg, tx.counts, choice.line())

    # ---------------------------------------------------------------- facades
    def info(self) -> dict[str, Any]:
        from store.info import info  # store.info reads a Store: imported here to keep no cycle

        return info(self)

    def graph(self):
        """The store as a GraphFrame (store/spark/graph.py)."""
        from store.spark.graph import graph  # deferred: pyspark and graphframes

        return graph(self)

