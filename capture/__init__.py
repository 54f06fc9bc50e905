"""Pebble-style structural provenance capture for PySpark DataFrame pipelines.

    from capture import Tracker
    tracker = Tracker(spark, store)
    tweets = tracker.read.json("tweets.json")
    result = tweets.filter(...).select(...)
    tracker.write(result, "out.parquet")     # result + provenance, one store commit

or, for unmodified code (docs/capture.md; ``strata capture -- job.py`` does this for a script)::

    with capture.capturing(spark, store, pipeline="etl"):
        df.write.parquet("out.parquet")      # the plan is translated and captured at the write

Three jobs, one subpackage each:

* ``capture.tracking``: tracking a pipeline (Tracker, tracked DataFrames, their operators, the
  paths read off Spark's plans, the ids of source items);
* ``capture.storing``: storing a run (one store commit per written result, the capture tables,
  the run's multi-granularity bundle, reading committed runs back);
* ``capture.auto``: zero-change capture (the analyzed plan of a written DataFrame translated
  into tracked operators, and the hooks on the writers and ``spark.sql``);
* ``capture.tracing``: tracing (tree patterns, backtracing, the usage and audit reports); other
  packages import it as ``capture.tracing`` only.

Shared by the three: ``operators.py`` (operator provenance, plain data), ``ids.py`` (hidden id
columns, element ids, derived ids; their Spark Column forms in ``id_columns.py``),
``locator.py`` (where a source's items live), ``errors.py`` and ``jvm/`` (Strata's JVM classes:
the JSON offset reader tracking uses and the split Parquet writer storing uses).

See docs/capture.md for the supported operators and the provenance tables.

Importing ``capture`` (or ``capture.tracing``, which imports this package first) loads no
pyspark: the names of tracking and zero-change capture are imported on first use.
"""

from capture.errors import CaptureError, UnsupportedOperation
from capture.operators import Access, Manipulation, OperatorProv, OpInput, OpType


def __getattr__(name: str):
    """Tracking's and zero-change capture's names, imported when first used: deferred, because
    their modules import pyspark and a trace on the DuckDB engine (capture.tracing) must not."""
    if name in ("Capture", "capturing", "run_script"):
        from capture.auto import hooks as module  # deferred: it loads numpy, py4j, pyarrow, pyspark
    elif name == "TrackedDataFrame":
        from capture.tracking import frame as module  # deferred: it loads numpy, py4j, pyarrow, pyspark
    elif name in ("Captured", "Tracker"):
        from capture.tracking import tracker as module  # deferred: it loads numpy, py4j, pyarrow, pyspark
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


__all__ = [
    "Access",
    "Capture",
    "CaptureError",
    "Captured",
    "Manipulation",
    "OpInput",
    "OpType",
    "OperatorProv",
    "TrackedDataFrame",
    "Tracker",
    "UnsupportedOperation",
    "capturing",
    "run_script",
]
