"""Storing a run: ``tracker.write`` commits the result's provenance in one store commit.

* ``commit.py``: the commit (the user's output and the store's copy, one Spark job where it can);
* ``tee.py``: the writers that make both copies in one pass (split and tee);
* ``tables.py``: the capture tables' names and schemas;
* ``runs.py``: committed runs read back without pyspark (a run's operators and run row:
  :class:`RunHead`, :func:`read_head`; a local store's rows with pyarrow);
* ``stored.py``: a committed run's result tables as Spark DataFrames (:class:`StoredRun`,
  :func:`load_run`);
* ``materialize.py``: Pebble's id associations P from a result's hidden id columns (in Spark;
  ``associations.py``: the same for rows on the driver, no pyspark);
* ``to_model.py``: a run mapped into the multi-granularity model (a bundle);
* ``catalog_tables.py``: the catalog tables a run read or wrote, asked of Spark's catalog at the
  commit (table ``capture_tables``);
* ``to_openlineage.py``: a run as OpenLineage RunEvents (``ol_names.py``: OpenLineage's names
  for its datasets, as OpenLineage's Spark integration gives them).
"""

__all__ = ["RunHead", "StoredRun", "load_run", "read_head", "run_name"]


def __getattr__(name: str):
    """The package's names on first use, so that importing one of its modules loads only what
    that module needs: ``StoredRun`` and ``load_run`` (capture/storing/stored.py) import pyspark,
    which the DuckDB engine's trace does without; ``RunHead``, ``read_head`` and ``run_name``
    (runs.py) import pyarrow.dataset, which pulls in pandas (half a second), and a Spark task's
    Python worker that runs the tee's writer (tee.py) needs neither."""
    if name in ("StoredRun", "load_run"):
        from capture.storing import stored as module  # deferred: it loads py4j, pyspark
    elif name in ("RunHead", "read_head", "run_name"):
        from capture.storing import runs as module  # deferred: pyarrow.dataset and pandas
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
