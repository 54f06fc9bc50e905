"""Which engine answers a question: DuckDB in this process (`local`) or Spark (`spark`).

Both engines compute the same answers from the same committed Parquet files; they differ in
what they cost. The local engine answers in milliseconds and starts no JVM, but works on one
machine's memory; Spark pays seconds of fixed cost (a JVM, then scheduling per job) and scales
out. `auto`, the default, applies the Component-index rule of CSProv to the whole query path:
small volumes on the driver, the cluster for the rest. It picks Spark when

- the store is not a folder on this machine (a Hadoop URI: hdfs://, s3a://, ...),
- the user asked for a cluster (`--master`, `Store.open(master=...)`, or a SparkSession whose
  master is not `local[...]`), or
- what the question reads, after component/scope pruning, is more than `local_rows` rows
  (`$STRATA_LOCAL_ROWS`, default `DEFAULT_LOCAL_ROWS`; for a triples file's ingest and the
  index build, more than `$STRATA_LOCAL_TRIPLES` triples, default `DEFAULT_LOCAL_TRIPLES`),

and the local engine otherwise. `local` and `spark` force one engine (`--engine`,
`$STRATA_ENGINE`, `Store.open(engine=...)`, the REPL's `\\engine`).
"""

from __future__ import annotations

import abc
import enum
import os
import threading
from dataclasses import dataclass
from typing import Any

from store.errors import UserError

# Rows a question may read for `auto` to answer it locally: a few million rows of the store's
# tables fit in a few hundred MB of this process's memory and scan in well under a second.
DEFAULT_LOCAL_ROWS = 5_000_000

# Triples (edges) up to which `auto` ingests a triples file and builds the component index in
# this process: both are column-wise (Arrow, numpy, scipy), and the index build, the larger of
# the two, needs about 300 MB per million triples (docs/index.md).
LOCAL_TRIPLES_ENV = "STRATA_LOCAL_TRIPLES"
DEFAULT_LOCAL_TRIPLES = 60_000_000


class Engine(str, enum.Enum):
    AUTO = "auto"
    LOCAL = "local"
    SPARK = "spark"

    @classmethod
    def parse(cls, value: str | Engine | None) -> Engine:
        """`value`, else `$STRATA_ENGINE`, else auto; anything else is a user error."""
        if isinstance(value, Engine):
            return value
        text = value if value is not None else os.environ.get("STRATA_ENGINE") or cls.AUTO.value
        try:
            return cls(text.strip().lower())
        except ValueError:
            where = "STRATA_ENGINE" if value is None else "engine"
            raise UserError(f"{where} must be auto, local or spark, got {text!r}",
                            hint="--engine auto picks per question; local forces DuckDB, spark forces Spark") from None


def count_setting(env: str, default: int, what: str, minimum: int | None = None) -> int:
    """A count from the environment variable `env` (underscores allowed), else `default`; a
    value that is not a number, or below `minimum`, is a UserError naming the variable."""
    text = os.environ.get(env, "").strip()
    if not text:
        return default
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = None
    if value is None or (minimum is not None and value < minimum):
        raise UserError(f"{env} must be a number of {what}, got {text!r}",
                        hint=f"for example {env}={default}") from None
    return value


def local_rows_setting(value: int | None = None) -> int:
    """The `auto` threshold: `value`, else `$STRATA_LOCAL_ROWS`, else DEFAULT_LOCAL_ROWS."""
    if value is not None:
        return int(value)
    return count_setting("STRATA_LOCAL_ROWS", DEFAULT_LOCAL_ROWS, "rows")


def local_triples_setting() -> int:
    """`$STRATA_LOCAL_TRIPLES`, else DEFAULT_LOCAL_TRIPLES."""
    return count_setting(LOCAL_TRIPLES_ENV, DEFAULT_LOCAL_TRIPLES, "triples")


# Peak memory of a triples file's ingest on the driver per triple (scale-1 CSProv trace:
# 5.9M triples, 2.1 GB for the whole process; benchmarks/RESULTS.md).
INGEST_BYTES_PER_TRIPLE = 400


