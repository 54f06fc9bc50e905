"""Tracing: tree patterns over a captured run's result items, backtracing the matched items to
the input items and attributes that made or influenced them, and the usage and audit reports.

The only module other packages import (never the modules below it)::

    from capture.tracing import parse_pattern, trace
    bt = trace(store, None, parse_pattern("//id_str = 'lp'"), limit=100)
    bt.rows()   # (dataset, item_id, path, role, accessed_by, manipulated_by) per tree node

* ``pattern.py``: the tree-pattern language (:func:`parse_pattern`, :class:`Pattern`,
  :class:`PatternError`, :class:`Embedded`), parsed from grammar/pattern.lark, and its reference matcher;
* ``backtrace.py``: Pebble's Algorithms 1-4 (:class:`Backtrace`) over the matched rows;
* ``entry.py``: the entry points :func:`trace` and :func:`describe` (``engine=``: which wing;
  None: :func:`choose` decides once, by the store's rule and whether the driver can read the run);
* ``spark/`` and ``duckdb/``: the two wings, one per engine -- the match (compiled to Spark Column
  expressions, one job; or on the driver with pyarrow and the reference matcher) and the reading
  of traced inputs -- each behind the same few functions, independent of each other;
* ``locate.py`` (with ``places.py``): where traced input items live and their values read back
  (:func:`trace_table`: TRACE's rows with ``source`` and ``value``, column-wise as Arrow;
  :func:`trace_rows`, :func:`trace_table_rows`: the same as tuples), through either wing;
* ``reports.py``: the data-usage heatmap and the audit report over backtraces;
* ``checking.py``: :func:`check`, a trace checked by replaying the run's program on each traced
  item's inputs (the replay itself, Spark, is capture/auto/replay.py, imported when it runs).

Item ids are named as in the store (:func:`item_element_id`, :func:`parse_item_element_id`).
"""

from capture.ids import dataset_element_id, item_element_id, item_hex, parse_item_element_id
from capture.tracing.backtrace import Backtrace, TracedItem, TracedNode
from capture.tracing.checking import Check, ItemCheck, check
from capture.tracing.entry import choose, describe, trace, trace_reads
from capture.tracing.locate import TRACE_SCHEMA, trace_rows, trace_table, trace_table_rows
from capture.tracing.pattern import Embedded, Pattern, PatternError, parse_pattern
from capture.tracing.reports import HeatCell, Heatmap, audit, heatmap, heatmap_html, heatmap_png

__all__ = [
    "Backtrace",
    "TRACE_SCHEMA",
    "Check",
    "Embedded",
    "HeatCell",
    "ItemCheck",
    "Heatmap",
    "Pattern",
    "PatternError",
    "TracedItem",
    "TracedNode",
    "audit",
    "check",
    "choose",
    "dataset_element_id",
    "describe",
    "heatmap",
    "heatmap_html",
    "heatmap_png",
    "item_element_id",
    "item_hex",
    "parse_item_element_id",
    "parse_pattern",
    "trace",
    "trace_reads",
    "trace_rows",
    "trace_table",
    "trace_table_rows",
]
