"""IQL syntax trees: what the parser builds, and the bound forms the binder adds.

Every node is a frozen, slotted dataclass; nodes built from source text carry a `Span`.
Parse nodes (`Literal`, `ColumnRef`, `ProvPredicate`, `Select`, ...) say what the user wrote;
bound nodes (`BoundColumn`, `BoundSource`, `BoundSelect`, ...) say what it means against a
catalog: which FROM entry an alias is, its kind, the value type of every expression.
Rewrites return new nodes (`dataclasses.replace`).

Every node is a `Node`: `children()` are its node-valued fields (tuples of nodes flattened),
derived from the dataclass fields, so a walk needs no list of field names. Spans are not part
of a node's equality or hash (`span_field`): two nodes written alike in different places are
equal, and `==` is the structural comparison the binder and the executors use.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from: character offsets [start, end) and the 1-based line/column of start."""

    start: int
    end: int
    line: int
    column: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"bad span offsets {self.start}..{self.end}")

    def cover(self, other: Span) -> Span:
        first = self if self.start <= other.start else other
        return Span(first.start, max(self.end, other.end), first.line, first.column)


NO_SPAN = Span(0, 0, 1, 1)


def span_field(**kwargs):
    """A node's source span: kept for error messages, left out of `==` and `hash`."""
    return field(compare=False, hash=False, **kwargs)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


class Node:
    """Base of the syntax-tree and plan nodes (iql/plan.py): frozen, slotted dataclasses."""

    __slots__ = ()

    def children(self) -> tuple[Node, ...]:
        """The nodes held by this node's fields, in field order (tuples of nodes flattened;
        spans, names, enums and other values are not children)."""
        names = _CHILD_FIELDS.get(type(self))
        if names is None:
            names = _CHILD_FIELDS[type(self)] = tuple(f.name for f in fields(self) if f.compare)
        out: list[Node] = []
        for name in names:
            value = getattr(self, name)
            if isinstance(value, Node):
                out.append(value)
            elif isinstance(value, tuple):
                out += [v for v in value if isinstance(v, Node)]
        return tuple(out)


class Subquery(Node):
    """A node that holds a whole query (EXISTS, a scalar subquery, and their planned forms):
    expression walks (`operands`, `walk`) stop at it."""

    __slots__ = ()


class CompOp(str, enum.Enum):
    EQ = "="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="

    @classmethod
    def parse(cls, text: str) -> CompOp:
        return cls.NE if text == "<>" else cls(text)


class ProvKind(str, enum.Enum):
    """The provenance predicates of Ibis Section 5."""

    UNDER = "under"
    FEEDS = "feeds"
    EMITS = "emits"
    INFLUENCES = "influences"


class AggFunc(str, enum.Enum):
    COUNT = "count"
    MIN = "min"
    MAX = "max"
    SUM = "sum"
    AVG = "avg"


class Wildcard(str, enum.Enum):
    """FROM wildcards (Section 6): any data, any process, any element."""

    ANY_DATA = "AnyData"
    ANY_PROCESS = "AnyProcess"
    ANY = "Any"


class ValueType(str, enum.Enum):
    """Types of IQL values; NULL is the type of the literal `null` (compatible with all).
    INT_ARRAY is the type of TRACE's `accessed_by` / `manipulated_by` (operator ids)."""

    STRING = "string"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    NULL = "null"
    INT_ARRAY = "array<int>"

    @property
    def numeric(self) -> bool:
        return self in (ValueType.INT, ValueType.FLOAT)


# ---------------------------------------------------------------------------- parse nodes


@dataclass(frozen=True, slots=True)
class Literal(Node):
    value: str | int | float | bool | None
    span: Span = span_field()

    @property
    def vtype(self) -> ValueType:
        v = self.value
        if v is None:
            return ValueType.NULL
        if isinstance(v, bool):
            return ValueType.BOOL
        if isinstance(v, int):
            return ValueType.INT
        if isinstance(v, float):
            return ValueType.FLOAT
        return ValueType.STRING


@dataclass(frozen=True, slots=True)
class ColumnRef(Node):
    """`alias.name`, or a bare `name` (alias None): an attribute, `id`, or an alias by itself."""

    alias: str | None
    name: str
    span: Span = span_field()

    def __str__(self) -> str:
        return f"{self.alias}.{self.name}" if self.alias else self.name


@dataclass(frozen=True, slots=True)
class Call(Node):
    """An aggregate call; `arg` None means `count(*)`."""

    func: AggFunc
    arg: Expr | None
    distinct: bool
    span: Span = span_field()

    def __post_init__(self) -> None:
        if self.arg is None and self.func is not AggFunc.COUNT:
            raise ValueError(f"only count takes '*', not {self.func.value}")


