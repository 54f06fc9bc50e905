"""The door to the engines: the `StoreEngine` of a chosen engine (store/engine.py decides which,
once per question). Each wing is imported only when it is chosen, so a question the DuckDB
engine answers never loads pyspark."""

from __future__ import annotations

from store.engine import Engine, StoreEngine


def engine_for(kind: Engine) -> StoreEngine:
    """The implementation of engine `kind` (LOCAL: DuckDB in this process; SPARK: Spark)."""
    if kind is Engine.LOCAL:
        from store.duckdb.engine import DuckDBEngine  # deferred: the wing loads when chosen

        return DuckDBEngine()
    if kind is Engine.SPARK:
        from store.spark.engine import SparkEngine  # deferred: pyspark loads when Spark is chosen

        return SparkEngine()
    raise ValueError(f"no engine implements {kind!r}: choose LOCAL or SPARK first (store.engine.choose)")
