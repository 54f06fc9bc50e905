"""Grouping + aggregation/nesting, distinct and dropDuplicates (Pebble: <ids_i, id_o>).

Each output row carries a hidden ``collect_list(struct(<input hidden columns>))`` of every input
item of its group, in the order the aggregation saw them (their 1-based position is the ``pos``
of the association, equal to the position of the item's value in every ``collect_list`` output
of the same call when the collected values are not null). Derived ids (flatten, join, union:
capture/derived.py) are left out of the struct; reading a run computes them again. The output id
is ``xxhash64(oid, sorted input ids)``, the input ids computed from the collected fields when
they are derived: deterministic and the same on every re-run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from capture.derived import resolver, top
from capture.errors import UnsupportedOperation
from capture.model import InRef, Manipulation, OperatorProv, OpInput, OpType, Slot
from capture.plan import (
    accesses,
    analyzed,
    attr_map,
    cls,
    has_udf,
    is_hidden,
    nodes_above,
    out_pairs,
    seq,
)

if TYPE_CHECKING:
    from capture.tracked import TrackedDataFrame


class TrackedGroupedData:
    """``tracked.groupBy(...)``: supports ``agg`` with Column expressions and the shortcuts."""

    def __init__(self, tdf: TrackedDataFrame, cols: tuple):
        self._tdf = tdf
        self._cols = cols

    def agg(self, *exprs) -> TrackedDataFrame:
        if len(exprs) == 1 and isinstance(exprs[0], dict):
            raise UnsupportedOperation.named("agg(dict)", "pass Column expressions, e.g. F.sum('x')")
        if not exprs or not all(isinstance(e, Column) for e in exprs):
            raise UnsupportedOperation.named("agg", "expects one or more Column expressions")
        return aggregate(self._tdf, "groupBy.agg", self._cols, list(exprs))

    def count(self) -> TrackedDataFrame:
        return aggregate(self._tdf, "groupBy.count", self._cols, [F.count(F.lit(1)).alias("count")])

    def _simple(self, fn, name: str, cols) -> TrackedDataFrame:
        return aggregate(self._tdf, f"groupBy.{name}", self._cols, [fn(c).alias(f"{name}({c})") for c in cols])

    def sum(self, *cols: str) -> TrackedDataFrame:
        return self._simple(F.sum, "sum", cols)

    def avg(self, *cols: str) -> TrackedDataFrame:
        return self._simple(F.avg, "avg", cols)

    mean = avg

    def min(self, *cols: str) -> TrackedDataFrame:
        return self._simple(F.min, "min", cols)

    def max(self, *cols: str) -> TrackedDataFrame:
        return self._simple(F.max, "max", cols)

    def __getattr__(self, name: str):
        raise UnsupportedOperation.named(f"groupBy().{name}")


def _collected(tdf: TrackedDataFrame, oid: int) -> tuple[Column, str, str]:
    """The members' stored hidden columns, collected (derived ids are not: capture/derived.py)."""
    agg, idk = f"__strata_agg_{oid}", f"__strata_id_{oid}"
    derived = top(tdf._derived)
    kept = [F.col(h) for h in tdf.hidden() if h not in derived]
    return F.collect_list(F.struct(*kept)).alias(agg), agg, idk


def _finish(tdf, new, op, agg: str, idk: str) -> TrackedDataFrame:
    derived = top(tdf._derived)
    if tdf._cur in derived:  # the members' ids are derived from their collected coordinates
        members = F.transform(F.col(agg), lambda m: resolver(derived, m.getField)(tdf._cur))
    else:
        members = F.col(agg).getField(tdf._cur)
    new = new.withColumn(idk, F.xxhash64(F.lit(op.oid), F.array_sort(members)))
    slots = (*(s.nested_in(agg) for s in tdf._slots), Slot(op.oid, idk, InRef(tdf._cur), array=agg))
    return tdf._next(new, op, cur=idk, slots=slots, derived=tuple(d.nested_in(agg) for d in tdf._derived))


def aggregate(tdf: TrackedDataFrame, method: str, keys: tuple, exprs: list[Column]) -> TrackedDataFrame:
    oid = tdf.tracker._new_oid()
    collected, agg, idk = _collected(tdf, oid)
    new = tdf.annotated.groupBy(*keys).agg(*exprs, collected)
    in_plan = analyzed(tdf.annotated)
    anode = next((n for n in nodes_above(analyzed(new), [in_plan]) if cls(n) == "Aggregate"), None)
    if anode is None:
        raise UnsupportedOperation.named(method, "Spark did not plan an aggregation")
    attrs = attr_map([in_plan])
    grouping = seq(anode.groupingExpressions())
    outputs = [e for e in seq(anode.aggregateExpressions()) if not is_hidden(e.name())]
    if any(has_udf(e) for e in grouping + outputs):
        op = OperatorProv(oid, OpType.AGGREGATION, method, (OpInput(tdf.oid, None),), None,
                          detail=str(anode.simpleString(25)))
        return _finish(tdf, new, op, agg, idk)
    accessed = tuple(a.path for a in accesses(grouping + outputs, attrs))
    manipulated = tuple(dict.fromkeys(m for e in outputs for m in out_pairs(e, e.name(), attrs, {})))
    op = OperatorProv(oid, OpType.AGGREGATION, method, (OpInput(tdf.oid, accessed),), manipulated,
                      detail=str(anode.simpleString(25)))
    return _finish(tdf, new, op, agg, idk)


def deduplicate(tdf: TrackedDataFrame, method: str, subset: list[str] | None) -> TrackedDataFrame:
    """distinct / dropDuplicates as a grouping on the (subset of) columns; every duplicate of a
    kept row is associated with it. Non-key columns take ``first`` like Spark's own rewrite."""
    visible = tdf.visible()
    keys = list(subset) if subset else visible
    for k in keys:
        if k not in visible:
            raise UnsupportedOperation.named(method, f"unknown column {k!r}; columns: {', '.join(visible)}")
    oid = tdf.tracker._new_oid()
    collected, agg, idk = _collected(tdf, oid)
    df = tdf.annotated
    others = [F.first(df[c]).alias(c) for c in visible if c not in keys]
    new = df.groupBy(*[df[k] for k in keys]).agg(*others, collected).select(*visible, agg)
    accessed = tuple(keys)
    manipulated = tuple(Manipulation(0, c, c) for c in visible)
    op = OperatorProv(oid, OpType.AGGREGATION, method, (OpInput(tdf.oid, accessed),), manipulated,
                      detail=f"{method}({', '.join(keys)})")
    return _finish(tdf, new, op, agg, idk)
