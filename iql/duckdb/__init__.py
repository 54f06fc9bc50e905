"""The DuckDB wing of IQL: logical plans run as DuckDB relations in this process
(`executor.execute`).

iql/placement.py sends a statement here when store/engine.py's rule picks the local engine for
it; this wing never asks again. It imports no pyspark, py4j or pandas (an import contract in
pyproject.toml), and not the Spark wing (iql/spark/).
"""
