"""What the two physical layers share: iql/executor.py (Spark) and iql/local_executor.py (DuckDB).

Both compile the same bound expressions and walk the same plans; they differ only in how a
constant, a column, a null test and a membership test are made, which each supplies as four
small methods of `ExpressionCompiler`. Spark Columns and DuckDB expressions both overload the
comparison and boolean operators, so the rest of the compiler is common.
"""

from __future__ import annotations

import operator
from typing import Any

from iql import ast as A
from iql import plan as P
from iql.binder import same

COMPARE = {
    A.CompOp.EQ: operator.eq,
    A.CompOp.NE: operator.ne,
    A.CompOp.LT: operator.lt,
    A.CompOp.LE: operator.le,
    A.CompOp.GT: operator.gt,
    A.CompOp.GE: operator.ge,
}


class ExpressionCompiler:
    """Bound expressions -> an engine's expressions; subclasses give the four constructors."""

    name = "executor"

    def lit(self, value: Any) -> Any:
        raise NotImplementedError

    def col(self, name: str) -> Any:
        raise NotImplementedError

    def null_test(self, e: Any, negated: bool) -> Any:
        raise NotImplementedError

    def in_list(self, e: Any, items: list[Any], negated: bool) -> Any:
        raise NotImplementedError

    def column(self, node, subst) -> Any:
        """Compile a bound expression (values become the engine's constants, never text).

        `subst` maps nodes already computed as columns (provenance predicates, subqueries,
        aggregates) to those columns."""
        for target, e in subst:
            if target is node or (not isinstance(node, A.Literal) and same(target, node)):
                return e
        if isinstance(node, A.Literal):
            return self.lit(node.value)
        if isinstance(node, A.BoundColumn):
            return self.col(P.cname(node.uid, node.name))
        if isinstance(node, A.Compare):
            return COMPARE[node.op](self.column(node.left, subst), self.column(node.right, subst))
        if isinstance(node, A.And):
            return self.column(node.left, subst) & self.column(node.right, subst)
        if isinstance(node, A.Or):
            return self.column(node.left, subst) | self.column(node.right, subst)
        if isinstance(node, A.Not):
            return ~self.column(node.operand, subst)
        if isinstance(node, A.IsNull):
            return self.null_test(self.column(node.operand, subst), node.negated)
        if isinstance(node, A.InList):
            items = [self.column(i, subst) for i in node.items]
            return self.in_list(self.column(node.operand, subst), items, node.negated)
        raise TypeError(f"{self.name}: cannot compile {type(node).__name__} here")

    def relation(self, rel, domains):
        """Dispatch a plan node to this layer's `visit_<Node>`."""
        method = getattr(self, f"visit_{type(rel).__name__}", None)
        if method is None:
            raise TypeError(f"{self.name}: unhandled plan node {type(rel).__name__}")
        return method(rel, domains)


def aggregate_calls(rel: P.Aggregate) -> list[A.BoundCall]:
    """The distinct aggregate calls in an Aggregate's outputs and HAVING, in order."""
    calls: list[A.BoundCall] = []
    for expr in [*(o.expr for o in rel.outputs), rel.having]:
        for node in A.walk(expr) if expr is not None else ():
            if isinstance(node, A.BoundCall) and not any(same(node, c) for c in calls):
                calls.append(node)
    return calls


def marks_needed(expr) -> bool:
    """True when `expr` holds a provenance predicate or a subquery (computed as a column first)."""
    return any(isinstance(n, (A.ProvPredicate, P.SubqueryExists, P.SubqueryValue)) for n in A.walk(expr))


def top(rel):
    """The plan node under any Sort and Limit."""
    while isinstance(rel, (P.Sort, P.Limit)):
        rel = rel.input
    return rel
