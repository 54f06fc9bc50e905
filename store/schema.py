"""Table names, column names and the schemas of the store's tables, defined once.

The schemas are Arrow schemas: engine-neutral, so the DuckDB engine reads and writes them with
pyarrow alone. A table's schema is stored in its manifest entry as Spark's StructType JSON
(the format the store has always kept, and what Spark reads back); `schema_json` turns an Arrow
schema into that text without importing pyspark, and the Spark engine derives its StructTypes
from it (`store.spark.schema`).
"""

from __future__ import annotations

import json

import pyarrow as pa

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

_S = pa.string()


def _f(name: str, type_: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable)


SCHEMAS: dict[str, pa.Schema] = {
    ELEMENTS: pa.schema([_f(ID, _S), _f(GRANULARITY, _S), _f(KIND, _S)]),
    PARENTS: pa.schema([_f(ID, _S), _f(PARENT, _S)]),
    ANCESTORS: pa.schema([_f(ID, _S), _f(ANCESTOR, _S), _f(DEPTH, pa.int32())]),
    VERTICES: pa.schema([
        _f(ID, _S), _f(KIND, _S), _f(TYPE, _S), _f(N_CE, pa.int32()), _f(CE_SIZE, pa.int32()),
        _f(ATTRS, pa.map_(_S, _S), True), _f(IMPLICIT, pa.bool_()),
    ]),
    COMPLEX: pa.schema([_f(VERTEX, _S), _f(CE, pa.int32()), _f(GRANULARITY, _S), _f(ELEM, _S)]),
    EDGES: pa.schema([_f(SRC, _S), _f(DST, _S), _f(PROCESS, _S)]),
}

CORE_TABLES = (ELEMENTS, PARENTS, ANCESTORS, VERTICES, COMPLEX, EDGES)

# Arrow types and the names Spark's JSON gives them.
_SPARK_NAMES = {
    pa.string(): "string", pa.large_string(): "string", pa.int8(): "byte", pa.int16(): "short",
    pa.int32(): "integer", pa.int64(): "long", pa.float32(): "float", pa.float64(): "double",
    pa.bool_(): "boolean", pa.binary(): "binary", pa.date32(): "date",
}


def _spark_type(t: pa.DataType):
    """An Arrow type in Spark's JSON form (what ``DataType.jsonValue()`` gives)."""
    if t in _SPARK_NAMES:
        return _SPARK_NAMES[t]
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


def spark_json(schema: pa.Schema) -> dict:
    """``schema`` as Spark's StructType JSON value (a dict), without pyspark."""
    return _struct_json(schema)


def schema_json(schema: pa.Schema) -> str:
    """``schema`` as the text a manifest entry stores (Spark's ``StructType.json()``)."""
    return json.dumps(spark_json(schema), separators=(",", ":"), sort_keys=True)


__all__ = [name for name in dir() if name.isupper()] + ["schema_json", "spark_json"]
