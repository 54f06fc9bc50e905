"""Projections (select, withColumn, drop, rename ...), flatten inside them, and mapInPandas.

A projection keeps item identity (output id = input id). When Spark's analyzed plan shows a
``Generate`` (explode, explode_outer, posexplode, inline ...) under the projection, the
operator is a *flatten*: it is rebuilt with ``posexplode`` so that each output item gets a
new id ``xxhash64(oid, input id, position)`` and the association keeps the 1-based position.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.classic.column import Column as ClassicColumn
from pyspark.sql.types import StructType, _parse_datatype_string

from capture.errors import CaptureError, UnsupportedOperation
from capture.ids import FLATTEN, Derived, is_hidden
from capture.operators import POS, InRef, Manipulation, OperatorProv, OpInput, OpType, Slot, column_paths
from capture.tracking.paths import (
    UDF_PATTERNS,
    analyzed,
    as_path,
    attr_map,
    cls,
    column_names,
    contains_any,
    has_udf,
    maximal_paths,
    nodes_above,
    out_pairs,
    project_output,
    seq,
    visible_attrs,
)

if TYPE_CHECKING:
    from capture.tracking.frame import TrackedDataFrame

Build = Callable[[DataFrame, list[str]], DataFrame]
_GENERATORS = {"Explode": "explode", "PosExplode": "posexplode", "Inline": "inline"}


def column_of(spark, expr) -> Column:
    """A pyspark Column wrapping an (already resolved) Catalyst expression."""

    node_cls, col_cls = _column_classes(spark._jvm)
    return ClassicColumn(col_cls(node_cls.apply(expr)))


def visible_columns(df) -> list[Column]:
    """A DataFrame's visible columns by attribute, not by name (a name may repeat: a join's two
    `a`), in order."""
    return [column_of(df.sparkSession, a) for a in visible_attrs(analyzed(df))]


@lru_cache(maxsize=4)
def _column_classes(jvm):
    """The JVM classes :func:`column_of` uses, looked up once per JVM (each lookup of a name in a
    py4j package is a round trip; a tracked select wraps dozens of expressions)."""
    return (getattr(jvm, "org.apache.spark.sql.classic.ExpressionColumnNode"),
            getattr(jvm, "org.apache.spark.sql.Column"))


def apply(tdf: TrackedDataFrame, method: str, build: Build, explicit: bool = False) -> TrackedDataFrame:
    """Apply a projection-like user call; ``explicit``: the user listed the kept columns."""
    hidden = tdf.hidden()
    new = build(tdf.annotated, hidden) if explicit else None
    if new is None or len(set(names := column_names(new))) < len(names):
        # not a select, or the user's columns already bring hidden ones ("*") or repeat a name:
        # build without them first to see which hidden columns are missing
        probe = build(tdf.annotated, [])
        missing = [h for h in hidden if h not in column_names(probe)]
        new = build(tdf.annotated, missing) if missing else probe
    in_plan = analyzed(tdf.annotated)
    plan = analyzed(new)
    nodes = nodes_above(plan, [in_plan])
    kinds = {cls(n) for n in nodes}
    if not kinds <= {"Project", "Generate"} or cls(plan) != "Project":
        raise UnsupportedOperation.named(
            method, f"it computes {', '.join(sorted(kinds - {'Project'}))}; use groupBy().agg() for aggregates"
        )
    gens = [n for n in nodes if cls(n) == "Generate"]
    if gens:
        return _flatten(tdf, method, plan, gens[0], in_plan, explicit)
    attrs = attr_map([in_plan])
    items = seq(plan.projectList())
    if contains_any(plan, UDF_PATTERNS) and any(has_udf(i) for i in items):
        op = OperatorProv(tdf.tracker._new_oid(), OpType.MAP, method, (OpInput(tdf.oid, None),), None,
                          detail=str(plan.simpleString(25)))
        return tdf._next(new, op)
    accessed, manipulated = _project_paths(plan, items, attrs, {}, explicit)
    op = OperatorProv(tdf.tracker._new_oid(), OpType.SELECT, method, (OpInput(tdf.oid, accessed),),
                      manipulated, detail=str(plan.simpleString(25)))
    return tdf._next(new, op)


def _project_paths(plan, items: list, attrs, gen, explicit: bool) -> tuple[tuple[str, ...], tuple[Manipulation, ...]]:
    """Project ``plan``'s accessed paths and path pairs (its items ``items``): an input's
    attribute itself (:func:`project_output` says which) is copied from its path, accessed only
    when ``explicit``; a computed item maps and accesses the paths it reads."""
    accessed: dict[str, None] = {}
    manipulated: list[Manipulation] = []
    named, made = project_output(plan)
    computed = set(made)
    visible = [(k, a) for k, a in enumerate(named) if not is_hidden(a[0])]
    for (k, (_, eid)), name in zip(visible, column_paths(n for _, (n, _) in visible), strict=True):
        item = items[k] if k in computed else None
        if eid in attrs and (item is None or cls(item) == "AttributeReference"):  # (texts that did not split)
            src = attrs[eid].name
            manipulated.append(Manipulation(0, src, name))
            if explicit:
                accessed.setdefault(src, None)
            continue
        item = items[k] if item is None else item
        for m in out_pairs(item, name, attrs, gen):
            manipulated.append(m)
        for _, p in maximal_paths(item, attrs):
            accessed.setdefault(p, None)
    return tuple(accessed), tuple(dict.fromkeys(manipulated))


def _generator_sources(gnode, attrs) -> tuple[list[tuple[int, str]], dict[int, list[tuple[int, str]]], str]:
    """Accessed paths of the generator and, per generator output attribute, its sources."""
    g = gnode.generator()
    kind = cls(g)
    if kind not in _GENERATORS:
        raise UnsupportedOperation.named(
            f"generator {kind}", "only explode, posexplode and inline (and their _outer forms) are tracked")
    child = g.child()
    if cls(child.dataType()) not in ("ArrayType", "MapType"):
        raise UnsupportedOperation.named(f"{_GENERATORS[kind]} over {child.dataType().simpleString()}",
                                         "flatten is tracked over arrays and maps")
    base = as_path(child, attrs)
    outs = seq(gnode.generatorOutput())
    if base is None:  # a computed array, e.g. explode(split(text, ' ')): a derived value
        srcs = list(maximal_paths(child, attrs))
        gen = {a.exprId().id(): srcs for a in outs}
        return srcs, gen, kind
    elem = (base[0], f"{base[1]}.{POS}")  # a map's entry: its key and its value (as m['k'] reads m.[pos])
    if kind in ("Explode", "PosExplode"):
        skip = 1 if kind == "PosExplode" else 0  # posexplode's position column is made, not read
        gen = {a.exprId().id(): [elem] if i >= skip else [] for i, a in enumerate(outs)}
    else:
        fields = list(child.dataType().elementType().fieldNames())
        gen = {a.exprId().id(): [(elem[0], f"{elem[1]}.{f}")] for a, f in zip(outs, fields, strict=True)}
    return [elem], gen, kind


def _flatten(tdf, method, plan, gnode, in_plan, explicit) -> TrackedDataFrame:
    if not (gnode.child().fastEquals(in_plan) or gnode.child().equals(in_plan)):
        raise CaptureError(f"capture: unexpected plan under {method}: the generator does not read the input")
    attrs = attr_map([in_plan])
    accessed_src, gen, kind = _generator_sources(gnode, attrs)
    spark = tdf.annotated.sparkSession
    oid = tdf.tracker._new_oid()
    pos, elem, idk = f"__strata_pos_{oid}", f"__strata_elem_{oid}", f"__strata_id_{oid}"
    explode = F.posexplode_outer if gnode.outer() else F.posexplode
    source = gnode.generator().child()
    over_map = cls(source.dataType()) == "MapType"
    value = f"__strata_value_{oid}"  # a map's entries: (position, key, value)
    names = (pos, elem, value) if over_map else (pos, elem)
    base = tdf.annotated.select("*", explode(column_of(spark, source)).alias(*names))
    outs = [a.exprId().id() for a in seq(gnode.generatorOutput())]
    fields = list(source.dataType().elementType().fieldNames()) if kind == "Inline" else []

    def gen_col(j: int) -> Column:
        if kind == "Inline":
            return F.col(elem).getField(fields[j])
        made = names[1:] if kind == "Explode" else names  # explode: no position column
        return F.col(made[j])

    cols: list[Column] = []
    items = seq(plan.projectList())
    for item in items:
        ref = item if cls(item) == "AttributeReference" else (item.child() if cls(item) == "Alias" else None)
        if ref is not None and cls(ref) == "AttributeReference" and ref.exprId().id() in outs:
            cols.append(gen_col(outs.index(ref.exprId().id())).alias(item.name()))
        elif any(e in outs for e in _refs(item)):
            raise UnsupportedOperation.named(method, "an expression over the generator output in the same call")
        else:
            cols.append(column_of(spark, item))
    cur = tdf._cur
    new = base.select(
        *cols,
        F.col(pos),
        F.xxhash64(F.lit(oid), F.col(cur), F.coalesce(F.col(pos), F.lit(-1))).alias(idk),
    )
    accessed, manipulated = _project_paths(plan, items, attrs, gen, explicit)
    accessed = tuple(dict.fromkeys([p for _, p in accessed_src] + list(accessed)))
    op = OperatorProv(oid, OpType.FLATTEN, method, (OpInput(tdf.oid, accessed),), manipulated,
                      detail=str(plan.simpleString(25)))
    slots = (*(s.repeated_by(pos) for s in tdf._slots), Slot(oid, idk, InRef(cur), pos_col=pos))
    derived = (*tdf._derived, Derived(idk, FLATTEN, oid, (cur, pos)))
    return tdf._next(new, op, cur=idk, slots=slots, derived=derived)


def _refs(expr) -> list[int]:
    if cls(expr) == "AttributeReference":
        return [expr.exprId().id()]
    return [r for c in seq(expr.children()) for r in _refs(c)]


def _map_schemas(tdf: TrackedDataFrame, schema, method: str):
    """A map function's output schema (a StructType or DDL string), the hidden and visible
    columns of its input, and the schema it runs under (the output plus the hidden columns)."""

    out_schema = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    if not isinstance(out_schema, StructType):
        raise UnsupportedOperation.named(method, f"schema must be a struct type, got {schema!r}")
    hidden, visible = tdf.hidden(), tdf.visible()
    return out_schema, hidden, visible, StructType(list(out_schema.fields) + [tdf.annotated.schema[h] for h in hidden])


def map_in_pandas(tdf: TrackedDataFrame, func, schema, barrier: bool) -> TrackedDataFrame:
    """The paper's map rule: one output row per input row, access and manipulation undefined.

    The user's function is called once per Arrow batch with the visible columns; it must
    return as many rows as it got, in order, so each output row keeps its input's id.
    """
    import pandas as pd  # deferred: only this path needs pandas

    out_schema, hidden, visible, full = _map_schemas(tdf, schema, "mapInPandas")

    def wrapped(batches):
        for pdf in batches:
            ids = pdf[hidden].reset_index(drop=True)
            parts = list(func(iter([pdf[visible]])))
            out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=out_schema.names)
            if len(out) != len(pdf):
                raise ValueError(
                    f"strata capture: mapInPandas function returned {len(out)} rows for {len(pdf)} input "
                    "rows; under capture it must return one row per input row, in order (the map rule)"
                )
            for h in hidden:
                out[h] = ids[h].values
            yield out

    new = tdf.annotated.mapInPandas(wrapped, full, barrier)
    op = OperatorProv(tdf.tracker._new_oid(), OpType.MAP, "mapInPandas", (OpInput(tdf.oid, None),), None,
                      detail=f"mapInPandas {getattr(func, '__name__', 'function')}")
    return tdf._next(new, op)


def map_in_arrow(tdf: TrackedDataFrame, func, schema, barrier: bool) -> TrackedDataFrame:
    """``mapInArrow`` under the map rule, as :func:`map_in_pandas`: the user's function gets each
    Arrow batch's visible columns and must return as many rows as it got, in order."""

    _, hidden, visible, full = _map_schemas(tdf, schema, "mapInArrow")

    def wrapped(batches):
        for batch in batches:
            names = batch.schema.names
            shown = pa.RecordBatch.from_arrays([batch.column(names.index(c)) for c in visible], names=visible)
            parts = [b for b in func(iter([shown])) if b.num_rows]
            rows = sum(b.num_rows for b in parts)
            if rows != batch.num_rows:
                raise ValueError(
                    f"strata capture: mapInArrow function returned {rows} rows for {batch.num_rows} input "
                    "rows; under capture it must return one row per input row, in order (the map rule)")
            if not rows:
                continue
            out = pa.Table.from_batches(parts).combine_chunks()
            for h in hidden:
                out = out.append_column(h, batch.column(names.index(h)))
            yield from out.to_batches()

    new = tdf.annotated.mapInArrow(wrapped, full, barrier)
    op = OperatorProv(tdf.tracker._new_oid(), OpType.MAP, "mapInArrow", (OpInput(tdf.oid, None),), None,
                      detail=f"mapInArrow {getattr(func, '__name__', 'function')}")
    return tdf._next(new, op)
