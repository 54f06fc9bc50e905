"""Tracing on the driver, for the local engine (``--engine local``: the in-process DuckDB/Arrow
engine): a run's stored result read with pyarrow and matched by the reference matcher over the
items' JSON view (view.py, match.py), and local JSON Lines and Parquet inputs found again with
numpy (locate.py) -- no Spark job, no JVM, and no pyspark, py4j or pandas imported here (the
import contract ``tracing-duckdb-no-spark`` in pyproject.toml). The same three things as the Spark
wing (capture/tracing/spark/), chosen once by capture/tracing/entry.py ``choose``, which asks
:func:`unreadable` first; only capture.tracing's own modules import this."""

from capture.tracing.duckdb.locate import read_input
from capture.tracing.duckdb.match import matched_rows, plan_lines, unreadable

__all__ = ["matched_rows", "plan_lines", "read_input", "unreadable"]
