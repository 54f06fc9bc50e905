"""Logical plans: frozen dataclasses the planner builds and the executor turns into DataFrames.

A plan is a tree of relational operators over *bindings*: each row of a relation binds some
FROM aliases to elements (their id and the attributes the query reads). Provenance predicates
are `ProvJoin`s that evaluate under/feeds/emits/influences from the bound side(s).
Expressions inside plans are bound AST nodes (`iql.ast`), with subqueries replaced by
`SubqueryExists` / `SubqueryValue` that carry their own plans. Leaves are `Scan`s of store
elements and `TraceScan`s of TRACE rows. Every node is an `iql.ast.Node`: `children()` are
the nodes its fields hold (a relation's inputs, its expressions, a subquery's plan).
"""

from __future__ import annotations

from dataclasses import dataclass

from iql import ast as A


def cname(uid: str, name: str) -> str:
    """Internal column of a binding: `s3__id`, `s3__authScore` (odd attribute names hashed)."""
    safe = name if name.isidentifier() else f"x{abs(hash(name)) % 10**8}"
    return f"{uid}__{safe}"


def out_name(i: int) -> str:
    return f"__o{i}"


@dataclass(frozen=True, slots=True)
class Scan(A.Node):
    """Elements of one FROM entry, with the single-alias filters pushed down.

    `ids` pins the element ids (from `x.id = 'lit'` or `x.id IN (...)`); `outer` restricts the
    scan to the ids bound by the enclosing query's rows (a correlated subquery's outer alias).
    """

    source: A.BoundSource
    attributes: tuple[str, ...]
    ids: tuple[str, ...] | None
    filters: tuple[A.BoundExpr, ...]
    outer: bool
    estimate: int | None

    @property
    def restricted(self) -> bool:
        return self.ids is not None or bool(self.filters) or self.outer

    def __post_init__(self) -> None:
        if self.ids is not None and not self.ids:
            raise ValueError(f"scan of {self.source.alias!r}: an id pin needs at least one id")


@dataclass(frozen=True, slots=True)
class TraceScan(A.Node):
    """The rows of a TRACE source (`A.TRACE_COLUMNS`), with its single-alias filters.

    Executing it matches the tree pattern on the run's stored result and backtraces the matched
    items (`capture.tracing.trace`); the filters then apply to the trace rows.
    """

    source: A.BoundSource
    filters: tuple[A.BoundExpr, ...]
    estimate: int | None = None
    columns: tuple[str, ...] = ()  # the TRACE columns the statement uses ("source"/"value": read back)

    def __post_init__(self) -> None:
        if self.source.trace is None:
            raise ValueError(f"TraceScan of {self.source.alias!r} needs a TRACE source")

    @property
    def trace(self) -> A.BoundTrace:
        return self.source.trace


@dataclass(frozen=True, slots=True)
class CrossJoin(A.Node):
    left: Relation
    right: Relation
    estimate: int | None


@dataclass(frozen=True, slots=True)
class ProvJoin(A.Node):
    """Join `input` with the pairs of `pred` (bound AST). `new` is the scan of the side not yet
    in `input`, or None when both sides are already bound (a semi-join filter).
    `bound_left` / `bound_right`: whether that side's ids are passed to the semantics function.
    """

    input: Relation
    pred: A.ProvPredicate
    new: Scan | None
    bound_left: bool
    bound_right: bool
    estimate: int | None

    def __post_init__(self) -> None:
        if not isinstance(self.pred.left, A.BoundAlias) or not isinstance(self.pred.right, A.BoundAlias):
            raise ValueError(f"ProvJoin needs a bound predicate, got {self.pred!r}")


@dataclass(frozen=True, slots=True)
class Filter(A.Node):
    input: Relation
    predicate: A.BoundExpr


@dataclass(frozen=True, slots=True)
class Aggregate(A.Node):
    """Group `input` by `keys` (expressions) and compute `outputs` (may contain aggregates)."""

    input: Relation
    keys: tuple[A.BoundExpr, ...]
    outputs: tuple[A.OutputColumn, ...]
    having: A.BoundExpr | None


@dataclass(frozen=True, slots=True)
class Project(A.Node):
    input: Relation
    outputs: tuple[A.OutputColumn, ...]
    distinct: bool


@dataclass(frozen=True, slots=True)
class SortKey(A.Node):
    position: int | None  # output column (after Project/Aggregate)
    expr: A.BoundExpr | None  # expression over the bindings (before Project)
    descending: bool


@dataclass(frozen=True, slots=True)
class Sort(A.Node):
    input: Relation
    keys: tuple[SortKey, ...]


@dataclass(frozen=True, slots=True)
class Limit(A.Node):
    input: Relation
    count: int


@dataclass(frozen=True, slots=True)
class SubqueryExists(A.Subquery):
    """EXISTS(subquery): `plan` yields the distinct `keys` (outer element ids) it holds for."""

    plan: QueryPlan
    keys: tuple[A.BoundSource, ...]
    span: A.Span = A.span_field()


@dataclass(frozen=True, slots=True)
class SubqueryValue(A.Subquery):
    """A scalar subquery: `plan` yields `keys` + one value column; `count` means 0 when absent."""

    plan: QueryPlan
    keys: tuple[A.BoundSource, ...]
    is_count: bool
    vtype: A.ValueType
    span: A.Span = A.span_field()


@dataclass(frozen=True, slots=True)
class QueryPlan(A.Node):
    """A whole query: its root operator and the names of the columns it returns.

    For a correlated subquery `keys` are the outer aliases whose ids lead the output columns.
    """

    root: Relation
    columns: tuple[str, ...]
    keys: tuple[A.BoundSource, ...]
    notes: tuple[str, ...]


Relation = Scan | TraceScan | CrossJoin | ProvJoin | Filter | Aggregate | Project | Sort | Limit
