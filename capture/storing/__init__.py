"""Storing a run: ``tracker.write`` commits the result's provenance in one store commit.

* ``commit.py``: the commit (the user's output and the store's copy, one Spark job where it can);
* ``tee.py``: the writers that make both copies in one pass (split and tee);
* ``tables.py``: the capture tables' names and schemas;
* ``runs.py``: committed runs read back (:class:`StoredRun`, :func:`load_run`; a run's operators
  and run row alone, no Spark: :class:`RunHead`, :func:`read_head`);
* ``materialize.py``: Pebble's id associations P from a result's hidden id columns;
* ``to_model.py``: a run mapped into the multi-granularity model (a bundle).
"""

from capture.storing.runs import RunHead, StoredRun, load_run, read_head, run_name

__all__ = ["RunHead", "StoredRun", "load_run", "read_head", "run_name"]
