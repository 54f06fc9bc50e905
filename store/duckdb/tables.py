"""DuckDB relations over the Parquet files of one committed version of a local store.

A `LocalTables` is bound to one manifest: it reads exactly the segments that manifest lists,
so a reader keeps its snapshot while writers commit (as the Spark path does). Values never reach
DuckDB as SQL text: tables are opened with `read_parquet` on file lists, and callers build
queries with DuckDB's relational API and expressions.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from store import schema as S
from store.engine import duckdb_connect, temp_table
from store.errors import StoreError
from store.segments import parquet_files

_PRIMITIVES = {
    "string": "string", "long": "int64", "integer": "int32", "short": "int16", "byte": "int8",
    "double": "float64", "float": "float32", "boolean": "bool_", "binary": "binary",
    "date": "date32", "timestamp": "timestamp_us_utc", "timestamp_ntz": "timestamp_us",
}


def arrow_type(spark_type: Any):
    """The pyarrow type of a Spark type in its JSON form (as manifests store schemas)."""
    import pyarrow as pa  # deferred: only this path needs pyarrow

    if isinstance(spark_type, str):
        name = _PRIMITIVES.get(spark_type)
        if name == "timestamp_us_utc":
            return pa.timestamp("us", tz="UTC")
        if name == "timestamp_us":
            return pa.timestamp("us")
        if name is None:
            if spark_type.startswith("decimal("):
                p, s = spark_type[len("decimal("):-1].split(",")
                return pa.decimal128(int(p), int(s))
            raise StoreError(f"a table has a column of Spark type {spark_type!r} the local engine cannot read",
                             hint="use --engine spark")
        return getattr(pa, name)()
    kind = spark_type.get("type")
    if kind == "array":
        return pa.list_(arrow_type(spark_type["elementType"]))
    if kind == "map":
        return pa.map_(arrow_type(spark_type["keyType"]), arrow_type(spark_type["valueType"]))
    if kind == "struct":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"])) for f in spark_type["fields"]])
    raise StoreError(f"a table has a column of Spark type {spark_type!r} the local engine cannot read",
                     hint="use --engine spark")


def arrow_schema(schema_json: str | dict):
    """The pyarrow schema of a Spark StructType in its JSON form."""
    import pyarrow as pa  # deferred: only this path needs pyarrow

    d = json.loads(schema_json) if isinstance(schema_json, str) else schema_json
    return pa.schema([pa.field(f["name"], arrow_type(f["type"])) for f in d["fields"]])


# Tables of at most this many rows are held in memory once read (see `LocalTables.relation`).
MEMORY_ROWS = 100_000


class LocalTables:
    """The committed tables of one version of a local store, as DuckDB relations.

    One DuckDB connection per instance (`duckdb_connect`); small tables are held in memory after their
    first read, larger ones are read from their files by each query (see `relation`).
    """

    def __init__(self, st) -> None:
        if not st.storage.on_this_machine:
            raise StoreError(f"store {st.root} is not a folder on this machine",
                             hint="the local engine reads local stores only; use --engine spark")

        self.store = st
        self.manifest = st.manifest
        self.version = self.manifest.version
        self.con = duckdb_connect()
        self._lock = threading.Lock()
        self._files: dict[str, list[str]] = {}
        self._rows: dict[str, int] = {}
        self._memory: dict[str, str | None] = {}  # table -> its in-memory table's name (None: too large)
        self.scans: dict[Any, Any] = {}  # the local executor's scans of held tables, by plan node
        self.answered = 0  # IQL questions answered on this version in this process

    def files(self, name: str) -> list[str]:
        """The Parquet files of table `name` in this version ([] when it has no rows)."""
        hit = self._files.get(name)
        if hit is None:
            entry = self.manifest.tables.get(name)
            hit = []
            for seg in entry.segments if entry is not None else ():
                hit += parquet_files(self.store.storage.file_path(seg))
            self._files[name] = hit
        return hit

    def schema_json(self, name: str) -> str:
        entry = self.manifest.tables.get(name)
        if entry is not None:
            return entry.schema
        if name in S.SCHEMAS:
            return S.schema_json(S.SCHEMAS[name])
        raise StoreError(f"store {self.store.root} has no table '{name}'",
                         hint="run `strata index` if this is an index table")

    def rows(self, name: str) -> int:
        """Rows in table `name`, from the Parquet footers (no data read)."""
        hit = self._rows.get(name)
        if hit is None:
            files = self.files(name)
            hit = self._rows[name] = int(self.con.execute(
                "SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata(?)", [files]).fetchall()[0][0]) \
                if files else 0
        return hit

    def relation(self, name: str):
        """Table `name` as a DuckDB relation with the columns (and types) of its stored schema.

        A table of at most `MEMORY_ROWS` rows is read once into a table of this connection's
        memory and scanned from there (a small store's every question then reads no file); a
        larger one is scanned from its Parquet files each time, with DuckDB's projection and
        filter pushdown."""
        with self._lock:
            if name not in self._memory:
                held = None
                if self.rows(name) <= MEMORY_ROWS:
                    held = f"held_{len(self._memory)}"
                    temp_table(self.con, held, self._parquet(name))
                self._memory[name] = held
        held = self._memory[name]
        return self.con.table(held) if held is not None else self._parquet(name)

    def _parquet(self, name: str):
        import duckdb  # deferred: only this path needs duckdb

        fields = json.loads(self.schema_json(name))["fields"]
        files = self.files(name)
        if not files:  # no rows: an empty relation of the stored schema
            empty = self.con.sql("SELECT NULL AS _none WHERE false")
            return empty.project(*[duckdb.ConstantExpression(None).cast(duckdb.sqltype(duck_type(f["type"])))
                                   .alias(f["name"]) for f in fields])
        entry = self.manifest.tables.get(name)
        partitioned = bool(entry and entry.partition_by)
        rel = self.con.read_parquet(files, hive_partitioning=partitioned)
        if partitioned:
            cols = set(rel.columns)
            rel = rel.project(*[duckdb.ColumnExpression(f["name"]).cast(duckdb.sqltype(duck_type(f["type"])))
                                .alias(f["name"]) if f["name"] in entry.partition_by
                                else duckdb.ColumnExpression(f["name"])
                                for f in fields if f["name"] in cols])
        return rel

    def held(self, name: str) -> bool:
        """True when table `name` is (or will be, once read) held in memory."""
        if name in self._memory:
            return self._memory[name] is not None
        return self.rows(name) <= MEMORY_ROWS

    def arrow(self, name: str):
        """Table `name` read whole into a pyarrow Table."""
        return self.relation(name).to_arrow_table()


_DUCK = {"string": "VARCHAR", "integer": "INTEGER", "long": "BIGINT", "short": "SMALLINT", "byte": "TINYINT",
         "boolean": "BOOLEAN", "double": "DOUBLE", "float": "FLOAT", "binary": "BLOB", "date": "DATE",
         "timestamp": "TIMESTAMPTZ", "timestamp_ntz": "TIMESTAMP"}


def duck_type(spark_type: Any) -> str:
    """The DuckDB type of a Spark type in its JSON form (as manifests store schemas)."""
    if isinstance(spark_type, str):
        if spark_type in _DUCK:
            return _DUCK[spark_type]
        if spark_type.startswith("decimal("):
            return spark_type.upper()
    elif spark_type.get("type") == "array":
        return duck_type(spark_type["elementType"]) + "[]"
    elif spark_type.get("type") == "map":
        return f"MAP({duck_type(spark_type['keyType'])}, {duck_type(spark_type['valueType'])})"
    elif spark_type.get("type") == "struct":
        return "STRUCT(" + ", ".join('"' + f["name"].replace('"', '""') + '" ' + duck_type(f["type"])
                                     for f in spark_type["fields"]) + ")"
    raise StoreError(f"a table has a column of Spark type {spark_type!r} the local engine cannot read",
                     hint="use --engine spark")
