"""Plans and expressions as text, for EXPLAIN (pure)."""

from __future__ import annotations

from iql import ast as A
from iql import plan as P


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
    if isinstance(node, A.Literal):
        return _lit(node.value)
    if isinstance(node, (A.BoundColumn, A.BoundAlias, A.ColumnRef)):
        return str(node)
    if isinstance(node, A.BoundCall):
        inner = "*" if node.arg is None else expr_text(node.arg)
        return f"{node.func.value}({'distinct ' if node.distinct else ''}{inner})"
    if isinstance(node, A.Compare):
        return f"{expr_text(node.left)} {node.op.value} {expr_text(node.right)}"
    if isinstance(node, A.And):
        return f"({expr_text(node.left)} AND {expr_text(node.right)})"
    if isinstance(node, A.Or):
        return f"({expr_text(node.left)} OR {expr_text(node.right)})"
    if isinstance(node, A.Not):
        return f"NOT {expr_text(node.operand)}"
    if isinstance(node, A.IsNull):
        return f"{expr_text(node.operand)} IS {'NOT ' if node.negated else ''}NULL"
    if isinstance(node, A.InList):
        items = ", ".join(expr_text(i) for i in node.items)
        return f"{expr_text(node.operand)} {'NOT ' if node.negated else ''}IN ({items})"
    if isinstance(node, A.ProvPredicate):
        return f"{expr_text(node.left)} {node.label} {expr_text(node.right)}"
    if isinstance(node, P.SubqueryExists):
        return "EXISTS(subquery" + _keys(node.keys) + ")"
    if isinstance(node, P.SubqueryValue):
        return "(scalar subquery" + _keys(node.keys) + ")"
    return type(node).__name__


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
    pad = "  " * depth

    def sub(node, d=depth + 1):
        return relation_lines(node, d, describe_trace)

    if isinstance(rel, P.TraceScan):
        t = rel.trace
        parts = [f"{pad}TraceScan {rel.source.alias}", "run " + ("last" if t.run is None else _lit(t.run)),
                 "match " + _lit(t.pattern_text)]
        if t.limit is not None:
            parts.append(f"limit {t.limit}")
        if rel.filters:
            parts.append("filter: " + " AND ".join(expr_text(f) for f in rel.filters))
        lines = ["  ".join(parts)]
        if describe_trace is not None:
            lines += [f"{pad}  {line}" for line in describe_trace(rel)]
        return lines
    if isinstance(rel, P.Scan):
        s = rel.source
        parts = [f"{pad}Scan {s.display} {s.alias}"]
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
    if isinstance(rel, P.CrossJoin):
        return ([f"{pad}CrossJoin  est. rows {_est(rel.estimate)}"]
                + sub(rel.left) + sub(rel.right))
    if isinstance(rel, P.ProvJoin):
        p = rel.pred
        bound = [n for n, b in ((p.left.alias, rel.bound_left), (p.right.alias, rel.bound_right)) if b]
        kind = "semi-join" if rel.new is None else "join"
        head = (f"{pad}ProvJoin {p.left.alias} {p.label} {p.right.alias}  ({kind}; bound: "
                f"{', '.join(bound) or 'none'}; est. rows {_est(rel.estimate)})")
        lines = [head] + sub(rel.input)
        if rel.new is not None:
            lines += sub(rel.new)
        return lines
    if isinstance(rel, P.Filter):
        lines = [f"{pad}Filter {expr_text(rel.predicate)}"]
        for plan in _subplans(rel.predicate):
            lines.append(f"{pad}  subquery{_keys(plan.keys)}:")
            lines += sub(plan.plan.root, depth + 2)
        return lines + sub(rel.input)
    if isinstance(rel, P.Aggregate):
        keys = ", ".join(expr_text(k) for k in rel.keys) or "()"
        outs = ", ".join(f"{expr_text(o.expr)} AS {o.name}" for o in rel.outputs)
        head = f"{pad}Aggregate by {keys}: {outs}"
        if rel.having is not None:
            head += f"  having {expr_text(rel.having)}"
        return [head] + sub(rel.input)
    if isinstance(rel, P.Project):
        outs = ", ".join(f"{expr_text(o.expr)} AS {o.name}" for o in rel.outputs)
        return [f"{pad}Project{' distinct' if rel.distinct else ''} {outs}"] + sub(rel.input)
    if isinstance(rel, P.Sort):
        keys = ", ".join(
            (f"#{k.position + 1}" if k.position is not None else expr_text(k.expr))
            + (" desc" if k.descending else "") for k in rel.keys)
        return [f"{pad}Sort {keys}"] + sub(rel.input)
    if isinstance(rel, P.Limit):
        return [f"{pad}Limit {rel.count}"] + sub(rel.input)
    raise TypeError(f"explain: unhandled plan node {type(rel).__name__}")


def explain_lines(plan: P.QueryPlan, warnings: tuple[str, ...] = (), describe_trace=None) -> list[str]:
    """EXPLAIN output: the logical plan, then the strategy notes, then open-world warnings.
    `describe_trace(scan) -> lines` says how each TRACE scan runs (it reads the run's operators,
    so it needs the store; without it the plan stays pure)."""
    lines = ["plan:"] + ["  " + line for line in relation_lines(plan.root, 0, describe_trace)]
    lines += ["strategy:"] + ["  " + n for n in plan.notes]
    if warnings:
        lines += ["warnings:"] + ["  " + w for w in warnings]
    return lines
