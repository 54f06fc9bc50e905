"""Plans and expressions as text, for EXPLAIN (pure): two visitors (iql/visit.py)."""

from __future__ import annotations

from iql import ast as A
from iql import plan as P
from iql.visit import Visitor


def _lit(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def expr_text(node) -> str:
    """An expression in IQL-like syntax (subqueries shown as placeholders)."""
    return _EXPR.visit(node)


class _ExprText(Visitor):
    name = "explain"

    def visit_Literal(self, node) -> str:
        return _lit(node.value)

    def visit_ColumnRef(self, node) -> str:
        return str(node)

    visit_BoundColumn = visit_BoundAlias = visit_ColumnRef

    def visit_BoundCall(self, node) -> str:
        inner = "*" if node.arg is None else self.visit(node.arg)
        return f"{node.func.value}({'distinct ' if node.distinct else ''}{inner})"

    visit_Call = visit_BoundCall

    def visit_Compare(self, node) -> str:
        return f"{self.visit(node.left)} {node.op.value} {self.visit(node.right)}"

    def visit_And(self, node) -> str:
        return f"({self.visit(node.left)} AND {self.visit(node.right)})"

    def visit_Or(self, node) -> str:
        return f"({self.visit(node.left)} OR {self.visit(node.right)})"

    def visit_Not(self, node) -> str:
        return f"NOT {self.visit(node.operand)}"

    def visit_IsNull(self, node) -> str:
        return f"{self.visit(node.operand)} IS {'NOT ' if node.negated else ''}NULL"

    def visit_InList(self, node) -> str:
        items = ", ".join(self.visit(i) for i in node.items)
        return f"{self.visit(node.operand)} {'NOT ' if node.negated else ''}IN ({items})"

    def visit_ProvPredicate(self, node) -> str:
        return f"{self.visit(node.left)} {node.label} {self.visit(node.right)}"

    def visit_SubqueryExists(self, node) -> str:
        return "EXISTS(subquery" + _keys(node.keys) + ")"

    def visit_SubqueryValue(self, node) -> str:
        return "(scalar subquery" + _keys(node.keys) + ")"

    def visit_Exists(self, node) -> str:  # a bound subquery, before planning (binder messages)
        return type(node).__name__

    visit_ScalarSubquery = visit_Exists


_EXPR = _ExprText()


def _keys(keys) -> str:
    return " on " + ", ".join(k.alias for k in keys) if keys else ""


def _est(n: int | None) -> str:
    return "?" if n is None else str(n)


def _subplans(expr):
    for node in A.walk(expr):
        if isinstance(node, (P.SubqueryExists, P.SubqueryValue)):
            yield node


def relation_lines(rel, depth: int = 0, describe_trace=None) -> list[str]:
    """The plan tree under `rel`, one node per line; `describe_trace(scan)` (if given) adds
    how a TRACE scan runs on the store under its line."""
    return _PlanLines(describe_trace).visit(rel, depth)


class _PlanLines(Visitor):
    """A relation and its inputs as lines, indented by depth."""

    name = "explain"

    def __init__(self, describe_trace=None) -> None:
        self.describe_trace = describe_trace

    def sub(self, node, depth: int) -> list[str]:
        return self.visit(node, depth + 1)

    def visit_TraceScan(self, rel: P.TraceScan, depth: int) -> list[str]:
        pad, t = "  " * depth, rel.trace
        parts = [f"{pad}TraceScan {rel.source.alias}", "run " + ("last" if t.run is None else _lit(t.run)),
                 "match " + _lit(t.pattern_text)]
        if t.limit is not None:
            parts.append(f"limit {t.limit}")
        if rel.filters:
            parts.append("filter: " + " AND ".join(expr_text(f) for f in rel.filters))
        lines = ["  ".join(parts)]
        if self.describe_trace is not None:
            lines += [f"{pad}  {line}" for line in self.describe_trace(rel)]
        return lines

    def visit_Scan(self, rel: P.Scan, depth: int) -> list[str]:
        s = rel.source
        parts = [f"{'  ' * depth}Scan {s.display} {s.alias}"]
        if rel.ids is not None:
            parts.append("ids=[" + ", ".join(_lit(i) for i in rel.ids) + "]")
        if rel.outer:
            parts.append("ids from outer rows")
        if rel.filters:
            parts.append("filter: " + " AND ".join(expr_text(f) for f in rel.filters))
        if rel.attributes:
            parts.append("reads: " + ", ".join(rel.attributes))
        parts.append(f"est. rows {_est(rel.estimate)}")
        return ["  ".join(parts)]

    def visit_CrossJoin(self, rel: P.CrossJoin, depth: int) -> list[str]:
        return ([f"{'  ' * depth}CrossJoin  est. rows {_est(rel.estimate)}"]
                + self.sub(rel.left, depth) + self.sub(rel.right, depth))

    def visit_ProvJoin(self, rel: P.ProvJoin, depth: int) -> list[str]:
        p = rel.pred
        bound = [n for n, b in ((p.left.alias, rel.bound_left), (p.right.alias, rel.bound_right)) if b]
        kind = "semi-join" if rel.new is None else "join"
        head = (f"{'  ' * depth}ProvJoin {p.left.alias} {p.label} {p.right.alias}  ({kind}; bound: "
                f"{', '.join(bound) or 'none'}; est. rows {_est(rel.estimate)})")
        lines = [head] + self.sub(rel.input, depth)
        if rel.new is not None:
            lines += self.sub(rel.new, depth)
        return lines

    def visit_Filter(self, rel: P.Filter, depth: int) -> list[str]:
        pad = "  " * depth
        lines = [f"{pad}Filter {expr_text(rel.predicate)}"]
        for plan in _subplans(rel.predicate):
            lines.append(f"{pad}  subquery{_keys(plan.keys)}:")
            lines += self.visit(plan.plan.root, depth + 2)
        return lines + self.sub(rel.input, depth)

    def visit_Aggregate(self, rel: P.Aggregate, depth: int) -> list[str]:
        keys = ", ".join(expr_text(k) for k in rel.keys) or "()"
        outs = ", ".join(f"{expr_text(o.expr)} AS {o.name}" for o in rel.outputs)
        head = f"{'  ' * depth}Aggregate by {keys}: {outs}"
        if rel.having is not None:
            head += f"  having {expr_text(rel.having)}"
        return [head] + self.sub(rel.input, depth)

    def visit_Project(self, rel: P.Project, depth: int) -> list[str]:
        outs = ", ".join(f"{expr_text(o.expr)} AS {o.name}" for o in rel.outputs)
        return [f"{'  ' * depth}Project{' distinct' if rel.distinct else ''} {outs}"] + self.sub(rel.input, depth)

    def visit_Sort(self, rel: P.Sort, depth: int) -> list[str]:
        keys = ", ".join(
            (f"#{k.position + 1}" if k.position is not None else expr_text(k.expr))
            + (" desc" if k.descending else "") for k in rel.keys)
        return [f"{'  ' * depth}Sort {keys}"] + self.sub(rel.input, depth)

    def visit_Limit(self, rel: P.Limit, depth: int) -> list[str]:
        return [f"{'  ' * depth}Limit {rel.count}"] + self.sub(rel.input, depth)


def explain_lines(plan: P.QueryPlan, warnings: tuple[str, ...] = (), describe_trace=None) -> list[str]:
    """EXPLAIN output: the logical plan, then the strategy notes, then open-world warnings.
    `describe_trace(scan) -> lines` says how each TRACE scan runs (it reads the run's operators,
    so it needs the store; without it the plan stays pure)."""
    lines = ["plan:"] + ["  " + line for line in relation_lines(plan.root, 0, describe_trace)]
    lines += ["strategy:"] + ["  " + n for n in plan.notes]
    if warnings:
        lines += ["warnings:"] + ["  " + w for w in warnings]
    return lines
