"""TRACE ['run'] MATCH 'pattern' [LIMIT n]: structural backtracing from IQL.

Binding checks the pattern (a tree-pattern syntax error points into the query text); planning
makes a :class:`TraceRelation`; executing matches the pattern on the run's stored annotated
result (table ``capture_result/<run>``) in Spark and backtraces the matches with
``capture.backtrace``. One row per node of each traced input item's tree.

``SELECT items FROM TRACE(['run'] MATCH 'pattern' [LIMIT n]) [t] [WHERE] [GROUP BY] [ORDER BY]
[LIMIT]`` queries those rows with IQL's expressions (columns of :data:`COLUMNS`, literals,
comparisons, AND/OR/NOT, IS NULL, IN lists, the aggregates count/min/max/sum/avg); it runs in
Spark over the trace rows. ``EXPLAIN`` before either prints :func:`explain`'s plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from iql import ast as A
from iql.errors import IqlRuntimeError, IqlSyntaxError

COLUMNS = ("dataset", "item", "item_id", "path", "role", "accessed_by", "manipulated_by")
_SCHEMA = ("dataset string, item string, item_id long, path string, role string, "
           "accessed_by array<int>, manipulated_by array<int>")


@dataclass(frozen=True, slots=True)
class TraceRelation:
    """The plan of a TRACE statement (a leaf: it reads the capture tables)."""

    run: str | None
    pattern: object  # capture.treepattern.Pattern
    limit: int | None
    query: A.TraceQuery | None = None
    text: str = ""  # the statement's source, for errors

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS if self.query is None else output_names(self.query)


def bind(trace: A.Trace, text: str) -> A.Trace:
    """Check the tree pattern now, pointing into the query on a syntax error."""
    from capture.treepattern import PatternError, parse_pattern

    try:
        parse_pattern(trace.pattern)
    except PatternError as e:
        first = e.message.splitlines()[0].replace("tree pattern: ", "")
        raise IqlSyntaxError.at(f"bad tree pattern in TRACE: {first}", trace.pattern_span, text,
                                hint=e.hint) from None
    if trace.query is not None:
        _check_query(trace.query, text)
    return trace


def plan(trace: A.Trace):
    from capture.treepattern import parse_pattern
    from iql import plan as P

    rel = TraceRelation(trace.run, parse_pattern(trace.pattern), trace.limit, trace.query)
    return P.QueryPlan(rel, rel.columns, (), ("trace: match the pattern on the run's stored result in Spark, "
                                              "then derive the id associations of the matched items only",))


def element_id(dataset: str, item_id: int) -> str:
    """The store element of a source item (capture/bundle.py naming)."""
    return f"dataset:{dataset}#{item_id & 0xFFFFFFFFFFFFFFFF:016x}"


def run_trace(store, run: str | None, pattern, limit: int | None = None, compiled: bool = True,
              timings: dict | None = None):
    """Match ``pattern`` on the run's stored result and backtrace the matches (a capture Trace).

    Reads the run's operators and row (pyarrow on a local store, else one job), matches on its
    stored annotated result (ONE job: the compiled pattern over the Parquet columns; the schema is
    the manifest's; the matched rows come back with their hidden columns), derives their
    associations and backtraces on the driver. ``timings`` (if given) receives the phases' seconds."""
    import time

    from capture.backtrace import load_run, trace_result

    t = timings if timings is not None else {}
    t0 = time.perf_counter()
    stored = load_run(store, run)
    t["run"] = time.perf_counter() - t0
    split = stored.outputs is not None
    out = trace_result(stored.operators, stored.result_oid, stored.outputs if split else stored.full,
                       stored.id_col, stored.visible, stored.slots, pattern, limit, compiled, t,
                       stored.hidden if split else None, stored.derived)
    t["total"] = time.perf_counter() - t0
    return out


def execute(store, rel: TraceRelation):
    trace = run_trace(store, rel.run, rel.pattern, rel.limit)
    rows = [(d, element_id(d, i), i, p, r, a, m) for d, i, p, r, a, m in trace.rows()]
    df = store.spark.createDataFrame(rows, _SCHEMA)
    return df if rel.query is None else apply_query(df, rel.query, rel.text)


def render_tree(rows) -> str:
    """TRACE rows as indented trees (one per input item), for the CLI and the REPL:

        tweets  dataset:tweets#e30a59a421e0f527
          retweet_cnt  influencing  accessed by 2
          text  contributing  accessed by 3,7,8; manipulated by 3,7,8
    """
    lines: list[str] = []
    current = None
    for dataset, item, _, path, role, accessed, manipulated in rows:
        if (dataset, item) != current:
            current = (dataset, item)
            lines.append(f"{dataset}  {item}")
        segs = path.split(".")
        ops = [f"{word} by {','.join(map(str, v))}" for word, v in (("accessed", accessed), ("manipulated", manipulated))
               if v]
        lines.append(f"{'  ' * len(segs)}{segs[-1]}  {role}" + (f"  {'; '.join(ops)}" if ops else ""))
    return "\n".join(lines)


# ---- SELECT ... FROM TRACE(...): IQL expressions over the trace rows ---------------------------
_OPS = {A.CompOp.EQ: "__eq__", A.CompOp.NE: "__ne__", A.CompOp.LT: "__lt__", A.CompOp.LE: "__le__",
        A.CompOp.GT: "__gt__", A.CompOp.GE: "__ge__"}
_HINT_COLUMNS = "trace rows have the columns " + ", ".join(COLUMNS)


def _item_name(item: A.SelectItem) -> str:
    if item.alias:
        return item.alias
    if isinstance(item.expr, A.ColumnRef):
        return item.expr.name
    if isinstance(item.expr, A.Call):
        return item.expr.func.value
    return "expr"


def output_names(query: A.TraceQuery) -> tuple[str, ...]:
    return COLUMNS if query.items is None else tuple(_item_name(i) for i in query.items)


def _check_expr(node, query: A.TraceQuery, text: str, aggregates: bool) -> None:
    from iql.errors import IqlSemanticError

    if isinstance(node, A.ColumnRef):
        if node.alias is not None and node.alias != query.alias:
            raise IqlSemanticError.at(f"unknown alias '{node.alias}' in a query over TRACE", node.span, text,
                                      hint=f"name the trace: FROM TRACE(...) {node.alias}, or drop the alias")
        if node.name not in COLUMNS:
            raise IqlSemanticError.at(f"trace rows have no column '{node.name}'", node.span, text,
                                      hint=_HINT_COLUMNS)
        return
    if isinstance(node, A.Literal):
        return
    if isinstance(node, A.Call):
        if not aggregates:
            raise IqlSemanticError.at(f"{node.func.value}(...) is not allowed here", node.span, text,
                                      hint="aggregates go in the SELECT list (with GROUP BY for the rest)")
        if node.arg is not None:
            _check_expr(node.arg, query, text, False)
        return
    kids = {A.Compare: ("left", "right"), A.And: ("left", "right"), A.Or: ("left", "right"),
            A.Not: ("operand",), A.IsNull: ("operand",)}
    if isinstance(node, A.InList):
        for n in (node.operand, *node.items):
            _check_expr(n, query, text, False)
        return
    for kind, fields in kids.items():
        if isinstance(node, kind):
            for f in fields:
                _check_expr(getattr(node, f), query, text, False)
            return
    raise IqlSemanticError.at(f"{type(node).__name__} is not available over trace rows", node.span, text,
                              hint="use comparisons, AND/OR/NOT, IS NULL and IN over " + ", ".join(COLUMNS))


def _check_query(query: A.TraceQuery, text: str) -> None:
    from iql.errors import IqlSemanticError

    items = query.items or ()
    for item in items:
        _check_expr(item.expr, query, text, True)
    if query.where is not None:
        _check_expr(query.where, query, text, False)
    for g in query.group_by:
        if not isinstance(g, A.ColumnRef):
            raise IqlSemanticError.at("GROUP BY over a trace takes column names", g.span, text, hint=_HINT_COLUMNS)
        _check_expr(g, query, text, False)
    grouped = bool(query.group_by) or any(isinstance(i.expr, A.Call) for i in items)
    if grouped:
        if query.items is None:
            raise IqlSemanticError.at("SELECT * cannot be grouped", query.span, text,
                                      hint="name the grouped columns and aggregates")
        keys = {g.name for g in query.group_by}
        for item in items:
            if not isinstance(item.expr, A.Call) and not (isinstance(item.expr, A.ColumnRef) and item.expr.name in keys):
                raise IqlSemanticError.at("with GROUP BY or aggregates, every other SELECT item must be a "
                                          "grouped column", item.span, text,
                                          hint="add it to GROUP BY, or aggregate it, e.g. count(distinct path)")
    names = output_names(query)
    for o in query.order_by:
        e = o.expr
        ok = (isinstance(e, A.Literal) and isinstance(e.value, int) and not isinstance(e.value, bool)
              and 1 <= e.value <= len(names)) or (isinstance(e, A.ColumnRef) and e.name in names)
        if not ok:
            raise IqlSemanticError.at("ORDER BY over a trace names a SELECT column or its position", e.span, text,
                                      hint="the SELECT columns are " + ", ".join(names))


def _expr(node):
    from pyspark.sql import functions as F

    if isinstance(node, A.ColumnRef):
        return F.col(node.name)
    if isinstance(node, A.Literal):
        return F.lit(node.value)
    if isinstance(node, A.Compare):
        return getattr(_expr(node.left), _OPS[node.op])(_expr(node.right))
    if isinstance(node, A.And):
        return _expr(node.left) & _expr(node.right)
    if isinstance(node, A.Or):
        return _expr(node.left) | _expr(node.right)
    if isinstance(node, A.Not):
        return ~_expr(node.operand)
    if isinstance(node, A.IsNull):
        return _expr(node.operand).isNotNull() if node.negated else _expr(node.operand).isNull()
    if isinstance(node, A.InList):
        c = _expr(node.operand).isin(*[_expr(i) for i in node.items])
        return ~c if node.negated else c
    if isinstance(node, A.Call):
        if node.arg is None:
            return F.count(F.lit(1))
        arg = _expr(node.arg)
        if node.distinct and node.func is A.AggFunc.COUNT:
            return F.countDistinct(arg)
        if node.distinct and node.func is A.AggFunc.SUM:
            return F.sum_distinct(arg)
        return getattr(F, {"avg": "avg", "count": "count", "min": "min", "max": "max", "sum": "sum"}[node.func.value])(arg)
    raise IqlRuntimeError(f"cannot evaluate {type(node).__name__} over trace rows")


def apply_query(df, query: A.TraceQuery, text: str = ""):
    """The SELECT around a TRACE, in Spark over the trace rows ``df`` (checked by bind)."""
    names = output_names(query)
    if query.where is not None:
        df = df.filter(_expr(query.where))
    items = query.items
    if items is not None:
        cols = [_expr(i.expr).alias(n) for i, n in zip(items, names, strict=True)]
        if query.group_by or any(isinstance(i.expr, A.Call) for i in items):
            keys = [g.name for g in query.group_by]
            aggs = [c for i, c in zip(items, cols, strict=True) if isinstance(i.expr, A.Call)]
            df = df.groupBy(*keys).agg(*aggs) if aggs else df.select(*keys).distinct()
            df = df.select(*[f"`{n}`" if isinstance(i.expr, A.Call) or i.alias is None else
                             df[i.expr.name].alias(n) for i, n in zip(items, names, strict=True)])
        else:
            df = df.select(*cols)
    if query.distinct:
        df = df.distinct()
    if query.order_by:
        order = []
        for o in query.order_by:
            name = names[o.expr.value - 1] if isinstance(o.expr, A.Literal) else o.expr.name
            c = df[f"`{name}`"]
            order.append(c.desc_nulls_last() if o.descending else c.asc_nulls_first())
        df = df.orderBy(*order)
    if query.limit is not None:
        df = df.limit(query.limit)
    return df


# ---- EXPLAIN TRACE -----------------------------------------------------------------------------
def explain(store, trace: A.Trace) -> list[str]:
    """The plan of a TRACE: the run, how the pattern is matched (compiled to Spark expressions or
    not, and why), the operators the backtrace walks and which associations it reads, and the
    SELECT applied to the rows. Reads the run's operators (one job); matches nothing.
    """
    from capture.backtrace import load_run, prepare_items, walk
    from capture.treepattern import parse_pattern
    from iql.explain import expr_text

    stored = load_run(store, trace.run)
    pattern = parse_pattern(trace.pattern)
    prep = prepare_items(*stored.match_source(), stored.visible, pattern)
    name = stored.run
    lines = [f"Trace run {name!r}" + (f", the first {trace.limit} matching result items" if trace.limit else "")]
    lines += ["  " + line for line in prep.plan.describe()]
    if stored.outputs is not None:
        lines.append("  then the matched rows' hidden columns, by row key (the run's stored copy is split): "
                     "pyarrow reads their row groups on a local store, else a broadcast join")
    lines.append("  backtrace (Pebble Algorithms 1-4), from the result operator back to the sources:")
    for op, how in walk(stored.operators, stored.result_oid):
        preds = ",".join(str(i.pred) for i in op.inputs)
        lines.append(f"    {op.oid} {op.type.value} ({op.method}{' <- ' + preds if preds else ''}): {how}")
    q = trace.query
    if q is not None:
        lines.append("  then over the trace rows (Spark):")
        if q.where is not None:
            lines.append(f"    where {expr_text(q.where)}")
        if q.group_by:
            lines.append("    group by " + ", ".join(expr_text(g) for g in q.group_by))
        lines.append(("    select distinct " if q.distinct else "    select ") + ", ".join(output_names(q)))
        if q.order_by:
            lines.append("    order by " + ", ".join(expr_text(o.expr) + (" desc" if o.descending else "")
                                                    for o in q.order_by))
        if q.limit is not None:
            lines.append(f"    limit {q.limit}")
    return lines
