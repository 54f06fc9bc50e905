"""What the two physical layers share: iql/spark/executor.py (Spark) and iql/duckdb/executor.py
(DuckDB), the two wings of IQL.

Both compile the same bound expressions and walk the same plans (both are visitors,
iql/visit.py); they differ only in how a
constant, a column, a null test and a membership test are made, which each supplies as four
small methods of `ExpressionCompiler`. Spark Columns and DuckDB expressions both overload the
comparison and boolean operators, so the rest of the compiler is common.
"""

from __future__ import annotations

import operator
from typing import Any

from iql import ast as A
from iql import plan as P
from iql.visit import Visitor

COMPARE = {
    A.CompOp.EQ: operator.eq,
    A.CompOp.NE: operator.ne,
    A.CompOp.LT: operator.lt,
    A.CompOp.LE: operator.le,
    A.CompOp.GT: operator.gt,
    A.CompOp.GE: operator.ge,
}


class ExpressionCompiler(Visitor):
    """Bound expressions -> an engine's expressions; subclasses give the four constructors.

    A visitor (iql/visit.py): expressions are `visit_<Node>(node, subst)`, and the executors
    add the plan's relations as `visit_<Relation>(rel, domains)`."""

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
            if target is node or (not isinstance(node, A.Literal) and target == node):
                return e
        return self.visit(node, subst)

    def visit_Literal(self, node: A.Literal, subst) -> Any:
        return self.lit(node.value)

    def visit_BoundColumn(self, node: A.BoundColumn, subst) -> Any:
        return self.col(P.cname(node.uid, node.name))

    def visit_Compare(self, node: A.Compare, subst) -> Any:
        return COMPARE[node.op](self.column(node.left, subst), self.column(node.right, subst))

    def visit_And(self, node: A.And, subst) -> Any:
        return self.column(node.left, subst) & self.column(node.right, subst)

    def visit_Or(self, node: A.Or, subst) -> Any:
        return self.column(node.left, subst) | self.column(node.right, subst)

    def visit_Not(self, node: A.Not, subst) -> Any:
        return ~self.column(node.operand, subst)

    def visit_IsNull(self, node: A.IsNull, subst) -> Any:
        return self.null_test(self.column(node.operand, subst), node.negated)

    def visit_InList(self, node: A.InList, subst) -> Any:
        items = [self.column(i, subst) for i in node.items]
        return self.in_list(self.column(node.operand, subst), items, node.negated)


def aggregate_calls(rel: P.Aggregate) -> list[A.BoundCall]:
    """The distinct aggregate calls in an Aggregate's outputs and HAVING, in order."""
    calls: list[A.BoundCall] = []
    for expr in [*(o.expr for o in rel.outputs), rel.having]:
        for node in A.walk(expr) if expr is not None else ():
            if isinstance(node, A.BoundCall) and node not in calls:
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
