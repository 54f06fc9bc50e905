"""The Spark wing of IQL: logical plans run as Spark DataFrames (`executor.execute`).

iql/placement.py sends a statement here when store/engine.py's rule picks Spark for it; this
wing never asks again. It imports pyspark; the DuckDB wing (iql/duckdb/) never imports it.
"""
