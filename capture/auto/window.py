"""Spark's ``Window`` node as Pebble's operators: a window value is influenced by its partition's
rows and built from its frame's (docs/capture.md, "Window").

A window keeps its input rows and adds, per row and window expression, a value computed over
the row's partition. :func:`translate` records it as what it computes:

* **the partition**: an aggregation of the input (members: every row of the row's partition;
  A = the partition and order keys, M = each key -> a column ``_strata_w<i>``), joined back to
  each row on the partition keys;
* **a frame**, per distinct frame of the aggregate and offset functions (``sum``, ``avg``,
  ``lag``, ``lead``, ``nth_value``, ``first`` …): an aggregation whose output item is one row's
  frame (members: the rows of that frame; A = the partition and order keys, M = the function's
  arguments -> ``_strata_f<j>``), joined to the row. A frame that is the whole partition *is* the
  partition's aggregation (no second copy of the same members);
* a select named ``window`` reading the row's own partition and order keys and the partition's
  (``_strata_w<i>``: every row of the partition influences every value of it), with M = each
  input column to itself, each framed value ``_strata_f<j>`` -> its column, and for ranking
  functions (``row_number``, ``rank`` …, whose value is the row's place in its partition) the
  row's own keys -> its column.

All of it is computed in one pass: the program's Window node over the annotated input, and over
it a second Window node (same partition and order) with ``collect_list`` of the input's stored
hidden columns (or bare ids: ``grouping.member``) over each aggregation's frame; Spark collapses
the two into one Window operator (one shuffle, one sort). Output ids are stored for the
aggregations (the partition key's hash, or the row's id for a per-row frame) and derived for the
joins.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import functions as F
from pyspark.sql.types import _parse_datatype_json_string

from capture.id_columns import named, resolver
from capture.ids import JOIN, Derived, top
from capture.operators import InRef, Manipulation, OperatorProv, OpInput, OpType, Slot, column_paths
from capture.tracking.frame import TrackedDataFrame
from capture.tracking.grouping import collect, key_hash
from capture.tracking.paths import accesses, aggregate_pairs, analyzed, attr_map, cls, has_udf, out_pairs, seq
from capture.tracking.project import column_of

# the value is the row's place in its ordered partition: built from the row's own keys
_RANKING = frozenset({"RowNumber", "Rank", "DenseRank", "PercentRank", "CumeDist", "NTile"})
# the value is one other row's (Spark's frame for them is that one row: ROWS n PRECEDING/FOLLOWING)
_OFFSET = frozenset({"Lag", "Lead"})
# the value is built from the rows of its frame
_FRAMED = frozenset({"AggregateExpression", "NthValue", "PythonUDF", "PythonUDAF"}) | _OFFSET


@dataclass
class _Group:
    """One aggregation of the window's input: the rows of a frame, or of the whole partition."""

    spec: object  # the WindowSpecDefinition its members are collected over
    whole: bool  # the frame is the whole partition (the partition's own aggregation)
    values: list[int] = field(default_factory=list)  # the window expressions built from it
    oid: int = 0

    @property
    def agg(self) -> str:
        return f"__strata_agg_{self.oid}"

    @property
    def idk(self) -> str:
        return f"__strata_id_{self.oid}"

    def outputs(self, wcols: list[str]) -> list[str]:
        """Its visible output columns: the partition's keys (the partition), then its values."""
        return [*(wcols if self.whole else []), *(f"_strata_f{j}" for j in self.values)]