def available_bytes() -> int | None:
    """Memory this machine can still give (MemAvailable of /proc/meminfo), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@dataclass(frozen=True, slots=True)
class Choice:
    """The engine that runs a question, and why (EXPLAIN prints both)."""

    engine: Engine
    reason: str

    def line(self) -> str:
        return f"engine: {self.engine.value} ({self.reason})"


def within_memory(need: int, what: str) -> Choice | None:
    """Spark, and why, when `what` needs more memory (`need` bytes) than the machine has
    available; None when it fits or the available memory is unknown."""
    free = available_bytes()
    if free is not None and need > free:
        return Choice(Engine.SPARK, f"{what} needs about {need / 2**30:.1f} GB, {free / 2**30:.1f} GB available")
    return None


def choose(setting: Engine, *, on_this_machine: bool, cluster: str | None, reads: int | None,
           local_rows: int) -> Choice:
    """The engine for one question.

    on_this_machine: the store is a folder on this machine; cluster: why Spark was asked for
    (e.g. "--master spark://h:7077"), or None; reads: rows the question reads after pruning
    (None when unknown, which counts as small: the local engine reads only what it needs).
    """
    if setting is Engine.LOCAL:
        if not on_this_machine:
            raise UserError("the local engine reads stores on this machine's file system only",
                            hint="use --engine spark (or auto) for a store on a Hadoop URI")
        return Choice(Engine.LOCAL, "forced by --engine local")
    if setting is Engine.SPARK:
        return Choice(Engine.SPARK, "forced by --engine spark")
    if not on_this_machine:
        return Choice(Engine.SPARK, "the store is not on this machine's file system")
    if cluster:
        return Choice(Engine.SPARK, f"a cluster was asked for ({cluster})")
    if reads is not None and reads > local_rows:
        return Choice(Engine.SPARK, f"reads {reads:,} rows, more than the local limit of {local_rows:,}")
    size = "" if reads is None else f"reads {reads:,} rows, "
    return Choice(Engine.LOCAL, f"{size}within the local limit of {local_rows:,} rows")


_DATABASE: Any = None  # the process's in-memory DuckDB database (see duckdb_connect)
_DATABASE_PID = 0
_DATABASE_LOCK = threading.Lock()


def duckdb_connect():
    """A DuckDB connection for the local engine, with no progress bar of DuckDB's own (it would
    draw over the CLI's progress and output on a terminal).

    Every connection is a cursor of one in-memory database per process, using every core:
    opening a database costs about 20 ms, a cursor well under 1 ms. Cursors are independent
    connections (safe across threads); what a caller keeps in it must be connection-local —
    temporary tables (`temp_table`) and registered relations — and goes when the cursor does.
    A forked child opens a database of its own."""
    global _DATABASE, _DATABASE_PID
    import duckdb  # deferred: only this path needs duckdb

    with _DATABASE_LOCK:
        if _DATABASE is None or _DATABASE_PID != os.getpid():
            _DATABASE = duckdb.connect(config={"threads": max(1, os.cpu_count() or 1)})
            _DATABASE_PID = os.getpid()
        con = _DATABASE.cursor()
    con.execute("SET enable_progress_bar = false")
    return con


def temp_table(con, name: str, rel) -> None:
    """Materialize DuckDB relation `rel` as temporary table `name` of connection `con` (seen by
    that connection only, dropped with it: the database is shared, see `duckdb_connect`)."""
    source = f"__source_{name}"
    con.register(source, rel)
    try:
        con.execute(f'CREATE TEMP TABLE "{name}" AS FROM "{source}"')
    finally:
        con.unregister(source)


class StoreEngine(abc.ABC):
    """What an engine does for the store: one implementation per engine, each in the folder
    named after it (store/duckdb/engine.py, store/spark/engine.py), picked by `store.wings`
    from the one `Choice` made per question; nothing below asks again which engine runs.

    The query language and the tracing have wings of their own (iql/duckdb, iql/spark,
    capture/tracing/duckdb, capture/tracing/spark), picked from the same choice."""

    kind: Engine

    @abc.abstractmethod
    def ingest(self, stx, item) -> Any:
        """Validate and stage one planned source (`store.ingest.Planned`) in transaction `stx`;
        its `IngestCounts`."""

    @abc.abstractmethod
    def counts(self, st) -> tuple[list[tuple], list[tuple], int]:
        """(kind, type, implicit, n) per vertex type, (granularity, n) per granularity, and the
        number of edges, of store `st` (what `strata info` shows)."""

    @abc.abstractmethod
    def build_index(self, st, params, message: str, extra_meta: dict) -> dict:
        """Build the whole component index and commit it; its manifest meta."""

    @abc.abstractmethod
    def update_index(self, st, params, meta: dict, extra_meta: dict) -> dict:
        """Bring the index `meta` describes up to the committed edges; the new meta."""

    @abc.abstractmethod
    def refresh_scopes(self, st, meta: dict) -> dict:
        """Recompute the influence scopes alone (the edges did not change); the new meta."""
