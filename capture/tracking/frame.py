"""The tracked DataFrame: a pyspark DataFrame plus hidden id columns and operator provenance.

Every supported method applies the user's operation to the annotated DataFrame (visible
columns + hidden ``__strata_*`` id columns), reads the accessed and manipulated paths off
Spark's analyzed plan, and registers one :class:`~capture.operators.OperatorProv` with the tracker.
Reading methods (``show``, ``collect``, ``columns`` ...) see only the visible columns, so a
tracked pipeline shows and returns exactly what the untracked one would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame

from capture.errors import UnsupportedOperation
from capture.id_columns import named
from capture.ids import Derived, is_hidden
from capture.operators import InRef, OperatorProv, OpInput, OpType, Slot
from capture.tracking import binary, grouping, project
from capture.tracking.paths import (
    UDF_PATTERNS,
    accesses,
    analyzed,
    attr_map,
    column_names,
    contains_any,
    frame_of,
    has_udf,
    node_exprs,
    nodes_above,
    to_seq,
)

if TYPE_CHECKING:
    from capture.tracking.tracker import Tracker

# Methods that only read the (visible) data: forwarded to the visible DataFrame.
_READERS = frozenset(
    {
        "columns", "schema", "dtypes", "printSchema", "show", "collect", "count", "take",
        "head", "first", "toPandas", "isEmpty", "toLocalIterator", "tail",
    }
)


class TrackedDataFrame:
    """A DataFrame whose operators are recorded; behaves like ``pyspark.sql.DataFrame``."""

    __slots__ = ("_tracker", "_raw", "_oid", "_cur", "_slots", "_derived", "_pending", "_layout")

    def __init__(self, tracker: Tracker, df: DataFrame, oid: int, cur: str, slots: tuple[Slot, ...],
                 derived: tuple[Derived, ...] = (), pending: dict[str, Column] | None = None,
                 layout: tuple[int | str, ...] = ()):
        self._tracker = tracker
        self._raw = df
        self._oid = oid
        self._cur = cur
        self._slots = slots
        self._derived = derived  # hidden columns computed again on read, not stored (capture/ids.py)
        # Join ids not computed yet (:meth:`raw`): name -> expression over ``df``'s columns; and
        # where each column of the annotated DataFrame comes from (a position in ``df``'s columns,
        # or a pending name), so that computing them gives the column order of computing them at once
        self._pending = dict(pending or {})
        self._layout = layout

    # ---- plumbing -------------------------------------------------------------------------
    @property
    def tracker(self) -> Tracker:
        return self._tracker

    @property
    def oid(self) -> int:
        """The id of the operator that produced this DataFrame."""
        return self._oid

    @property
    def annotated(self) -> DataFrame:
        """The DataFrame with the hidden provenance columns (for the capture layer)."""
        if self._pending:
            self._raw = _computed(self._raw, self._pending, self._layout)
            self._pending, self._layout = {}, ()
        return self._raw

    _df = annotated

    @property
    def raw(self) -> DataFrame:
        """The DataFrame without the pending join ids: the plan of a chain of inner joins and the
        filter above it as Spark's own plan has them, no projection between the joins, so Spark's
        optimizer reorders the joins and pushes the filter's conditions into them as in the plain
        query (ReorderJoin flattens only joins that are directly nested). The ids are computed by
        :attr:`annotated`, above the chain."""
        return self._raw

    @property
    def pending(self) -> dict[str, Column]:
        return self._pending

    def layout(self) -> tuple[int | str, ...]:
        """Where each column of :attr:`annotated` comes from: a position in :attr:`raw`'s columns
        or the name of a pending column."""
        if self._pending:
            return self._layout
        return tuple(range(analyzed(self._raw).output().size()))

    def id_value(self) -> Column:
        """This DataFrame's id column over :attr:`raw`: its expression while it is pending."""
        return self._pending.get(self._cur) if self._cur in self._pending else named(self._cur)

    def hidden(self) -> list[str]:
        if self._pending:
            names = column_names(self._raw)
            return [c for c in (names[k] if isinstance(k, int) else k for k in self._layout) if is_hidden(c)]
        return [c for c in column_names(self._raw) if is_hidden(c)]

    def visible(self) -> list[str]:
        return [c for c in column_names(self._raw) if not is_hidden(c)]

    @property
    def id_column(self) -> str:
        """The hidden column holding each row's provenance id."""
        return self._cur

    def with_item_ids(self, name: str = "item_id") -> DataFrame:
        """The visible columns plus each row's provenance id (the ``out_id`` of its
        associations for the operator that produced this DataFrame) as column ``name``."""
        return self._df.select(*[self._df[c] for c in self.visible()], self._df[self._cur].alias(name))

    def untracked(self) -> DataFrame:
        """The plain DataFrame (no hidden columns); operations on it are not captured."""
        return self._df.select(*[self._df[c] for c in self.visible()])

    def _next(self, df: DataFrame, op: OperatorProv, cur: str | None = None,
              slots: tuple[Slot, ...] | None = None, derived: tuple[Derived, ...] | None = None,
              pending: dict[str, Column] | None = None, layout: tuple[int | str, ...] = ()) -> TrackedDataFrame:
        self._tracker._register(op)
        if slots is None:  # output id = input id
            # filter/select/map/sort/limit: nothing to store, their <id, id> rows are derived
            # from the successor's input ids (capture/storing/materialize.py identity_frame); a semi or
            # anti join keeps ids too but is a join, whose rows the backtracer reads
            slots = self._slots if op.type.keeps_ids else (*self._slots, Slot(op.oid, self._cur, InRef(self._cur)))
        return TrackedDataFrame(self._tracker, df, op.oid, cur or self._cur, slots,
                                self._derived if derived is None else derived, pending, layout)

    def _check_names(self, names, operation: str) -> None:
        for n in names:
            if isinstance(n, str) and is_hidden(n):
                raise UnsupportedOperation.named(operation, f"column name {n!r} is reserved for provenance ids")

    def __getattr__(self, name: str) -> Any:
        if name in _READERS:
            return getattr(self.untracked(), name)
        if not name.startswith("_") and name in column_names(self._df):
            return self._df[name]
        if hasattr(DataFrame, name):
            raise UnsupportedOperation.named(name)
        raise AttributeError(f"'TrackedDataFrame' object has no attribute {name!r}")

    def __getitem__(self, item):
        if isinstance(item, str):
            self._check_names([item], "__getitem__")
            return self._df[item]
        if isinstance(item, Column):
            return self.filter(item)
        if isinstance(item, (list, tuple)):
            return self.select(*item)
        raise UnsupportedOperation.named("__getitem__", f"unexpected key {item!r}")

    def __repr__(self) -> str:
        return f"TrackedDataFrame[op {self._oid}]({', '.join(self.visible())})"

    # ---- unary operators keeping item identity -----------------------------------------
    def filter(self, condition) -> TrackedDataFrame:
        return self._rowwise("filter", OpType.FILTER, self._df.filter(condition))

    where = filter

    def orderBy(self, *cols, **kwargs) -> TrackedDataFrame:
        return self._rowwise("orderBy", OpType.SORT, self._df.orderBy(*cols, **kwargs))

    sort = orderBy

    def limit(self, num: int) -> TrackedDataFrame:
        return self._rowwise("limit", OpType.LIMIT, self._df.limit(num))

    def _rowwise(self, method: str, kind: OpType, new: DataFrame, over_raw: bool = False) -> TrackedDataFrame:
        """``new``: this DataFrame's rows filtered, sorted or cut; ``over_raw``: ``new`` was built
        over :attr:`raw` (a filter: the pending ids stay pending above it)."""
        in_plan = analyzed(self._raw if over_raw else self._df)
        attrs = attr_map([in_plan])
        exprs = [e for n in nodes_above(analyzed(new), [in_plan]) for e in node_exprs(n)]
        udf = contains_any(analyzed(new), UDF_PATTERNS) and any(has_udf(e) for e in exprs)
        accessed = None if udf else tuple(a.path for a in accesses(exprs, attrs))
        op = OperatorProv(self._tracker._new_oid(), kind, method, (OpInput(self._oid, accessed),), (),
                          detail=_detail(new))
        pending, layout = (self._pending, self._layout) if over_raw else (None, ())
        # filter and limit may drop the first copy of a repeated row
        slots = None if kind is OpType.SORT else tuple(s.filtered() for s in self._slots)
        return self._next(new, op, slots=slots, pending=pending, layout=layout)

    # ---- projections and flatten (capture/tracking/project.py) ------------------------------------
    def select(self, *cols) -> TrackedDataFrame:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        self._check_names(cols, "select")
        return project.apply(self, "select", lambda d, extra: d.select(*cols, *extra), explicit=True)

    def selectExpr(self, *exprs: str) -> TrackedDataFrame:
        if len(exprs) == 1 and isinstance(exprs[0], (list, tuple)):
            exprs = tuple(exprs[0])
        return project.apply(
            self, "selectExpr", lambda d, extra: d.selectExpr(*exprs, *[f"`{h}`" for h in extra]), explicit=True
        )

    def withColumn(self, colName: str, col: Column) -> TrackedDataFrame:
        self._check_names([colName], "withColumn")
        return project.apply(self, "withColumn", lambda d, extra: d.withColumn(colName, col))

    def withColumns(self, *colsMap: dict[str, Column]) -> TrackedDataFrame:
        mapping = dict(colsMap[0]) if colsMap else {}
        self._check_names(mapping, "withColumns")
        return project.apply(self, "withColumns", lambda d, extra: d.withColumns(mapping))

    def drop(self, *cols) -> TrackedDataFrame:
        self._check_names(cols, "drop")
        return project.apply(self, "drop", lambda d, extra: d.drop(*cols))

    def withColumnRenamed(self, existing: str, new: str) -> TrackedDataFrame:
        self._check_names([existing, new], "withColumnRenamed")
        return project.apply(self, "withColumnRenamed", lambda d, extra: d.withColumnRenamed(existing, new))

    def withColumnsRenamed(self, colsMap: dict[str, str]) -> TrackedDataFrame:
        self._check_names([*colsMap, *colsMap.values()], "withColumnsRenamed")
        return project.apply(self, "withColumnsRenamed", lambda d, extra: d.withColumnsRenamed(colsMap))

    def mapInPandas(self, func, schema, barrier: bool = False) -> TrackedDataFrame:
        return project.map_in_pandas(self, func, schema, barrier)

    # ---- joins and unions (capture/tracking/binary.py) ----------------------------------------------
    def join(self, other: TrackedDataFrame, on=None, how: str | None = None) -> TrackedDataFrame:
        return binary.join(self, other, on, how)

    def crossJoin(self, other: TrackedDataFrame) -> TrackedDataFrame:
        return binary.join(self, other, None, "cross")

    def union(self, other: TrackedDataFrame) -> TrackedDataFrame:
        return binary.union(self, other, "union", by_name=False)

    unionAll = union

    def unionByName(self, other: TrackedDataFrame, allowMissingColumns: bool = False) -> TrackedDataFrame:
        return binary.union(self, other, "unionByName", by_name=True, allow_missing=allowMissingColumns)

    # ---- grouping, aggregation, duplicates (capture/tracking/grouping.py) -------------------------
    def groupBy(self, *cols) -> grouping.TrackedGroupedData:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        self._check_names(cols, "groupBy")
        return grouping.TrackedGroupedData(self, cols)

    groupby = groupBy

    def agg(self, *exprs) -> TrackedDataFrame:
        return self.groupBy().agg(*exprs)

    def distinct(self) -> TrackedDataFrame:
        return grouping.deduplicate(self, "distinct", None)

    def dropDuplicates(self, subset: list[str] | None = None) -> TrackedDataFrame:
        return grouping.deduplicate(self, "dropDuplicates", subset)

    drop_duplicates = dropDuplicates


def _computed(raw: DataFrame, pending: dict[str, Column], layout: tuple[int | str, ...]) -> DataFrame:
    """``raw`` with its ``pending`` columns computed, all columns in the order ``layout`` says
    (one projection; its items rearranged in Spark's plan when the pending columns do not simply
    come last)."""
    df = raw.withColumns(pending)
    n = len(layout) - len(pending)
    if list(layout) == [*range(n), *pending]:
        return df
    plan = analyzed(df)
    items = plan.projectList()
    at = {name: n + k for k, name in enumerate(pending)}
    jvm = raw.sparkSession._jvm
    listed = [items.apply(k if isinstance(k, int) else at[k]) for k in layout]
    project = getattr(jvm, "org.apache.spark.sql.catalyst.plans.logical.Project")(to_seq(jvm, listed), plan.child())
    return frame_of(raw.sparkSession, project)


def _detail(df: DataFrame) -> str:
    plan = analyzed(df)
    return str(plan.simpleString(25))
