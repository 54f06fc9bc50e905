"""Tracing on Spark: the pattern compiled to Spark Column expressions (compile.py), matched in ONE
job over a run's stored result (match.py), and the inputs no driver can read found again by one
job (locate.py). The same three things as the DuckDB wing (capture/tracing/duckdb/), chosen once
by capture/tracing/entry.py ``choose``; only capture.tracing's own modules import this."""

from capture.tracing.spark.locate import read_input
from capture.tracing.spark.match import backtrace_run, matched_rows, plan_lines

__all__ = ["backtrace_run", "matched_rows", "plan_lines", "read_input"]
