"""The store's schemas as Spark StructTypes, derived from the engine-neutral Arrow schemas of
store/schema.py (and the stored StructType JSON of store tables)."""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql.types import StructType

from store import schema as S


def spark_schema(schema: pa.Schema | StructType) -> StructType:
    """An Arrow schema as a Spark StructType (a StructType is returned as it is)."""
    if isinstance(schema, StructType):
        return schema
    return StructType.fromJson(S.spark_json(schema))


def stored_schema(schema_json: str) -> StructType:
    """A manifest entry's schema text as a StructType."""
    return StructType.fromJson(json.loads(schema_json))


SCHEMAS: dict[str, StructType] = {name: spark_schema(s) for name, s in S.SCHEMAS.items()}
