"""Table names, column names and the schemas of the store's tables, defined once.

The schemas are Arrow schemas: engine-neutral, so the DuckDB engine reads and writes them with
pyarrow alone. A table's schema is stored in its manifest entry as Spark's StructType JSON
(the format the store has always kept, and what Spark reads back); `schema_json` turns an Arrow
schema into that text without importing pyspark, and the Spark engine derives its StructTypes
from it (`store.spark.schema`).
"""

from __future__ import annotations

import json

# Column names (GraphFrames' conventions for id/src/dst).
ID = "id"
SRC = "src"
DST = "dst"
PROCESS = "process"
KIND = "kind"
TYPE = "type"
GRANULARITY = "granularity"
PARENT = "parent"
ANCESTOR = "ancestor"
DEPTH = "depth"
ATTRS = "attrs"
VERTEX = "vertex"
CE = "ce"
ELEM = "elem"
N_CE = "n_ce"
CE_SIZE = "ce_size"
IMPLICIT = "implicit"

DATA = "data"
PROCESS_KIND = "process"
KINDS = (DATA, PROCESS_KIND)

# Table names.
ELEMENTS = "elements"
PARENTS = "parents"
ANCESTORS = "ancestors"
VERTICES = "vertices"
COMPLEX = "complex"
EDGES = "edges"

def _schemas() -> dict:
    import pyarrow as pa  # deferred: an answer read with DuckDB alone needs no pyarrow

    def f(name: str, type_, nullable: bool = False):
        return pa.field(name, type_, nullable)

    text = pa.string()
    return {
        ELEMENTS: pa.schema([f(ID, text), f(GRANULARITY, text), f(KIND, text)]),
        PARENTS: pa.schema([f(ID, text), f(PARENT, text)]),
        ANCESTORS: pa.schema([f(ID, text), f(ANCESTOR, text), f(DEPTH, pa.int32())]),
        VERTICES: pa.schema([
            f(ID, text), f(KIND, text), f(TYPE, text), f(N_CE, pa.int32()), f(CE_SIZE, pa.int32()),
            f(ATTRS, pa.map_(text, text), True), f(IMPLICIT, pa.bool_()),
        ]),
        COMPLEX: pa.schema([f(VERTEX, text), f(CE, pa.int32()), f(GRANULARITY, text), f(ELEM, text)]),
        EDGES: pa.schema([f(SRC, text), f(DST, text), f(PROCESS, text)]),
    }


def __getattr__(name: str):
    """``SCHEMAS``: table name -> Arrow schema of the core tables, built on first use."""
    if name == "SCHEMAS":
        globals()["SCHEMAS"] = found = _schemas()
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CORE_TABLES = (ELEMENTS, PARENTS, ANCESTORS, VERTICES, COMPLEX, EDGES)

# Arrow type ids and the names Spark's JSON gives them.
_SPARK_NAMES = {
    "string": "string", "large_string": "string", "int8": "byte", "int16": "short", "int32": "integer",
    "int64": "long", "float": "float", "double": "double", "bool": "boolean", "binary": "binary",
    "date32[day]": "date",
}


def _spark_type(t):
    """An Arrow type in Spark's JSON form (what ``DataType.jsonValue()`` gives)."""
    import pyarrow as pa  # an Arrow type in hand: pyarrow is loaded already

    if str(t) in _SPARK_NAMES:
        return _SPARK_NAMES[str(t)]
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    if pa.types.is_map(t):
        return {"type": "map", "keyType": _spark_type(t.key_type), "valueType": _spark_type(t.item_type),
                "valueContainsNull": t.item_field.nullable}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "elementType": _spark_type(t.value_type),
                "containsNull": t.value_field.nullable}
    if pa.types.is_struct(t):
        return _struct_json(t)
    raise TypeError(f"no Spark type for Arrow type {t}")


def _struct_json(fields) -> dict:
    return {"type": "struct", "fields": [
        {"name": f.name, "type": _spark_type(f.type), "nullable": f.nullable, "metadata": {}} for f in fields]}


def spark_json(schema) -> dict:
    """``schema`` as Spark's StructType JSON value (a dict), without pyspark."""
    return _struct_json(schema)


def schema_json(schema) -> str:
    """``schema`` as the text a manifest entry stores (Spark's ``StructType.json()``)."""
    return json.dumps(spark_json(schema), separators=(",", ":"), sort_keys=True)


__all__ = [name for name in dir() if name.isupper()] + ["schema_json", "spark_json"]