def translate(walk, node, refuse) -> TrackedDataFrame:
    """The tracked DataFrame of Window ``node`` (``walk``: the plan walk; ``refuse(node, reason)``
    builds its refusal)."""
    exprs = seq(node.windowExpressions())
    groups = _groups(walk, node, exprs, refuse)
    child = walk.child(node)
    tracker = child.tracker
    keys, order = seq(node.partitionSpec()), seq(node.orderSpec())
    attrs = attr_map([analyzed(child.annotated)])
    place = tuple(a.path for a in accesses(keys + order, attrs))
    wcols = [f"_strata_w{i}" for i in range(len(keys) + len(order))]

    joins: list[tuple[int, str, str, str]] = []  # (oid, id column, left id, right id)
    ops: list[OperatorProv] = []
    left, row = child.id_column, (child.oid, column_paths(child.visible()))
    for n, g in enumerate(groups):
        g.oid = tracker._new_oid()
        ops.append(_group_op(g, child.oid, keys, order, exprs, attrs, place, child.visible()))
        joid = tracker._new_oid()
        joins.append((joid, f"__strata_id_{joid}", left, g.idk))
        ops.append(_join_op(joid, n, row, g, keys, attrs, wcols))
        left, row = joins[-1][1], (joid, [*row[1], *g.outputs(wcols)])

    df = _compute(walk, node, child, groups, joins, keys)
    derived = [*child._derived, *(d.nested_in(g.agg) for g in groups for d in child._derived),
               *(Derived(idk, JOIN, oid, (lft, rgt)) for oid, idk, lft, rgt in joins)]
    slots = list(child._slots)
    for g, (oid, idk, lft, rgt) in zip(groups, joins, strict=True):
        own = Slot(g.oid, g.idk, InRef(child.id_column), array=g.agg)
        slots += [*(s.nested_in(g.agg).repeated() for s in child._slots),
                  own.repeated() if g.whole else own,  # one partition item per row of it
                  Slot(oid, idk, InRef(lft, 0)), Slot(oid, idk, InRef(rgt, 1))]
    for op in ops:
        tracker._register(op)
    last = ops[-1]
    select = OperatorProv(tracker._new_oid(), OpType.SELECT, "window", (OpInput(last.oid, (*place, *wcols)),),
                          _select_pairs(child, exprs, attrs), detail=str(node.simpleString(25)))
    carrier = TrackedDataFrame(tracker, df, last.oid, left, tuple(slots), tuple(dict.fromkeys(derived)))
    return carrier._next(df, select)


def _groups(walk, node, exprs, refuse) -> list[_Group]:
    """The aggregations the window expressions are built from: the whole partition first (made
    up when no expression's frame is the whole partition), then one per other distinct frame."""
    groups: dict[str, _Group] = {}
    for j, e in enumerate(exprs):
        we = e.child() if cls(e) == "Alias" else e
        if cls(we) != "WindowExpression":
            raise refuse(node, f"a window expression capture cannot read ({cls(we)})")
        fn = we.windowFunction()
        kind = cls(fn)
        if kind in _RANKING:
            continue
        if kind not in _FRAMED:
            raise refuse(node, f"window function {kind}: no provenance rule for it yet")
        if kind in _OFFSET and fn.ignoreNulls():
            raise refuse(node, f"{kind.lower()} with ignoreNulls takes its value from a row outside its one-row "
                               "frame; not yet")
        frame = we.windowSpec().frameSpecification()
        if cls(frame) != "SpecifiedWindowFrame":
            raise refuse(node, f"a window frame Spark left unspecified ({cls(frame)})")
        whole = cls(frame.lower()) == "UnboundedPreceding$" and cls(frame.upper()) == "UnboundedFollowing$"
        groups.setdefault("whole" if whole else str(frame.toString()), _Group(we.windowSpec(), whole)).values.append(j)
    whole = groups.pop("whole", None) or _Group(_whole_spec(walk, node), True)
    return [whole, *groups.values()]


def _whole_spec(walk, node):
    """The node's partition and order with the frame ROWS BETWEEN UNBOUNDED PRECEDING AND
    UNBOUNDED FOLLOWING (the same partition and order: Spark collapses it into the node)."""
    ex = getattr(walk.jvm, "org.apache.spark.sql.catalyst.expressions")

    def obj(name: str):
        return getattr(getattr(ex, name), "MODULE$")

    frame = ex.SpecifiedWindowFrame(obj("RowFrame$"), obj("UnboundedPreceding$"), obj("UnboundedFollowing$"))
    return ex.WindowSpecDefinition(node.partitionSpec(), node.orderSpec(), frame)


def _function(expr):
    return (expr.child() if cls(expr) == "Alias" else expr).windowFunction()