@dataclass(frozen=True, slots=True)
class Compare(Node):
    op: CompOp
    left: Expr
    right: Expr
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class And(Node):
    left: Expr
    right: Expr
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class Or(Node):
    left: Expr
    right: Expr
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Expr
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class IsNull(Node):
    operand: Expr
    negated: bool
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class InList(Node):
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool
    span: Span = span_field()

    def __post_init__(self) -> None:
        if not self.items:
            raise ValueError("IN needs at least one item")


@dataclass(frozen=True, slots=True)
class ProvPredicate(Node):
    """`left under right`, `feeds`, `emits`, or `influences(depth)`; depth None = `(*)`."""

    kind: ProvKind
    left: Expr
    right: Expr
    depth: int | None
    span: Span = span_field()

    def __post_init__(self) -> None:
        if self.depth is not None and self.depth < 0:
            raise ValueError(f"influences depth must be >= 0, got {self.depth}")
        if self.kind is not ProvKind.INFLUENCES and self.depth is not None:
            raise ValueError(f"only influences takes a depth, not {self.kind.value}")

    @property
    def label(self) -> str:
        if self.kind is not ProvKind.INFLUENCES:
            return self.kind.value
        return f"influences({'*' if self.depth is None else self.depth})"


@dataclass(frozen=True, slots=True)
class Exists(Subquery):
    query: Select | BoundSelect
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class ScalarSubquery(Subquery):
    query: Select | BoundSelect
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class SelectItem(Node):
    expr: Expr
    alias: str | None
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class TypeRef(Node):
    """A FROM type: a name (`WebPage`, `Any`) or a granularity tuple `(Row, Column)`."""

    names: tuple[str, ...]
    is_tuple: bool
    span: Span = span_field()

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("a type needs at least one name")

    def __str__(self) -> str:
        return "(" + ", ".join(self.names) + ")" if self.is_tuple else self.names[0]


@dataclass(frozen=True, slots=True)
class TraceSource(Node):
    """`TRACE(['run'] MATCH 'pattern' [LIMIT n])` in FROM: the trace rows of a captured run's
    result items that match the tree pattern (`run` None = the store's last captured run;
    `limit` = how many matched result items to trace). `pattern_span` locates the pattern's
    string literal, so a tree-pattern error can point into the query."""

    run: str | None
    pattern: str
    limit: int | None
    span: Span = span_field()
    pattern_span: Span = span_field()

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"TRACE LIMIT must be >= 0, got {self.limit}")

    def __str__(self) -> str:
        return "TRACE"


@dataclass(frozen=True, slots=True)
class FromItem(Node):
    """One FROM entry: an element type (or wildcard) or a TRACE, and its alias."""

    source: TypeRef | TraceSource
    alias: str
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class OrderItem(Node):
    expr: Expr
    descending: bool
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class Select(Node):
    distinct: bool
    items: tuple[SelectItem, ...] | None  # None = `SELECT *`
    from_: tuple[FromItem, ...]
    where: Expr | None
    group_by: tuple[Expr, ...]
    having: Expr | None
    order_by: tuple[OrderItem, ...]
    limit: int | None
    span: Span = span_field()
    limit_span: Span | None = span_field(default=None)

    def __post_init__(self) -> None:
        if not self.from_:
            raise ValueError("a query needs a FROM clause")
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"LIMIT must be >= 0, got {self.limit}")


class Form(str, enum.Enum):
    """How a statement was written. `TRACE ...` is `SELECT * FROM TRACE(...)` written as a
    statement of its own; front ends show its rows as trees (one per traced input item)."""

    SELECT = "select"
    TRACE = "trace"


@dataclass(frozen=True, slots=True)
class Statement(Node):
    query: Select
    explain: bool
    span: Span = span_field()
    form: Form = Form.SELECT
    as_of: int | None = None  # AS OF VERSION n: the committed version the statement reads


# ---------------------------------------------------------------------------- bound nodes


# The columns of TRACE rows, fixed: one row per node of each traced input item's tree
# (docs/tracing.md). `item` is the input item's store element (capture.tracing.item_element_id);
# `source` where the item lives and `value` its value at `path` (JSON text), read back from the
# input only when the statement uses them (capture/tracing/locate.py).
TRACE_COLUMNS: tuple[tuple[str, ValueType], ...] = (
    ("dataset", ValueType.STRING),
    ("item", ValueType.STRING),
    ("item_id", ValueType.INT),
    ("path", ValueType.STRING),
    ("role", ValueType.STRING),
    ("accessed_by", ValueType.INT_ARRAY),
    ("manipulated_by", ValueType.INT_ARRAY),
    ("source", ValueType.STRING),
    ("value", ValueType.STRING),
)


