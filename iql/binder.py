"""AST + catalog -> bound AST: every name resolved, every expression typed, before any Spark work.

`bind(statement, catalog, text)` raises `IqlSemanticError` (with the node's span and a
"did you mean" hint where one helps) for unknown types, aliases and attributes, attributes on
wildcards, provenance predicates on the wrong kinds, incompatible comparisons and misplaced
aggregates. It also collects the open-world warnings of Ibis Section 4.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field

from iql import ast as A
from iql.errors import IqlSemanticError, IqlSyntaxError
from iql.explain import expr_text
from iql.visit import Visitor

DATA, PROCESS = "data", "process"

_ATTR_TYPES = {"string": A.ValueType.STRING, "int": A.ValueType.INT,
               "float": A.ValueType.FLOAT, "bool": A.ValueType.BOOL}

_WILDCARD_KIND = {A.Wildcard.ANY_DATA: DATA, A.Wildcard.ANY_PROCESS: PROCESS, A.Wildcard.ANY: None}

# (left kind, right kind) each predicate relates; None = either.
_PRED_KINDS = {
    A.ProvKind.UNDER: (None, None),
    A.ProvKind.FEEDS: (DATA, PROCESS),
    A.ProvKind.EMITS: (PROCESS, DATA),
    A.ProvKind.INFLUENCES: (DATA, DATA),
}
_PRED_USAGE = {
    A.ProvKind.UNDER: "'a under b' relates two data elements or two process elements",
    A.ProvKind.FEEDS: "'d feeds p' takes a data element, then a process element",
    A.ProvKind.EMITS: "'p emits d' takes a process element, then a data element",
    A.ProvKind.INFLUENCES: "'d1 influences(k) d2' relates two data elements",
}

WARN_NOT_EXISTS = (
    "open world: NOT EXISTS is not a certain answer; facts missing from the store could make "
    "the subquery non-empty (Ibis Section 4)"
)
WARN_NEGATED = (
    "open world: a negated provenance predicate is not a certain answer; a relationship the "
    "store does not know of may still hold (Ibis Section 4)"
)
WARN_AGGREGATE = (
    "open world: an aggregate over provenance relationships is not a certain answer; "
    "relationships missing from the store could change it (Ibis Section 4)"
)


_TRACE_HINT = "trace rows have the columns " + ", ".join(name for name, _ in A.TRACE_COLUMNS)


def trace_pattern(ref: A.TraceSource, text: str):
    """The parsed tree pattern of a TRACE (`capture.tracing.Pattern`); a pattern error becomes
    an `IqlSyntaxError` pointing into the query `text` (the pattern parser places it there,
    given where the pattern's string literal starts)."""
    from capture.tracing import Embedded, PatternError, parse_pattern  # deferred: it loads lark, numpy, pyarrow

    try:
        return parse_pattern(ref.pattern, Embedded(text, ref.pattern_span.start + 1))
    except PatternError as e:
        message = f"bad tree pattern in TRACE: {e.message}"
        if e.span is None:  # the empty pattern: its literal
            raise IqlSyntaxError.at(message, ref.pattern_span, text, e.hint) from None
        raise IqlSyntaxError(message, hint=e.hint, line=e.line,
                             column=e.column, span=e.span, source=text) from None


def _close(word: str, options) -> str | None:
    options = list(options)
    match = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not match:
        match = [o for o in options if o.lower() == word.lower()]
    return f"did you mean '{match[0]}'?" if match else None


def _an(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _attr_vtype(t) -> A.ValueType:
    return _ATTR_TYPES[getattr(t, "value", t)]


@dataclass
class _Scope:
    sources: list[A.BoundSource]
    parent: _Scope | None
    outer_refs: dict[str, A.BoundSource] = field(default_factory=dict)

    def lookup(self, alias: str) -> tuple[A.BoundSource, bool] | None:
        scope, outer = self, False
        while scope is not None:
            for s in scope.sources:
                if s.alias == alias:
                    return s, outer
            scope, outer = scope.parent, True
        return None

    def visible(self) -> list[str]:
        out, scope = [], self
        while scope is not None:
            out += [s.alias for s in scope.sources]
            scope = scope.parent
        return out

    def note_outer(self, source: A.BoundSource) -> None:
        if all(source.uid != s.uid for s in self.sources):
            self.outer_refs[source.uid] = source


class _Binder(Visitor):
    name = "binder"

    def __init__(self, catalog, text: str) -> None:
        self.catalog = catalog
        self.text = text
        self.counter = 0
        self.warnings: list[str] = []

    def error(self, message: str, span: A.Span | None, hint: str | None = None):
        return IqlSemanticError.at(message, span, self.text, hint)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # ------------------------------------------------------------------ FROM
    def source(self, item: A.FromItem) -> A.BoundSource:
        self.counter += 1
        uid = f"s{self.counter}"
        ref = item.source
        if isinstance(ref, A.TraceSource):
            trace = A.BoundTrace(ref.run, ref.pattern, trace_pattern(ref, self.text), ref.limit)
            return A.BoundSource(uid, item.alias, None, None, None, A.TRACE_COLUMNS, "TRACE",
                                 item.span, trace)
        if not ref.is_tuple and ref.names[0] in {w.value for w in A.Wildcard}:
            wildcard = A.Wildcard(ref.names[0])
            return A.BoundSource(uid, item.alias, None, wildcard, _WILDCARD_KIND[wildcard], (),
                                 wildcard.value, ref.span)
        if ref.is_tuple:
            info = self.catalog.type_by_granularities(ref.names)
            if info is None:
                problem = self.catalog.type_problem(list(ref.names)) or "not a type"
                unknown = [n for n in ref.names if n not in self.catalog.granularities]
                hint = _close(unknown[0], self.catalog.granularities) if unknown else None
                raise self.error(f"{ref} is not a type: {problem}", ref.span, hint)
        else:
            info = self.catalog.type_by_name(ref.names[0])
            if info is None:
                names = self.catalog.type_names() + [w.value for w in A.Wildcard]
                hint = _close(ref.names[0], names) or "types here: " + ", ".join(names)
                raise self.error(f"unknown type '{ref.names[0]}'", ref.span, hint)
        attrs = tuple((name, _attr_vtype(t)) for name, t in info.attributes)
        return A.BoundSource(uid, item.alias, info.key, None, info.kind, attrs, info.name, ref.span)

    # ------------------------------------------------------------------ names
    def column(self, ref: A.ColumnRef, scope: _Scope) -> A.BoundColumn:
        if ref.alias is not None:
            found = scope.lookup(ref.alias)
            if found is None:
                hint = _close(ref.alias, scope.visible()) or (
                    "aliases here: " + ", ".join(scope.visible())
                )
                raise self.error(f"unknown alias '{ref.alias}'", ref.span, hint)
            source, outer = found
            return self._attribute(source, outer, ref, scope)
        found = scope.lookup(ref.name)
        if found is not None:
            if not found[0].is_element:
                raise self.error(f"'{ref.name}' names the trace rows, not a value", ref.span,
                                 f"select one of their columns, e.g. {ref.name}.path")
            raise self.error(
                f"'{ref.name}' is an element alias, not a value",
                ref.span,
                f"select {ref.name}.id, or an attribute such as {ref.name}.<name>",
            )
        probe: _Scope | None = scope
        outer = False
        while probe is not None:
            owners = [s for s in probe.sources
                      if (ref.name == "id" and s.is_element) or s.attribute(ref.name)]
            if len(owners) > 1:
                raise self.error(
                    f"column '{ref.name}' is ambiguous: {', '.join(s.alias for s in owners)} all have it",
                    ref.span, f"qualify it, e.g. {owners[0].alias}.{ref.name}",
                )
            if owners:
                return self._attribute(owners[0], outer, ref, scope)
            probe, outer = probe.parent, True
        if len(scope.sources) == 1 and not scope.sources[0].is_element:
            raise self.error(f"trace rows have no column '{ref.name}'", ref.span, _TRACE_HINT)
        raise self.error(f"unknown column '{ref.name}'", ref.span,
                         "qualify columns with their alias, e.g. p.id or p.license")

    def _attribute(self, source, outer, ref, scope) -> A.BoundColumn:
        if not source.is_element:
            return self._trace_column(source, outer, ref)
        if outer:
            scope.note_outer(source)
        if ref.name == "id":
            return A.BoundColumn(source.uid, source.alias, "id", A.ValueType.STRING, outer, ref.span)
        if source.wildcard is not None:
            raise self.error(
                f"'{source.alias}' ranges over the wildcard {source.display}, which has no attributes",
                ref.span, f"only {source.alias}.id is available; use a concrete type to read '{ref.name}'",
            )
        vtype = source.attribute(ref.name)
        if vtype is None:
            names = [a for a, _ in source.attributes]
            hint = _close(ref.name, names + ["id"]) or (
                f"{source.display} has " + (", ".join(["id"] + names))
            )
            raise self.error(f"type {source.display} has no attribute '{ref.name}'", ref.span, hint)
        return A.BoundColumn(source.uid, source.alias, ref.name, vtype, outer, ref.span)

    def _trace_column(self, source, outer, ref) -> A.BoundColumn:
        if outer:
            raise self.error(f"a subquery cannot read the trace rows '{source.alias}' of its "
                             "enclosing query", ref.span,
                             "trace in the subquery itself: ... FROM TRACE(...) t WHERE ...")
        vtype = source.attribute(ref.name)
        if vtype is None:
            raise self.error(f"trace rows have no column '{ref.name}'", ref.span, _TRACE_HINT)
        return A.BoundColumn(source.uid, source.alias, ref.name, vtype, False, ref.span)

    def alias_operand(self, node, pred: A.ProvPredicate, side: str, scope: _Scope) -> A.BoundAlias:
        name = None
        if isinstance(node, A.ColumnRef) and node.alias is None:
            name = node.name
        elif isinstance(node, A.ColumnRef) and node.name == "id":
            name = node.alias  # `p.id under t` means the element p
        if name is None:
            raise self.error(f"the {side} side of '{pred.label}' must be an alias from FROM",
                             node.span, f"write two aliases, e.g. 'r {pred.label} t'")
        found = scope.lookup(name)
        if found is None:
            hint = _close(name, scope.visible()) or ("aliases here: " + ", ".join(scope.visible()))
            raise self.error(f"unknown alias '{name}'", node.span, hint)
        source, outer = found
        if not source.is_element:
            raise self.error(f"'{name}' ranges over trace rows, not store elements: '{pred.label}' "
                             "relates elements", node.span,
                             f"compare {name}.item with an element's id, e.g. {name}.item = d.id")
        if outer:
            scope.note_outer(source)
        return A.BoundAlias(source.uid, source.alias, source.kind, outer, node.span)

    # ------------------------------------------------------------------ expressions
    def expr(self, node, scope: _Scope, *, aggregates: bool = False, negated: bool = False):
        """Bind and type one expression; returns (bound node, value type)."""
        return self.visit(node, scope, aggregates, negated)

    def visit_Literal(self, node, scope, aggregates, negated):
        if node.vtype is A.ValueType.INT and not -(2**63) <= node.value < 2**63:
            raise self.error(f"the number {node.value} is too large", node.span,
                             "integers are 64-bit; write a float (e.g. 1e20) for larger values")
        return node, node.vtype

    def visit_ColumnRef(self, node, scope, aggregates, negated):
        col = self.column(node, scope)
        return col, col.vtype

    def visit_Call(self, node, scope, aggregates, negated):
        if not aggregates:
            raise self.error(f"aggregate {node.func.value}() is not allowed here", node.span,
                             "aggregates belong in SELECT, HAVING or ORDER BY, not in WHERE or GROUP BY")
        if node.arg is None:
            return A.BoundCall(node.func, None, node.distinct, A.ValueType.INT, node.span), A.ValueType.INT
        arg, t = self.expr(node.arg, scope)
        if node.func in (A.AggFunc.SUM, A.AggFunc.AVG) and not (t.numeric or t is A.ValueType.NULL):
            raise self.error(f"{node.func.value}() needs a number, got {t.value}", node.arg.span,
                             "count(...) counts values of any type; min and max order them")
        out = {A.AggFunc.COUNT: A.ValueType.INT, A.AggFunc.AVG: A.ValueType.FLOAT}.get(node.func, t)
        return A.BoundCall(node.func, arg, node.distinct, out, node.span), out

    def _condition(self, node, scope, aggregates, negated):
        bound, t = self.expr(node, scope, aggregates=aggregates, negated=negated)
        if t not in (A.ValueType.BOOL, A.ValueType.NULL):
            raise self.error(f"expected a condition (true/false), got {_an(t.value)}", node.span,
                             "compare it with something, e.g. p.license = 'yahoo'")
        return bound

    def visit_And(self, node, scope, aggregates, negated):
        left = self._condition(node.left, scope, aggregates, negated)
        right = self._condition(node.right, scope, aggregates, negated)
        return A.And(left, right, node.span), A.ValueType.BOOL

    def visit_Or(self, node, scope, aggregates, negated):
        left = self._condition(node.left, scope, aggregates, negated)
        right = self._condition(node.right, scope, aggregates, negated)
        return A.Or(left, right, node.span), A.ValueType.BOOL

    def visit_Not(self, node, scope, aggregates, negated):
        if isinstance(node.operand, A.Exists) and not negated:
            self.warn(WARN_NOT_EXISTS)
        operand = self._condition(node.operand, scope, aggregates, not negated)
        return A.Not(operand, node.span), A.ValueType.BOOL

    def _check_comparable(self, left, left_t, right, right_t, node) -> None:
        if A.ValueType.NULL in (left_t, right_t):
            return
        if left_t == right_t or (left_t.numeric and right_t.numeric):
            return
        raise self.error(f"cannot compare {expr_text(left)} ({left_t.value}) with "
                         f"{expr_text(right)} ({right_t.value})", node.span,
                         "ids and string attributes compare with 'strings'; numbers with numbers")

    def visit_Compare(self, node, scope, aggregates, negated):
        left, lt = self.expr(node.left, scope, aggregates=aggregates)
        right, rt = self.expr(node.right, scope, aggregates=aggregates)
        for side in (node.left, node.right):
            if isinstance(side, A.Literal) and side.value is None:
                raise self.error("a comparison with null is never true", node.span,
                                 "use IS NULL or IS NOT NULL")
        self._check_comparable(left, lt, right, rt, node)
        return A.Compare(node.op, left, right, node.span), A.ValueType.BOOL

    def visit_IsNull(self, node, scope, aggregates, negated):
        operand, _ = self.expr(node.operand, scope, aggregates=aggregates)
        return A.IsNull(operand, node.negated, node.span), A.ValueType.BOOL

    def visit_InList(self, node, scope, aggregates, negated):
        operand, t = self.expr(node.operand, scope, aggregates=aggregates)
        items = []
        for item in node.items:
            bound, it = self.expr(item, scope, aggregates=aggregates)
            self._check_comparable(operand, t, bound, it, item)
            items.append(bound)
        return A.InList(operand, tuple(items), node.negated, node.span), A.ValueType.BOOL

    def visit_ProvPredicate(self, node, scope, aggregates, negated):
        left = self.alias_operand(node.left, node, "left", scope)
        right = self.alias_operand(node.right, node, "right", scope)
        want_left, want_right = _PRED_KINDS[node.kind]
        if node.kind is A.ProvKind.UNDER:
            if left.kind and right.kind and left.kind != right.kind:
                raise self.error(
                    f"'{left.alias}' is a {left.kind} element but '{right.alias}' is a {right.kind} element",
                    node.span, _PRED_USAGE[node.kind],
                )
        for operand, want in ((left, want_left), (right, want_right)):
            if want and operand.kind and operand.kind != want:
                raise self.error(
                    f"'{operand.alias}' is a {operand.kind} element, but {node.label} needs {want} there",
                    operand.span, _PRED_USAGE[node.kind],
                )
        if negated:
            self.warn(WARN_NEGATED)
        return A.ProvPredicate(node.kind, left, right, node.depth, node.span), A.ValueType.BOOL

    def visit_Exists(self, node, scope, aggregates, negated):
        query = self.select(node.query, scope)
        return A.Exists(query, node.span), A.ValueType.BOOL

    def visit_ScalarSubquery(self, node, scope, aggregates, negated):
        query = self.select(node.query, scope)
        if len(query.outputs) != 1:
            raise self.error(
                f"a subquery used as a value must return one column, this one returns {len(query.outputs)}",
                node.span, "select a single column, e.g. (SELECT max(s.authScore) FROM ...)",
            )
        return A.ScalarSubquery(query, node.span), query.outputs[0].vtype

    # ------------------------------------------------------------------ queries
    def select(self, node: A.Select, parent: _Scope | None) -> A.BoundSelect:
        sources: list[A.BoundSource] = []
        for item in node.from_:
            if any(s.alias == item.alias for s in sources):
                raise self.error(f"alias '{item.alias}' is used twice in FROM", item.span,
                                 "give each FROM entry its own alias")
            sources.append(self.source(item))
        scope = _Scope(sources, parent)
        where = self._condition(node.where, scope, False, False) if node.where is not None else None
        group_by = tuple(self.expr(g, scope)[0] for g in node.group_by)
        outputs = self.outputs(node, scope)
        having = self._condition(node.having, scope, True, False) if node.having is not None else None
        aggregated = bool(group_by) or having is not None or any(
            any(isinstance(n, A.BoundCall) for n in A.walk(o.expr)) for o in outputs
        )
        if not aggregated and node.having is not None:
            raise self.error("HAVING needs GROUP BY or an aggregate", node.having.span)
        if aggregated:
            keys = group_by
            for out in outputs:
                self._check_grouped(out.expr, keys)
            if having is not None:
                self._check_grouped(having, keys)
            if where is not None and any(isinstance(n, A.ProvPredicate) for n in A.walk(where)):
                self.warn(WARN_AGGREGATE)
        order = tuple(self.order_item(o, scope, outputs, aggregated or node.distinct)
                      for o in node.order_by)
        if node.limit is not None and node.limit >= 2**31:
            raise self.error(f"LIMIT {node.limit} is too large", node.limit_span or node.span,
                             f"use at most {2**31 - 1}, or leave LIMIT out")
        correlated = tuple(scope.outer_refs.values())
        if parent is not None:
            for src in correlated:
                parent.note_outer(src)
        return A.BoundSelect(node.distinct, tuple(sources), where, outputs, group_by, having,
                             aggregated, order, node.limit, correlated, node.span)

    def _check_grouped(self, expr, keys) -> None:
        if any(expr == k for k in keys):
            return
        if isinstance(expr, A.BoundCall):
            if expr.arg is not None and any(isinstance(n, A.BoundCall) for n in A.walk(expr.arg)):
                raise self.error("aggregates cannot be nested", expr.span)
            return
        if isinstance(expr, A.BoundColumn) and not expr.outer:
            raise self.error(
                f"{expr} must appear in GROUP BY or inside an aggregate", expr.span,
                f"add 'GROUP BY {expr}', or aggregate it, e.g. max({expr})",
            )
        for child in A.operands(expr):
            self._check_grouped(child, keys)

    def outputs(self, node: A.Select, scope: _Scope) -> tuple[A.OutputColumn, ...]:
        pairs: list[tuple[str | None, str, object, A.ValueType]] = []  # (alias, default, expr, t)
        if node.items is None:
            for s in scope.sources:
                cols = [("id", A.ValueType.STRING)] * s.is_element + list(s.attributes)
                for name, t in cols:
                    col = A.BoundColumn(s.uid, s.alias, name, t, False, s.span)
                    pairs.append((None, name, col, t))
        else:
            for i, item in enumerate(node.items, start=1):
                bound, t = self.expr(item.expr, scope, aggregates=True)
                pairs.append((item.alias, self._default_name(bound, i), bound, t))
        names = [alias or default for alias, default, _, _ in pairs]
        out = []
        for (alias, _default, expr, t), name in zip(pairs, names, strict=True):
            if alias is None and names.count(name) > 1 and isinstance(expr, A.BoundColumn):
                name = f"{expr.alias}.{expr.name}"
            out.append(A.OutputColumn(name, expr, t))
        seen: dict[str, int] = {}
        unique = []
        for col in out:
            seen[col.name] = seen.get(col.name, 0) + 1
            name = col.name if seen[col.name] == 1 else f"{col.name}_{seen[col.name]}"
            unique.append(dataclasses.replace(col, name=name))
        return tuple(unique)

    @staticmethod
    def _default_name(expr, i: int) -> str:
        if isinstance(expr, A.BoundColumn):
            return expr.name
        if isinstance(expr, A.BoundCall):
            inner = "*" if expr.arg is None else _Binder._default_name(expr.arg, i)
            return f"{expr.func.value}({inner})"
        if isinstance(expr, A.Literal):
            return "null" if expr.value is None else str(expr.value)
        return f"col{i}"

    def order_item(self, item: A.OrderItem, scope, outputs, must_be_output: bool) -> A.BoundOrder:
        expr = item.expr
        if isinstance(expr, A.Literal) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
            if not 1 <= expr.value <= len(outputs):
                raise self.error(f"ORDER BY position {expr.value} is out of range", expr.span,
                                 f"the query returns {len(outputs)} column(s)")
            return A.BoundOrder(expr.value - 1, None, item.descending)
        if isinstance(expr, A.ColumnRef) and expr.alias is None and scope.lookup(expr.name) is None:
            for i, out in enumerate(outputs):
                if out.name == expr.name:
                    return A.BoundOrder(i, None, item.descending)
        bound, _ = self.expr(expr, scope, aggregates=must_be_output)
        for i, out in enumerate(outputs):
            if out.expr == bound:
                return A.BoundOrder(i, None, item.descending)
        if must_be_output:
            raise self.error("with DISTINCT or aggregates, ORDER BY must name a SELECT column",
                             expr.span, "add it to the SELECT list, or order by its position (1, 2, ...)")
        return A.BoundOrder(None, bound, item.descending)


def bind(statement: A.Statement, catalog, text: str = "") -> A.BoundStatement:
    """Resolve names and types of `statement` against `catalog` (a store.model.Catalog)."""
    binder = _Binder(catalog, text)
    query = binder.select(statement.query, None)
    return A.BoundStatement(query, statement.explain, tuple(binder.warnings), text, statement.form)
