"""Pebble-style structural provenance capture for PySpark DataFrame pipelines.

    from capture import Tracker
    tracker = Tracker(spark, store)
    tweets = tracker.read.json("tweets.json")
    result = tweets.filter(...).select(...)
    tracker.write(result, "out.parquet")     # result + provenance, one store commit

See docs/capture.md for the supported operators and the provenance tables.
"""

from capture.errors import CaptureError, UnsupportedOperation
from capture.model import Access, Manipulation, OperatorProv, OpInput, OpType
from capture.tracked import TrackedDataFrame
from capture.tracker import Captured, Tracker

__all__ = [
    "Access",
    "CaptureError",
    "Captured",
    "Manipulation",
    "OpInput",
    "OpType",
    "OperatorProv",
    "TrackedDataFrame",
    "Tracker",
    "UnsupportedOperation",
]
