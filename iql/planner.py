"""Bound AST -> logical plan (pure: no Spark).

FROM is logically a cross product; the planner instead starts from the most selective alias
(an id pinned by `x.id = 'lit'`, then filtered or typed scans), and turns each positive
top-level provenance predicate into a `ProvJoin` that evaluates the predicate from the side
already bound. Single-alias filters are pushed into the scans; everything else (OR, NOT,
subqueries) is a `Filter` placed as soon as the aliases it needs are bound. Subqueries are
decorrelated: a correlated subquery is planned with its outer aliases as extra scans whose
ids come from the enclosing rows, and returns those ids as keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from iql import ast as A
from iql import plan as P
from iql.errors import IqlSemanticError
from iql.visit import Visitor


@dataclass(frozen=True)
class Stats:
    """What the planner may know about the data: vertex counts per type key and per kind,
    whether a component index exists, and whether its influence scopes are current (then a
    bound `under` / `influences` reads only the scopes it reaches). All optional; unknown counts
    show as '?'."""

    type_counts: Mapping[str, int] = field(default_factory=dict)
    kind_counts: Mapping[str, int] = field(default_factory=dict)
    index: bool = False
    pruning: bool = False

    def count(self, source: A.BoundSource) -> int | None:
        if source.type_key is not None:
            return self.type_counts.get(source.type_key, 0) if self.type_counts else None
        if not self.kind_counts:
            return None
        if source.kind is None:
            return sum(self.kind_counts.values())
        return self.kind_counts.get(source.kind, 0)


_SUBQUERY = (A.Exists, A.ScalarSubquery)


def refs(expr) -> set[str]:
    """uids of the sources an expression needs bound (subqueries: their correlated sources)."""
    out: set[str] = set()
    for node in A.walk(expr):
        if isinstance(node, (A.BoundColumn, A.BoundAlias)):
            out.add(node.uid)
        elif isinstance(node, _SUBQUERY):
            out |= {s.uid for s in node.query.correlated}
        elif isinstance(node, (P.SubqueryExists, P.SubqueryValue)):
            out |= {s.uid for s in node.keys}
    return out


def _pinned_ids(expr) -> tuple[str, ...] | None:
    """The ids of `x.id = 'lit'`, `'lit' = x.id` or `x.id IN ('a', 'b')`, else None."""
    if isinstance(expr, A.Compare) and expr.op is A.CompOp.EQ:
        for col, lit in ((expr.left, expr.right), (expr.right, expr.left)):
            if (isinstance(col, A.BoundColumn) and col.name == "id" and isinstance(lit, A.Literal)
                    and isinstance(lit.value, str)):
                return (lit.value,)
    if isinstance(expr, A.InList) and not expr.negated and isinstance(expr.operand, A.BoundColumn):
        if expr.operand.name == "id" and all(
            isinstance(i, A.Literal) and isinstance(i.value, str) for i in expr.items
        ):
            return tuple(dict.fromkeys(i.value for i in expr.items))
    return None


def _rank(scan: P.Scan | P.TraceScan) -> tuple[int, int]:
    """Lower is more selective: pinned ids, outer-bound, filtered or a TRACE (the rows of the
    matched items only), typed, wildcard."""
    if isinstance(scan, P.TraceScan):
        tier = 2
    elif scan.ids is not None:
        tier = 0
    elif scan.outer:
        tier = 1
    elif scan.filters:
        tier = 2
    elif scan.source.wildcard is None:
        tier = 3
    else:
        tier = 4
    return (tier, scan.estimate if scan.estimate is not None else 0)


def _estimate(rel) -> int | None:
    if isinstance(rel, (P.Scan, P.TraceScan, P.CrossJoin, P.ProvJoin)):
        return rel.estimate
    return _estimate(rel.input) if hasattr(rel, "input") else None


def _mul(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a * b


class _Planner(Visitor):
    name = "planner"

    def __init__(self, stats: Stats, text: str) -> None:
        self.stats = stats
        self.text = text
        self.notes: list[str] = []

    def attributes(self, q: A.BoundSelect, exists: bool) -> dict[str, list[str]]:
        outputs = () if exists else q.outputs
        exprs = [q.where, q.having, *q.group_by, *(o.expr for o in outputs),
                 *(o.expr for o in q.order_by if o.expr is not None)]
        used: dict[str, list[str]] = {}
        for expr in exprs:
            if expr is None:
                continue
            for node in A.walk(expr):
                if isinstance(node, A.BoundColumn) and node.name != "id":
                    names = used.setdefault(node.uid, [])
                    if node.name not in names:
                        names.append(node.name)
        return used

    def scans(self, q: A.BoundSelect, pushed: dict[str, list], exists: bool
              ) -> dict[str, P.Scan | P.TraceScan]:
        used = self.attributes(q, exists)
        out: dict[str, P.Scan | P.TraceScan] = {}
        for source, outer in [(s, True) for s in q.correlated] + [(s, False) for s in q.sources]:
            if source.trace is not None:
                out[source.uid] = P.TraceScan(source, tuple(pushed.get(source.uid, ())),
                                              columns=tuple(used.get(source.uid, ())))
                continue
            ids: tuple[str, ...] | None = None
            filters = []
            for f in pushed.get(source.uid, []):
                pinned = _pinned_ids(f)
                if pinned is not None:
                    ids = pinned if ids is None else tuple(i for i in ids if i in pinned) or ("",)
                else:
                    filters.append(f)
            est = len(ids) if ids is not None else self.stats.count(source)
            if est is not None and filters:
                est = max(1, est // 10)
            out[source.uid] = P.Scan(source, tuple(used.get(source.uid, ())), ids, tuple(filters),
                                     outer, est)
        return out

    def where(self, q: A.BoundSelect, exists: bool = False):
        """Plan FROM + WHERE: scans, provenance joins, pushed and residual filters."""
        local = {s.uid for s in q.sources} | {s.uid for s in q.correlated}
        provs, residual, pushed = [], [], {}
        for c in A.conjuncts(q.where):
            c = self.expr(c)
            r = refs(c)
            if isinstance(c, A.ProvPredicate):
                provs.append(c)
            elif (len(r) == 1 and r <= local and not any(
                    isinstance(n, (*_SUBQUERY, P.SubqueryExists, P.SubqueryValue, A.ProvPredicate))
                    for n in A.walk(c))):
                pushed.setdefault(next(iter(r)), []).append(c)
            else:
                residual.append((c, r))
        scans = self.scans(q, pushed, exists)
        remaining = dict(scans)
        start = min(remaining.values(), key=_rank)
        del remaining[start.source.uid]
        joined = {start.source.uid}
        rel: P.Relation = start
        self.notes.append(f"start from {self._describe(start)}")
        while True:
            rel, provs, residual = self.apply_ready(rel, joined, provs, residual)
            if not remaining:
                break
            candidates = [p for p in provs if (p.left.uid in joined) != (p.right.uid in joined)]
            if candidates:
                pred = min(candidates, key=lambda p: _rank(remaining[
                    p.right.uid if p.left.uid in joined else p.left.uid]))
                provs.remove(pred)
                new_uid = pred.right.uid if pred.left.uid in joined else pred.left.uid
                new = remaining.pop(new_uid)
                # influences expands from one bound side (store.spark.semantics starts from src when
                # it is given): bind only the side already joined, the more selective one, and
                # let the join with the new scan filter the other end. The other predicates
                # use a bound side only as a semi-join filter, so bind it whenever it helps.
                bind_new = (new.restricted or new.source.wildcard is None) and (
                    pred.kind is not A.ProvKind.INFLUENCES)
                left_bound = True if pred.left.uid in joined else bind_new
                right_bound = True if pred.right.uid in joined else bind_new
                est = self._join_estimate(_estimate(rel), new.estimate)
                rel = P.ProvJoin(rel, pred, new, left_bound, right_bound, est)
                self.notes.append(self._prov_note(pred, left_bound, right_bound, joined))
                joined.add(new_uid)
            else:
                new = min(remaining.values(), key=_rank)
                del remaining[new.source.uid]
                joined.add(new.source.uid)
                rel = P.CrossJoin(rel, new, _mul(_estimate(rel), new.estimate))
                self.notes.append(f"cross product with {self._describe(new)} (no predicate links it)")
        return rel

    def apply_ready(self, rel, joined, provs, residual):
        for pred in [p for p in provs if p.left.uid in joined and p.right.uid in joined]:
            provs.remove(pred)
            rel = P.ProvJoin(rel, pred, None, True, True, _estimate(rel))
            self.notes.append(self._prov_note(pred, True, True, joined) + " (as a semi-join)")
        ready = [(c, r) for c, r in residual if r <= joined]
        for c, _ in ready:
            rel = P.Filter(rel, c)
        return rel, provs, [(c, r) for c, r in residual if not r <= joined]

    @staticmethod
    def _join_estimate(a: int | None, b: int | None) -> int | None:
        if a is None or b is None:
            return None
        return max(a, b)

    @staticmethod
    def _describe(scan: P.Scan | P.TraceScan) -> str:
        s = scan.source
        if isinstance(scan, P.TraceScan):
            t = scan.trace
            run = f"run {t.run!r}" if t.run is not None else "the last captured run"
            items = "the matched items" if t.limit is None else f"the first {t.limit} matched items"
            asked = [c for c in ("source", "value") if c in scan.columns]
            back = f"; then find the traced input items in the run's inputs for {' and '.join(asked)}" if asked else ""
            return (f"TRACE {s.alias} (match the tree pattern on the stored result of {run}, then "
                    f"backtrace {items}{back})")
        how = []
        if scan.ids is not None:
            how.append(f"id pinned to {len(scan.ids)} element(s)")
        if scan.outer:
            how.append("ids bound by the enclosing query")
        if scan.filters:
            how.append(f"{len(scan.filters)} filter(s) pushed down")
        est = "?" if scan.estimate is None else str(scan.estimate)
        return f"{s.display} {s.alias} ({', '.join(how) or 'full scan'}; est. {est} rows)"

    def _prov_note(self, pred: A.ProvPredicate, left_bound: bool, right_bound: bool, joined) -> str:
        sides = [f"{pred.left.alias}={'bound' if left_bound else 'free'}",
                 f"{pred.right.alias}={'bound' if right_bound else 'free'}"]
        text = f"{pred.left.alias} {pred.label} {pred.right.alias}: {', '.join(sides)}"
        if pred.kind is A.ProvKind.INFLUENCES:
            if pred.depth is None:
                text += "; semi-naive expansion to a fixpoint (influences(*))"
            else:
                text += f"; expansion depth {pred.depth}"
        whole = "reads the whole store's containment and edges"
        if pred.kind in (A.ProvKind.INFLUENCES, A.ProvKind.UNDER):
            if not (left_bound or right_bound):
                text += f"; no bound side: {whole}"
            elif self.stats.index and self.stats.pruning:
                text += "; component index: reads only the influence scopes of the bound side"
            elif self.stats.index:
                text += f"; component index is older than the data (run `strata index`): {whole}"
            else:
                text += f"; no component index: {whole}"
        else:
            text += f"; {whole}"
        return text

    # ---------------------------------------------------------------- expressions
    def expr(self, node):
        """Replace subqueries inside an expression by their plans (other nodes are kept)."""
        return self.visit(node)

    def visit_Exists(self, node: A.Exists) -> P.SubqueryExists:
        sub = self.subquery(node.query, exists=True)
        return P.SubqueryExists(sub, node.query.correlated, node.span)

    def visit_ScalarSubquery(self, node: A.ScalarSubquery) -> P.SubqueryValue:
        sub = self.subquery(node.query, exists=False)
        out = node.query.outputs[0]
        is_count = isinstance(out.expr, A.BoundCall) and out.expr.func is A.AggFunc.COUNT
        return P.SubqueryValue(sub, node.query.correlated, is_count, out.vtype, node.span)

    def visit_And(self, node):
        return type(node)(self.visit(node.left), self.visit(node.right), node.span)

    visit_Or = visit_And

    def visit_Not(self, node: A.Not) -> A.Not:
        return A.Not(self.visit(node.operand), node.span)

    def visit_Compare(self, node: A.Compare) -> A.Compare:
        return A.Compare(node.op, self.visit(node.left), self.visit(node.right), node.span)

    def visit_IsNull(self, node: A.IsNull) -> A.IsNull:
        return A.IsNull(self.visit(node.operand), node.negated, node.span)

    def visit_InList(self, node: A.InList) -> A.InList:
        return A.InList(self.visit(node.operand), tuple(self.visit(i) for i in node.items),
                        node.negated, node.span)

    def visit_Literal(self, node):
        """Leaves, aggregate calls and provenance predicates hold no subquery: kept as they are."""
        return node

    visit_BoundColumn = visit_BoundAlias = visit_BoundCall = visit_ProvPredicate = visit_Literal

    # ---------------------------------------------------------------- queries
    def subquery(self, q: A.BoundSelect, exists: bool) -> P.QueryPlan:
        if q.correlated and q.limit is not None:
            raise IqlSemanticError.at(
                "LIMIT in a correlated subquery is not supported", q.span, self.text,
                "use max(...) or min(...) to pick one value per outer row",
            )
        outer_notes, self.notes = self.notes, []
        try:
            result = self.select(q, keys=q.correlated, exists=exists)
        finally:
            sub_notes, self.notes = self.notes, outer_notes
        head = "subquery " + ("correlated on " + ", ".join(s.alias for s in q.correlated)
                              if q.correlated else "(uncorrelated)")
        self.notes += [head + ":"] + ["  " + n for n in sub_notes]
        return result

    def select(self, q: A.BoundSelect, keys: tuple[A.BoundSource, ...] = (), exists=False) -> P.QueryPlan:
        rel = self.where(q, exists)
        key_cols = tuple(
            A.OutputColumn(f"__key{i}", A.BoundColumn(s.uid, s.alias, "id", A.ValueType.STRING, False, s.span),
                           A.ValueType.STRING)
            for i, s in enumerate(keys)
        )
        if exists:
            root = P.Project(rel, key_cols, True)
            return P.QueryPlan(root, tuple(c.name for c in key_cols), keys, ())
        outputs = tuple(self.expr_output(o) for o in q.outputs)
        having = self.expr(q.having) if q.having is not None else None
        post_sort = q.aggregated or q.distinct
        if not post_sort and q.order_by:
            rel = P.Sort(rel, tuple(
                P.SortKey(None, o.expr if o.expr is not None else outputs[o.position].expr, o.descending)
                for o in q.order_by))
        if q.aggregated:
            group = tuple(c.expr for c in key_cols) + tuple(self.expr(g) for g in q.group_by)
            rel = P.Aggregate(rel, group, key_cols + outputs, having)
        else:
            rel = P.Project(rel, key_cols + outputs, q.distinct)
        if post_sort and q.order_by:
            rel = P.Sort(rel, tuple(P.SortKey(o.position + len(key_cols), None, o.descending)
                                    for o in q.order_by))
        if q.limit is not None:
            rel = P.Limit(rel, q.limit)
        return P.QueryPlan(rel, tuple(c.name for c in key_cols + outputs), keys, ())

    def expr_output(self, out: A.OutputColumn) -> A.OutputColumn:
        return A.OutputColumn(out.name, self.expr(out.expr), out.vtype)


def plan(statement: A.BoundStatement, stats: Stats | None = None) -> P.QueryPlan:
    """The logical plan of a bound statement; `notes` describe the chosen strategy."""
    planner = _Planner(stats or Stats(), statement.source_text)
    result = planner.select(statement.query)
    return P.QueryPlan(result.root, result.columns, (), tuple(planner.notes))