@dataclass(frozen=True, slots=True)
class BoundTrace(Node):
    """A checked `TRACE(...)` source: `pattern` is the parsed tree pattern
    (`capture.tracing.Pattern`), `pattern_text` what the user wrote."""

    run: str | None
    pattern_text: str
    pattern: object
    limit: int | None


@dataclass(frozen=True, slots=True)
class BoundSource(Node):
    """One FROM entry resolved against the catalog.

    `uid` is unique in the whole statement (subqueries included). Exactly one of three says
    what the entry ranges over: `type_key` (the canonical type key of a store type),
    `wildcard` (AnyData, AnyProcess, Any) or `trace` (the rows of a TRACE). `kind` is `data`,
    `process`, or None for `Any` and TRACE. `attributes` are the columns besides `id`: the
    type's schema, none for wildcards, TRACE's fixed columns for a trace (which has no `id`).
    """

    uid: str
    alias: str
    type_key: str | None
    wildcard: Wildcard | None
    kind: str | None
    attributes: tuple[tuple[str, ValueType], ...]
    display: str
    span: Span = span_field()
    trace: BoundTrace | None = None

    def __post_init__(self) -> None:
        given = [x for x in (self.type_key, self.wildcard, self.trace) if x is not None]
        if len(given) != 1:
            raise ValueError(f"source {self.alias!r} needs exactly one of type_key, wildcard and trace")

    @property
    def is_element(self) -> bool:
        """Whether the rows are store elements (with an `id`), not trace rows."""
        return self.trace is None

    def attribute(self, name: str) -> ValueType | None:
        for attr, vtype in self.attributes:
            if attr == name:
                return vtype
        return None


@dataclass(frozen=True, slots=True)
class BoundColumn(Node):
    """A resolved column: `name` is `id` or an attribute of source `uid`; `outer` if correlated."""

    uid: str
    alias: str
    name: str
    vtype: ValueType
    outer: bool
    span: Span = span_field()

    @property
    def key(self) -> tuple[str, str]:
        return (self.uid, self.name)

    def __str__(self) -> str:
        return f"{self.alias}.{self.name}"


@dataclass(frozen=True, slots=True)
class BoundAlias(Node):
    """An alias used as a whole element, as the operand of a provenance predicate."""

    uid: str
    alias: str
    kind: str | None
    outer: bool
    span: Span = span_field()

    def __str__(self) -> str:
        return self.alias


@dataclass(frozen=True, slots=True)
class BoundCall(Node):
    func: AggFunc
    arg: BoundExpr | None
    distinct: bool
    vtype: ValueType
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class OutputColumn(Node):
    name: str
    expr: BoundExpr
    vtype: ValueType


@dataclass(frozen=True, slots=True)
class BoundOrder(Node):
    """An ORDER BY key: an output column position, or an expression over the sources."""

    position: int | None
    expr: BoundExpr | None
    descending: bool

    def __post_init__(self) -> None:
        if (self.position is None) == (self.expr is None):
            raise ValueError("an order key is either an output position or an expression")


@dataclass(frozen=True, slots=True)
class BoundSelect(Node):
    """A query with every name resolved and every expression typed.

    `correlated` lists the outer sources this query (or a nested one) refers to.
    """

    distinct: bool
    sources: tuple[BoundSource, ...]
    where: BoundExpr | None
    outputs: tuple[OutputColumn, ...]
    group_by: tuple[BoundExpr, ...]
    having: BoundExpr | None
    aggregated: bool
    order_by: tuple[BoundOrder, ...]
    limit: int | None
    correlated: tuple[BoundSource, ...]
    span: Span = span_field()


@dataclass(frozen=True, slots=True)
class BoundStatement(Node):
    query: BoundSelect
    explain: bool
    warnings: tuple[str, ...]
    source_text: str
    form: Form = Form.SELECT


Expr = (
    Literal | ColumnRef | Call | Compare | And | Or | Not | IsNull | InList | ProvPredicate
    | Exists | ScalarSubquery
)
BoundExpr = (
    Literal | BoundColumn | BoundAlias | BoundCall | Compare | And | Or | Not | IsNull | InList
    | ProvPredicate | Exists | ScalarSubquery
)


def operands(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of an expression node (a subquery's query is not one)."""
    return () if isinstance(node, Subquery) else node.children()


def walk(node: Node):
    """Pre-order walk of an expression, not descending into subqueries."""
    yield node
    for child in operands(node):
        yield from walk(child)


def conjuncts(expr: object | None) -> list:
    """Split a WHERE clause on its top-level ANDs."""
    if expr is None:
        return []
    if isinstance(expr, And):
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]