def _group_op(g: _Group, pred: int, keys, order, exprs, attrs, place, cols: list[str]) -> OperatorProv:
    fns = [_function(exprs[j]) for j in g.values]
    method = "window.partition" if g.whole else "window.frame"
    detail = str(g.spec.sql())
    if any(has_udf(f) for f in fns):  # a Python aggregate over the frame: Pebble's map rule
        return OperatorProv(g.oid, OpType.AGGREGATION, method, (OpInput(pred, None),), None, detail=detail)
    pairs: list[Manipulation] = []
    if g.whole:
        pairs += [m for i, e in enumerate(keys + order) for m in out_pairs(e, f"_strata_w{i}", attrs, {})]
    for j, fn in zip(g.values, fns, strict=True):
        # lag/lead: the other row's input (its default is the row's own: the select maps it)
        pairs += aggregate_pairs(fn.input() if cls(fn) in _OFFSET else fn, f"_strata_f{j}", attrs, cols)
    return OperatorProv(g.oid, OpType.AGGREGATION, method, (OpInput(pred, place),), tuple(dict.fromkeys(pairs)),
                        detail=detail)


def _join_op(oid: int, n: int, left: tuple[int, list[str]], g: _Group, keys, attrs, wcols) -> OperatorProv:
    """The n-th join: the row (``left``: its operator and columns; the input, or the previous
    join's output) with group ``g``'s item, on the partition keys for the partition (n = 0), on
    the row itself for a frame."""
    pred, cols = left
    pairs = [*(Manipulation(0, c, c) for c in cols), *(Manipulation(1, c, c) for c in g.outputs(wcols))]
    if n == 0:
        inputs = (OpInput(pred, tuple(a.path for a in accesses(keys, attrs))), OpInput(g.oid, tuple(wcols[:len(keys)])))
    else:
        inputs = (OpInput(pred, ()), OpInput(g.oid, ()))
    return OperatorProv(oid, OpType.JOIN, "window.join", inputs, tuple(pairs),
                        detail="the row with its partition" if n == 0 else "the row with its frame")


def _select_pairs(child, exprs, attrs) -> tuple[Manipulation, ...]:
    cols = child.visible()
    out = column_paths([*cols, *(e.name() for e in exprs)])  # the node's output: the row's, then the values
    pairs = [Manipulation(0, c, o) for c, o in zip(column_paths(cols), out, strict=False)]
    for j, e in enumerate(exprs):
        we = e.child() if cls(e) == "Alias" else e
        fn = we.windowFunction()
        dst = out[len(cols) + j]
        if cls(fn) in _RANKING:
            pairs += out_pairs(we, dst, attrs, {})
            continue
        pairs.append(Manipulation(0, f"_strata_f{j}", dst))
        if cls(fn) in _OFFSET:
            pairs += out_pairs(fn.default(), dst, attrs, {})
    return tuple(dict.fromkeys(pairs))


def _compute(walk, node, child, groups: list[_Group], joins, keys):
    """The program's window over the annotated input, each group's members collected over its
    frame by a second Window node of the same partition and order, and the id columns."""
    spark = walk.spark
    # each group's members (stored hidden columns, or the bare id) collected by an aggregate of its own
    probe = child.annotated.agg(*[collect(child, named).alias(f"_{i}") for i in range(len(groups))])
    aggs = [a.child() for a in seq(analyzed(probe).aggregateExpressions())]
    ex = getattr(walk.jvm, "org.apache.spark.sql.catalyst.expressions")
    new_id = getattr(getattr(ex, "NamedExpression$"), "MODULE$").newExprId
    extras = [walk.alias(ex.WindowExpression(a, g.spec), g.agg, new_id()) for a, g in zip(aggs, groups, strict=True)]
    windowed = analyzed(walk.replant(node, child.annotated))
    df = walk.frame(node.copy(walk.seq_of(extras), node.partitionSpec(), node.orderSpec(), windowed, node.hint()))
    types = [_parse_datatype_json_string(k.dataType().json()) for k in keys]
    ids = [key_hash(groups[0].oid, [column_of(spark, k) for k in keys], types).alias(groups[0].idk)]
    ids += [F.xxhash64(F.lit(g.oid), named(child.id_column)).alias(g.idk) for g in groups[1:]]
    df = df.select(*[column_of(spark, a) for a in seq(analyzed(df).output())], *ids)
    level = top(Derived(idk, JOIN, oid, (lft, rgt)) for oid, idk, lft, rgt in joins)
    resolve = resolver(level, named)
    return df.select(*[column_of(spark, a) for a in seq(analyzed(df).output())],
                     *[resolve(idk).alias(idk) for _, idk, _, _ in joins])
