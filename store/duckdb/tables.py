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

from store.engine import duckdb_connect
from store.errors import StoreError
from store.segments import parquet_files

_PRIMITIVES = {
    "string": "string", "long": "int64", "integer": "int32", "short": "int16", "byte": "int8",
    "double": "float64", "float": "float32", "boolean": "bool_", "binary": "binary",
    "date": "date32", "timestamp": "timestamp_us_utc", "timestamp_ntz": "timestamp_us",
}


def arrow_type(spark_type: Any):
    """The pyarrow type of a Spark type in its JSON form (as manifests store schemas)."""
    import pyarrow as pa

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
    import pyarrow as pa

    d = json.loads(schema_json) if isinstance(schema_json, str) else schema_json
    return pa.schema([pa.field(f["name"], arrow_type(f["type"])) for f in d["fields"]])


# Tables of at most this many rows are held in memory once read (see `LocalTables.relation`).
MEMORY_ROWS = 100_000


class LocalTables:
    """The committed tables of one version of a local store, as DuckDB relations.

    One in-memory DuckDB connection per instance; small tables are held in memory after their
    first read, larger ones are read from their files by each query (see `relation`).
    """

    def __init__(self, st) -> None:
        if not st.storage.is_local:
            raise StoreError(f"store {st.root} is not a folder on this machine",
                             hint="the local engine reads local stores only; use --engine spark")

        self.store = st
        self.manifest = st.manifest
        self.version = self.manifest.version
        self.con = duckdb_connect()
        self._lock = threading.Lock()
        self._files: dict[str, list[str]] = {}
        self._rows: dict[str, int] = {}
        self._memory: dict[str, Any] = {}  # table -> pyarrow Table (None: too large to hold)
        self.scans: dict[Any, Any] = {}  # the local executor's scans of held tables, by plan node

    def files(self, name: str) -> list[str]:
        """The Parquet files of table `name` in this version ([] when it has no rows)."""
        hit = self._files.get(name)
        if hit is None:
            entry = self.manifest.tables.get(name)
            hit = []
            for seg in entry.segments if entry is not None else ():
                hit += parquet_files(self.store.storage.local_path(seg))
            self._files[name] = hit
        return hit

    def schema_json(self, name: str) -> str:
        from store import schema as S

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
            import pyarrow.parquet as pq

            hit = self._rows[name] = sum(pq.ParquetFile(f).metadata.num_rows for f in self.files(name))
        return hit

    def relation(self, name: str):
        """Table `name` as a DuckDB relation with the columns (and types) of its stored schema.

        A table of at most `MEMORY_ROWS` rows is read once into memory and scanned from there
        (a small store's every question then reads no file); a larger one is scanned from its
        Parquet files each time, with DuckDB's projection and filter pushdown."""
        held = self._memory.get(name)
        if held is None and name not in self._memory:
            held = self._memory[name] = self._parquet(name).to_arrow_table() if self.rows(name) <= MEMORY_ROWS \
                else None
        return self.con.from_arrow(held) if held is not None else self._parquet(name)

    def _parquet(self, name: str):
        import duckdb

        schema = arrow_schema(self.schema_json(name))
        files = self.files(name)
        if not files:
            return self.con.from_arrow(schema.empty_table())
        entry = self.manifest.tables.get(name)
        partitioned = bool(entry and entry.partition_by)
        rel = self.con.read_parquet(files, hive_partitioning=partitioned)
        if partitioned:
            cols = set(rel.columns)
            rel = rel.project(*[duckdb.ColumnExpression(f.name).cast(_duck_type(f.type)).alias(f.name)
                                if f.name in entry.partition_by else duckdb.ColumnExpression(f.name)
                                for f in schema if f.name in cols])
        return rel

    def held(self, name: str) -> bool:
        """True when table `name` is (or will be, once read) held in memory."""
        if name in self._memory:
            return self._memory[name] is not None
        return self.rows(name) <= MEMORY_ROWS

    def arrow(self, name: str):
        """Table `name` read whole into a pyarrow Table."""
        held = self._memory.get(name)
        return held if held is not None else self.relation(name).to_arrow_table()


def _duck_type(arrow):
    """The DuckDB type of a primitive pyarrow type (partition columns are primitives)."""
    import duckdb
    import pyarrow as pa

    for check, name in ((pa.types.is_int32, "INTEGER"), (pa.types.is_int64, "BIGINT"),
                        (pa.types.is_string, "VARCHAR"), (pa.types.is_boolean, "BOOLEAN"),
                        (pa.types.is_int16, "SMALLINT"), (pa.types.is_float64, "DOUBLE")):
        if check(arrow):
            return duckdb.sqltype(name)
    raise StoreError(f"partition column of type {arrow} is not supported by the local engine",
                     hint="use --engine spark")
