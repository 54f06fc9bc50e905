"""Tracing: tree patterns over a captured run's result items, backtracing the matched items to
the input items and attributes that made or influenced them, and the usage and audit reports.

The only module other packages import (never the modules below it)::

    from capture.tracing import parse_pattern, trace
    bt = trace(store, None, parse_pattern("//id_str = 'lp'"), limit=100)
    bt.rows()   # (dataset, item_id, path, role, accessed_by, manipulated_by) per tree node

* ``pattern.py``: the tree-pattern language (:func:`parse_pattern`, :class:`Pattern`,
  :class:`PatternError`) and its reference matcher;
* ``compile.py``: patterns compiled to Spark Column expressions over a run's stored result;
* ``backtrace.py``: Pebble's Algorithms 1-4 (:class:`Backtrace`) and the entry points
  :func:`trace` and :func:`describe`;
* ``locate.py``: where traced input items live and their values read back
  (:func:`trace_rows`: TRACE's rows with ``source`` and ``value``);
* ``reports.py``: the data-usage heatmap and the audit report over backtraces.

Item ids are named as in the store (:func:`item_element_id`, :func:`parse_item_element_id`).
"""

from capture.ids import dataset_element_id, item_element_id, item_hex, parse_item_element_id
from capture.tracing.backtrace import Backtrace, TracedItem, TracedNode, describe, trace, trace_reads
from capture.tracing.locate import trace_rows
from capture.tracing.pattern import Pattern, PatternError, parse_pattern
from capture.tracing.reports import HeatCell, Heatmap, audit, heatmap, heatmap_html, heatmap_png

__all__ = [
    "Backtrace",
    "HeatCell",
    "Heatmap",
    "Pattern",
    "PatternError",
    "TracedItem",
    "TracedNode",
    "audit",
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
]
