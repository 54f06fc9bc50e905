"""Grouping + aggregation/nesting, distinct and dropDuplicates (Pebble: <ids_i, id_o>).

Each output row carries a hidden ``collect_list`` of every input item of its group: the struct
of its stored hidden columns, or its bare id where that is all it holds (:func:`member`), in the
order the aggregation saw them (their 1-based position is the ``pos`` of the association, equal
to the position of the item's value in every ``collect_list`` output of the same call when the
collected values are not null). Derived ids (flatten, join, union: capture/ids.py) are left out
of the struct; reading a run computes them again.

The output id is ``xxhash64(oid, group key)`` (:func:`key_id`): the grouping values identify a
group within the operator's output, and hashing them per group costs less than hashing every
member's id (docs/capture.md, "Ids"). Deterministic, so the same on every re-run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    IntegerType,
    LongType,
    StructField,
    StructType,
    _parse_datatype_string,
)

from capture import jvm
from capture.errors import UnsupportedOperation
from capture.ids import FLATTEN, Derived, is_hidden, top
from capture.operators import InRef, Manipulation, OperatorProv, OpInput, OpType, Slot, column_paths
from capture.tracking.paths import (
    UDF_PATTERNS,
    accesses,
    aggregate_pairs,
    analyzed,
    attr_map,
    cls,
    column_names,
    contains_any,
    has_udf,
    names_ids,
    nodes_above,
    seq,
)
from capture.tracking.project import column_of, visible_columns
from store.storage import spark_conf

if TYPE_CHECKING:
    from capture.tracking.frame import TrackedDataFrame


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


def member(tdf: TrackedDataFrame, col: Callable[[str], Column] = F.col) -> tuple[Column, bool]:
    """What an aggregation collects of each member row: its stored hidden columns as a struct
    (derived ids are not stored: capture/ids.py), or the bare id when that is all the row holds
    (one non-null id column, no association or derived id at its level, e.g. a source's rows):
    Spark collects longs without copying a row per member (docs/capture.md, "What an aggregation
    collects"). Readers tell the two apart by the element type. ``col`` makes a column of a name.
    Also whether every field is a ``bigint`` or an ``int`` (:func:`collect` can take it)."""
    derived = top(tdf._derived)
    kept = [h for h in tdf.hidden() if h not in derived]
    schema = tdf.annotated.schema
    if len(kept) == 1 and not tdf._derived and not tdf._slots and not schema[kept[0]].nullable:
        return col(kept[0]), schema[kept[0]].dataType == LongType()
    return F.struct(*[col(h) for h in kept]), _fixed_width(schema, kept)


def _fixed_width(schema: StructType, names: list[str]) -> bool:
    return 0 < len(names) <= 64 and all(schema[h].dataType in (LongType(), IntegerType()) for h in names)


def collect(tdf: TrackedDataFrame, col: Callable[[str], Column] = F.col) -> Column:
    """``collect_list`` of the rows' :func:`member` values."""
    value, fixed = member(tdf, col)
    return collect_list(tdf.annotated.sparkSession, value, fixed)


def collect_list(spark, value: Column, fixed: bool) -> Column:
    """``F.collect_list(value)``; where ``value`` is a ``bigint`` or a struct of ``bigint`` and
    ``int`` fields (``fixed``), computed by Strata's collector when Spark has the capture jar
    (``io.strata.capture.CollectMembers``: the same array, the same order, each group's members
    kept as longs in one buffer; docs/capture.md, "What an aggregation collects")."""
    collector = _collector(spark, fixed)
    return Column(collector.column(value._jc)) if collector is not None else F.collect_list(value)


def _collector(spark, fixed: bool):
    """``io.strata.capture.CollectMembers`` where it can collect the values (``fixed``) and Spark
    has the capture jar; else None (``collect_list``)."""
    return getattr(spark._jvm, jvm.COLLECT) if fixed and jvm.available(spark, jvm.COLLECT) else None


def _collected(tdf: TrackedDataFrame, oid: int) -> tuple[Column, str, str]:
    """The members, collected (:func:`member`)."""
    agg, idk = f"__strata_agg_{oid}", f"__strata_id_{oid}"
    return collect(tdf).alias(agg), agg, idk


def _positional(dtype: DataType) -> DataType:
    """``dtype`` with every struct field renamed ``_0``, ``_1``, … (a cast to it renames by
    position), so fields can be read by name even where a struct repeats a name."""
    if isinstance(dtype, StructType):
        return StructType([StructField(f"_{i}", _positional(f.dataType), f.nullable)
                           for i, f in enumerate(dtype.fields)])
    if isinstance(dtype, ArrayType):
        return ArrayType(_positional(dtype.elementType), dtype.containsNull)
    return dtype


def _key_value(c: Column, dtype: DataType) -> Column:
    """``c`` with a null flag at every level and every array's length, so hashing it tells all
    values apart: Spark's hash skips nulls and runs array elements into one chain, so the keys
    ``(null, 1)`` and ``(1, null)``, or ``([1, 2], [])`` and ``([1], [2])``, would hash alike."""
    if isinstance(dtype, StructType):
        return F.struct(c.isNull(), *[_key_value(c.getField(f.name), f.dataType) for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        elem = dtype.elementType
        return F.struct(c.isNull(), F.size(c), F.transform(c, lambda e: _key_value(e, elem)))
    return F.struct(c.isNull(), c)


def key_id(grouped: DataFrame, n: int, oid: int, idk: str, keep_keys: bool = True) -> DataFrame:
    """``grouped`` (an aggregation's output, its ``n`` grouping columns first) with the group id
    ``xxhash64(oid, group key)`` appended as ``idk``; without the key columns unless ``keep_keys``.
    The key columns are taken by position (output names may repeat: each column is its plan
    attribute, so the output keeps the aggregation's attributes) and, nested ones, cast to
    positional field names; :func:`_key_value` keeps nulls and array bounds apart."""

    spark = grouped.sparkSession
    attrs = seq(analyzed(grouped).output())
    cols = [column_of(spark, a) for a in attrs]
    kept = cols if keep_keys else cols[n:]
    types = [f.dataType for f in grouped.schema.fields[:n]]
    return grouped.select(*kept, key_hash(oid, cols[:n], types).alias(idk))


def key_hash(oid: int, keys: list[Column], types: list[DataType]) -> Column:
    """``xxhash64(oid, group key)`` over the key columns (of those types): nested ones cast to
    positional field names, nulls and array bounds kept apart (:func:`_key_value`)."""
    parts = []
    for col, dtype in zip(keys, types, strict=True):
        plain = _positional(dtype)
        parts.append(_key_value(col if plain == dtype else col.cast(plain), plain))
    return F.xxhash64(F.lit(oid), *parts)


def _finish(tdf, new, op, agg: str, idk: str) -> TrackedDataFrame:
    """``new`` already holds the group id ``idk`` (:func:`key_id`)."""
    slots = (*(s.nested_in(agg) for s in tdf._slots), Slot(op.oid, idk, InRef(tdf._cur), array=agg))
    return tdf._next(new, op, cur=idk, slots=slots, derived=tuple(d.nested_in(agg) for d in tdf._derived))


def _grouped(df: DataFrame, keys, exprs) -> tuple[DataFrame, bool]:
    """``df.groupBy(*keys).agg(*exprs)`` with the grouping columns first in the output, whatever
    ``spark.sql.retainGroupColumns`` says (the group id needs them), and that setting."""
    spark = df.sparkSession
    if spark.conf.get("spark.sql.retainGroupColumns", "true").lower() == "true":
        return df.groupBy(*keys).agg(*exprs), True
    with spark_conf(spark, "spark.sql.retainGroupColumns", "true"):
        return df.groupBy(*keys).agg(*exprs), False


def aggregate(tdf: TrackedDataFrame, method: str, keys: tuple, exprs: list[Column],
              opaque: bool = False, paths: Callable[[list[str]], list[str]] | None = None) -> TrackedDataFrame:
    """``tdf.groupBy(*keys).agg(*exprs)``; ``opaque``: what the members make is computed elsewhere
    by an opaque function (M = ⊥; A = the key and aggregated paths); ``paths``: the output
    columns' paths from their names (the keys', then the exprs'), for a caller that shows them in
    another order (default: ``column_paths``)."""
    oid = tdf.tracker._new_oid()
    collected, agg, idk = _collected(tdf, oid)
    grouped, retain = _grouped(tdf.annotated, keys, [*exprs, collected])
    in_plan = analyzed(tdf.annotated)
    anode = next((n for n in nodes_above(analyzed(grouped), [in_plan]) if cls(n) == "Aggregate"), None)
    if anode is None:
        raise UnsupportedOperation.named(method, "Spark did not plan an aggregation")
    attrs = attr_map([in_plan])
    grouping = seq(anode.groupingExpressions())
    first = 0 if retain else len(grouping)  # the grouping columns lead when retained (_grouped)
    named = [(k, n) for k, (n, _) in enumerate(names_ids(anode.output())) if k >= first and not is_hidden(n)]
    listed = anode.aggregateExpressions()
    outputs = [listed.apply(k) for k, _ in named]
    new = key_id(grouped, len(grouping), oid, idk, keep_keys=retain)
    if contains_any(anode, UDF_PATTERNS) and any(has_udf(e) for e in grouping + outputs):
        op = OperatorProv(oid, OpType.AGGREGATION, method, (OpInput(tdf.oid, None),), None,
                          detail=str(anode.simpleString(25)))
        return _finish(tdf, new, op, agg, idk)
    accessed = tuple(a.path for a in accesses(grouping + outputs, attrs))
    names = [n for _, n in named]
    dsts = column_paths(names) if paths is None else paths(names)
    cols = tdf.visible()
    pairs = (m for e, dst in zip(outputs, dsts, strict=True) for m in aggregate_pairs(e, dst, attrs, cols))
    manipulated = None if opaque else tuple(dict.fromkeys(pairs))
    op = OperatorProv(oid, OpType.AGGREGATION, method, (OpInput(tdf.oid, accessed),), manipulated,
                      detail=str(anode.simpleString(25)))
    return _finish(tdf, new, op, agg, idk)


def by_groups(out: TrackedDataFrame, below: TrackedDataFrame, expanded: TrackedDataFrame, sources: list[Column],
              sets: list[list[Column]], partials: list[Column], merges: list[Column], places: list[int],
              finish: Callable[[DataFrame], list[Column]]) -> DataFrame | None:
    """``out`` -- the aggregation of ``expanded``, the expand (one copy per grouping set) of
    ``below`` -- computed in two levels: the same columns, values and members; None where its
    members are not the expand's rows' stored columns and position. ``below`` grouped by
    ``sources`` (the columns the grouping sets read) collects its rows' stored columns and the
    ``partials``; each group is copied once per set (``sets``: each copy's grouping columns and
    grouping id, over ``sources``, as ``_k0``, ``_k1``, …), and the copies of a set's group
    concatenate their lists, each member with its copy's position, and compute the ``merges``
    over the partials. ``finish`` gives the visible columns (keys, then values) over that;
    ``places``: each key's place among a copy's columns (capture/auto/plan.py ``_by_groups``)."""
    derived = top(expanded._derived)
    kept = [h for h in expanded.hidden() if h not in derived]
    pos, agg, idk = f"__strata_pos_{expanded.oid}", f"__strata_agg_{out.oid}", f"__strata_id_{out.oid}"
    rows, have = kept[:-1], set(below.hidden())
    if kept[-1:] != [pos] or not rows or not set(rows) <= have or out.hidden() != [agg, idk]:
        return None
    m = f"__strata_rows_{out.oid}"
    spark, fixed = below.annotated.sparkSession, _fixed_width(below.annotated.schema, rows)
    first, _ = _grouped(below.annotated, sources,
                        [collect_list(spark, F.struct(*[F.col(h) for h in rows]), fixed).alias(m), *partials])
    names = column_names(first)[len(sources) + 1:]

    collector = _collector(spark, fixed)  # joins the copies' lists and adds their positions in one pass
    direct = collector is not None

    def listed(j: int) -> list[Column]:
        """The j-th copy's list of members: as collected with the position beside it, or each
        member given the position."""
        if direct:
            return [F.col(m).alias("_m"), F.lit(j).alias("_j")]
        return [F.transform(m, lambda x: F.struct(*[x.getField(h).alias(h) for h in rows],
                                                  F.lit(j).alias(pos))).alias("_m")]

    copies = first.select(F.inline(F.array(*[
        F.struct(*[c.alias(f"_k{k}") for k, c in enumerate(p)], *listed(j), *[F.col(n) for n in names])
        for j, p in enumerate(sets)])))
    members = (Column(collector.copies(F.col("_m")._jc, F.col("_j")._jc, pos)) if direct
               else F.flatten(F.collect_list("_m")))
    keys = [f"_k{k}" for k in range(len(sets[0]))]
    merged, _ = _grouped(copies, keys, [members.alias(agg), *merges])
    types = {f.name: f.dataType for f in merged.schema.fields[:len(keys)]}
    by = [f"_k{k}" for k in places]
    made = merged.select(*finish(merged), F.col(agg), key_hash(out.oid, [F.col(k) for k in by],
                                                                [types[k] for k in by]).alias(idk))
    return made if column_names(made) == column_names(out.annotated) else None


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
    if subset:
        others = [F.first(df[c]).alias(c) for c in visible if c not in keys]
        grouped, _ = _grouped(df, [df[k] for k in keys], [*others, collected])
        new = key_id(grouped, len(keys), oid, idk).select(*visible, agg, idk)
        accessed = tuple(keys)
    else:  # every column a key, by attribute (a name may repeat: a join's two a are a and a~2)
        grouped, _ = _grouped(df, visible_columns(df), [collected])
        new = key_id(grouped, len(keys), oid, idk)
        accessed = tuple(column_paths(visible))
    manipulated = tuple(Manipulation(0, c, c) for c in column_paths(visible))
    op = OperatorProv(oid, OpType.AGGREGATION, method, (OpInput(tdf.oid, accessed),), manipulated,
                      detail=f"{method}({', '.join(keys)})")
    return _finish(tdf, new, op, agg, idk)


def apply_in_pandas(tdf: TrackedDataFrame, keys: list[Column], func, schema) -> TrackedDataFrame:
    """``groupBy(keys).applyInPandas(func, schema)``: an output row of a group is built from all
    of the group's rows by an opaque function. Recorded as an aggregation of the group (members:
    its rows; A = the key paths, M = ⊥) and a flatten of the group's item into the rows the
    function returned for it (A = M = ⊥; position = the row's place in the function's output).
    The function runs on the visible columns, as in the plain program; its output rows are
    joined back to their group on the key (null-safe) for the members' ids."""


    out_schema = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    if not isinstance(out_schema, StructType):
        raise UnsupportedOperation.named("applyInPandas", f"schema must be a struct type, got {schema!r}")
    group = aggregate(tdf, "applyInPandas", tuple(keys), [], opaque=True)
    spark = tdf.annotated.sparkSession
    n = len(keys)
    key_types = [f.dataType for f in tdf.annotated.select(*keys).schema.fields]
    oid = tdf.tracker._new_oid()
    pos, idk = f"__strata_pos_{oid}", f"__strata_id_{oid}"
    tags = [f"__strata_key{i}_{oid}" for i in range(n)]
    visible = tdf.visible()
    with_key = len(inspect.getfullargspec(func).args) == 2
    full = StructType([*out_schema.fields, *(StructField(t, d) for t, d in zip(tags, key_types, strict=True)),
                       StructField(pos, IntegerType(), False)])

    def wrapped(key, pdf):
        out = func(key, pdf[visible]) if with_key else func(pdf[visible])
        out = out.reset_index(drop=True)
        for t, value in zip(tags, key, strict=True):
            out[t] = [value] * len(out)
        out[pos] = range(len(out))
        return out

    rows = tdf.annotated.groupBy(*keys).applyInPandas(wrapped, full)
    gcols = [column_of(spark, a) for a in seq(analyzed(group.annotated).output())]
    cond = None
    for t, k in zip(tags, gcols[:n], strict=True):
        eq = rows[t].eqNullSafe(k)
        cond = eq if cond is None else cond & eq
    joined = rows.join(group.annotated, cond if cond is not None else F.lit(True), "inner")
    new = joined.select(*(rows[f.name] for f in out_schema.fields), *(group.annotated[h] for h in group.hidden()),
                        rows[pos], F.xxhash64(F.lit(oid), group.annotated[group.id_column], rows[pos]).alias(idk))
    op = OperatorProv(oid, OpType.FLATTEN, "applyInPandas", (OpInput(group.oid, None),), None,
                      detail=f"applyInPandas {getattr(func, '__name__', 'function')}")
    slots = (*(s.repeated_by(pos) for s in group._slots), Slot(oid, idk, InRef(group.id_column), pos_col=pos))
    derived = (*group._derived, Derived(idk, FLATTEN, oid, (group.id_column, pos)))
    return group._next(new, op, cur=idk, slots=slots, derived=derived)
