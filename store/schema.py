"""Table names, column names and Spark schemas of the store, defined once."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

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

_S = StringType()

SCHEMAS: dict[str, StructType] = {
    ELEMENTS: StructType(
        [StructField(ID, _S, False), StructField(GRANULARITY, _S, False), StructField(KIND, _S, False)]
    ),
    PARENTS: StructType([StructField(ID, _S, False), StructField(PARENT, _S, False)]),
    ANCESTORS: StructType(
        [
            StructField(ID, _S, False),
            StructField(ANCESTOR, _S, False),
            StructField(DEPTH, IntegerType(), False),
        ]
    ),
    VERTICES: StructType(
        [
            StructField(ID, _S, False),
            StructField(KIND, _S, False),
            StructField(TYPE, _S, False),
            StructField(N_CE, IntegerType(), False),
            StructField(CE_SIZE, IntegerType(), False),
            StructField(ATTRS, MapType(_S, _S, True), True),
            StructField(IMPLICIT, BooleanType(), False),
        ]
    ),
    COMPLEX: StructType(
        [
            StructField(VERTEX, _S, False),
            StructField(CE, IntegerType(), False),
            StructField(GRANULARITY, _S, False),
            StructField(ELEM, _S, False),
        ]
    ),
    EDGES: StructType(
        [StructField(SRC, _S, False), StructField(DST, _S, False), StructField(PROCESS, _S, False)]
    ),
}

CORE_TABLES = (ELEMENTS, PARENTS, ANCESTORS, VERTICES, COMPLEX, EDGES)

__all__ = [name for name in dir() if name.isupper()] + [
    "ArrayType",
    "LongType",
]
