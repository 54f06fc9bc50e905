"""Tracking a pipeline: tracked DataFrames and the operator provenance read off Spark's plans.

* ``tracker.py``: :class:`Tracker` (reads or wraps inputs, writes captured runs) and
  :class:`Captured` (the provenance of one tracked DataFrame before it is committed);
* ``frame.py``: :class:`TrackedDataFrame`, whose methods record one operator each;
* ``project.py`` (projections, flatten, mapInPandas, mapInArrow), ``binary.py`` (joins, unions),
  ``grouping.py`` (aggregation, distinct, applyInPandas): the operators;
* ``paths.py``: accessed and manipulated paths read off Catalyst's analyzed plans;
* ``sources.py``: the ids of source items.
"""

from capture.tracking.frame import TrackedDataFrame
from capture.tracking.tracker import Captured, Tracker

__all__ = ["Captured", "TrackedDataFrame", "Tracker"]
