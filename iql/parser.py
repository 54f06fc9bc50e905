"""Text -> AST. The only module of `iql` that imports Lark.

`parse(text)` returns an `iql.ast.Statement` or raises `IqlSyntaxError` with the line, the
column, the offending line with a caret under it, and what was expected, in words.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace
from functools import lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

import grammar
from iql import ast as A
from iql.errors import IqlError, IqlSyntaxError

# Terminal names of grammar/iql.lark in words, for "expected ..." messages.
EXPECTED_WORDS: dict[str, str] = {
    "NAME": "a name",
    "STRING": "a 'string'",
    "INT": "a number",
    "FLOAT": "a number",
    "COMP_OP": "a comparison (=, !=, <, <=, >, >=)",
    "STAR": "'*'",
    "COMMA": "','",
    "DOT": "'.'",
    "LPAR": "'('",
    "RPAR": "')'",
    "SEMICOLON": "';'",
    "MINUS": "'-'",
    "$END": "the end of the query",
}

# Common mistakes, labelled with lark's match_examples (parser state + offending token).
_EXAMPLES: dict[str, list[str]] = {
    "the SELECT list is empty; name what to return, e.g. 'SELECT p.id'": [
        "select from X x",
        "select distinct from X x",
    ],
    "a comma must be followed by another item": [
        "select a.id, from X a",
        "select a.id from X a, where a.id = 'x'",
    ],
    "the depth of influences goes in parentheses: influences(2), or influences(*) for any depth": [
        "select a.id from X a, X b where a influences 2 b",
        "select a.id from X a, X b where a influences -1 b",
        "select a.id from X a, X b where a influences(-1) b",
        "select a.id from X a, X b where a influences(x) b",
        "select a.id from X a, X b where a influences(1.5) b",
    ],
    "a provenance predicate relates two aliases from FROM, e.g. 'r under t'": [
        "select a.id from X a where 'x' under a",
        "select a.id from X a where a under 'x'",
        "select a.id from X a where 1 feeds a",
        "select a.id from X a where a emits 1",
        "select a.id from X a where a influences 'x'",
        "select a.id from X a where a influences(1) 'x'",
        "select a.id from X a where count(*) under a",
    ],
    "each FROM entry is a type followed by an alias, e.g. 'FROM WebPage p'": [
        "select a.id from 'X' a",
        "select a.id from X a b",
        "select a.id from X.y a",
    ],
}

_AGGREGATES = {f.value: f for f in A.AggFunc}


def _lark() -> Lark:
    return grammar.parser("iql")


@lru_cache(maxsize=1)
def _keywords() -> frozenset[str]:
    """Terminal names of the grammar's keywords (`SELECT: "select"i` and friends)."""
    return frozenset(
        t.name for t in _lark().terminals if t.pattern.type == "str" and t.pattern.value.isalpha()
    )


_word = grammar.word  # a keyword terminal's word: `_SELECT` -> `SELECT`


def keywords() -> list[str]:
    """IQL's reserved words in upper case (for completion and syntax highlighting)."""
    return sorted(_word(k) for k in _keywords())


def _span_tok(tok: Token) -> A.Span:
    return A.Span(tok.start_pos, tok.end_pos, tok.line, tok.column)


def _span_meta(meta) -> A.Span:
    return A.Span(meta.start_pos, meta.end_pos, meta.line, meta.column)


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'")


@v_args(meta=True)
class _ToAst(Transformer):
    """Parse tree -> iql.ast nodes (one method per grammar alternative). Optional clauses
    arrive as None (maybe_placeholders), so every method unpacks a fixed number of children."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    # -- statements
    def start(self, meta, ch):
        as_of, explain, query = ch[0], ch[1], ch[2]
        form = A.Form.TRACE if isinstance(query, A.TraceSource) else A.Form.SELECT
        if form is A.Form.TRACE:  # TRACE ... is SELECT * FROM TRACE(...)
            span = query.span
            query = A.Select(False, None, (A.FromItem(query, "trace", span),), None, (), None, (),
                             None, span)
        return A.Statement(query, explain is not None, _span_meta(meta), form, as_of)

    def as_of(self, meta, ch):
        of, version, n = ch
        for word, want in ((of, "of"), (version, "version")):
            if str(word).lower() != want:
                raise IqlSyntaxError.at(
                    f"expected {want.upper()} in AS OF VERSION n, found '{word}'", _span_tok(word), self.text,
                    hint="write AS OF VERSION 3 SELECT ... (`strata info` lists the versions)")
        return int(n)

    def select(self, meta, ch):
        distinct, items, from_, where, group_by, having, order_by, limit = ch
        return A.Select(
            distinct=distinct is not None,
            items=items,
            from_=from_,
            where=where,
            group_by=group_by or (),
            having=having,
            order_by=order_by or (),
            limit=limit[0] if limit else None,
            span=_span_meta(meta),
            limit_span=limit[1] if limit else None,
        )

    def trace_args(self, meta, ch):
        run, word, pattern, limit = ch
        if str(word).lower() != "match":
            raise IqlSyntaxError.at(
                f"expected MATCH after TRACE, found '{word}'", _span_tok(word), self.text,
                hint="write TRACE MATCH '/user/id_str' or TRACE 'run id' MATCH '/user/id_str'")
        return A.TraceSource(None if run is None else _unquote(str(run)), _unquote(str(pattern)),
                             limit[0] if limit else None, _span_meta(meta), _span_tok(pattern))

    def trace(self, meta, ch):
        return replace(ch[0], span=_span_meta(meta))

    def select_star(self, meta, ch):
        return None

    def select_items(self, meta, ch):
        return tuple(ch)

    def select_item(self, meta, ch):
        expr, alias = ch
        return A.SelectItem(expr, alias, _span_meta(meta))

    def alias(self, meta, ch):
        return str(ch[0])

    def from_list(self, meta, ch):
        return tuple(ch)

    def type_source(self, meta, ch):
        type_ref, alias = ch
        return A.FromItem(type_ref, alias or type_ref.names[0], _span_meta(meta))

    def trace_source(self, meta, ch):
        trace, alias = ch
        return A.FromItem(replace(trace, span=_span_meta(meta)), alias or "trace", _span_meta(meta))

    def type_name(self, meta, ch):
        return A.TypeRef((str(ch[0]),), False, _span_meta(meta))

    def type_tuple(self, meta, ch):
        return A.TypeRef(tuple(str(t) for t in ch), True, _span_meta(meta))

    def where(self, meta, ch):
        return ch[0]

    def group_by(self, meta, ch):
        return tuple(ch)

    def having(self, meta, ch):
        return ch[0]

    def order_by(self, meta, ch):
        return tuple(ch)

    def order_item(self, meta, ch):
        expr, direction = ch
        return A.OrderItem(expr, direction is not None and direction.type == "DESC", _span_meta(meta))

    def limit(self, meta, ch):
        tok = ch[0]
        return (int(tok), _span_tok(tok))

    # -- boolean structure
    def or_(self, meta, ch):
        left, right = ch
        return A.Or(left, right, _span_meta(meta))

    def and_(self, meta, ch):
        left, right = ch
        return A.And(left, right, _span_meta(meta))

    def not_(self, meta, ch):
        return A.Not(ch[0], _span_meta(meta))

    def compare(self, meta, ch):
        left, op, right = ch
        return A.Compare(A.CompOp.parse(str(op)), left, right, _span_meta(meta))

    def is_null(self, meta, ch):
        return A.IsNull(ch[0], False, _span_meta(meta))

    def is_not_null(self, meta, ch):
        return A.IsNull(ch[0], True, _span_meta(meta))

    def in_list(self, meta, ch):
        operand, *items = ch
        return A.InList(operand, tuple(items), False, _span_meta(meta))

    def not_in_list(self, meta, ch):
        operand, *items = ch
        return A.InList(operand, tuple(items), True, _span_meta(meta))

    def _prov(self, kind, meta, ch, depth=None):
        left, right = ch[0], ch[-1]
        return A.ProvPredicate(kind, left, right, depth, _span_meta(meta))

    def under(self, meta, ch):
        return self._prov(A.ProvKind.UNDER, meta, ch)

    def feeds(self, meta, ch):
        return self._prov(A.ProvKind.FEEDS, meta, ch)

    def emits(self, meta, ch):
        return self._prov(A.ProvKind.EMITS, meta, ch)

    def influences(self, meta, ch):
        left, depth, right = ch
        # bare `influences` is influences(1); `influences(*)` has depth None
        return A.ProvPredicate(A.ProvKind.INFLUENCES, left, right, 1 if depth is None else depth[0],
                               _span_meta(meta))

    def depth_k(self, meta, ch):
        return (int(ch[0]),)

    def depth_star(self, meta, ch):
        return (None,)

    def exists(self, meta, ch):
        return A.Exists(ch[0], _span_meta(meta))

    # -- operands
    def scalar_subquery(self, meta, ch):
        return A.ScalarSubquery(ch[0], _span_meta(meta))

    def paren(self, meta, ch):
        return ch[0]

    def bare_column(self, meta, ch):
        return A.ColumnRef(None, str(ch[0]), _span_meta(meta))

    def qualified_column(self, meta, ch):
        alias, name = ch
        return A.ColumnRef(str(alias), str(name), _span_meta(meta))

    def _func(self, tok: Token) -> A.AggFunc:
        func = _AGGREGATES.get(str(tok).lower())
        if func is None:
            raise IqlSyntaxError.at(
                f"unknown function '{tok}'",
                _span_tok(tok),
                self.text,
                hint="IQL has the aggregates count, min, max, sum and avg",
            )
        return func

    def call_star(self, meta, ch):
        tok = ch[0]
        func = self._func(tok)
        if func is not A.AggFunc.COUNT:
            raise IqlSyntaxError.at(
                f"{func.value}(*) is not allowed; only count(*) takes '*'",
                _span_meta(meta),
                self.text,
                hint=f"give {func.value} a column, e.g. {func.value}(p.authScore)",
            )
        return A.Call(func, None, False, _span_meta(meta))

    def call_expr(self, meta, ch):
        name, distinct, arg = ch
        return A.Call(self._func(name), arg, distinct is not None, _span_meta(meta))

    # -- literals
    def string(self, meta, ch):
        return A.Literal(_unquote(str(ch[0])), _span_meta(meta))

    def integer(self, meta, ch):
        return A.Literal(int(ch[0]), _span_meta(meta))

    def neg_integer(self, meta, ch):
        return A.Literal(-int(ch[0]), _span_meta(meta))

    def float_(self, meta, ch):
        return A.Literal(float(ch[0]), _span_meta(meta))

    def neg_float(self, meta, ch):
        return A.Literal(-float(ch[0]), _span_meta(meta))

    def true(self, meta, ch):
        return A.Literal(True, _span_meta(meta))

    def false(self, meta, ch):
        return A.Literal(False, _span_meta(meta))

    def null(self, meta, ch):
        return A.Literal(None, _span_meta(meta))


def _keyword_hint(text: str, tok: Token, expected) -> str | None:
    """'did you mean FROM?' when the offending word, or the word before it, is a misspelt keyword."""
    all_keywords = {_word(k) for k in _keywords()}
    keywords = [_word(name) for name in expected if _word(name) in all_keywords]
    before = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text[: tok.start_pos])
    for word in ([str(tok)] if tok.type == "NAME" else []) + before[-1:]:
        if word.upper() in all_keywords:
            continue
        close = difflib.get_close_matches(word.upper(), keywords, n=1, cutoff=0.75)
        if close and word.upper() != close[0]:
            return f"did you mean {close[0]} instead of '{word}'?"
    return None


def _syntax_error(e: UnexpectedInput, text: str) -> IqlSyntaxError:
    p = grammar.syntax_problem(e, text, _lark(), EXPECTED_WORDS, what="query", examples=_EXAMPLES,
                               hint=lambda tok, expected: _keyword_hint(text, tok, expected))
    message, hint = p.message, p.hint
    if p.char == '"':
        hint = "strings use single quotes, e.g. 'avatar_lead_actor_v1'"
    elif p.char == "'":
        message = "unterminated string"
        hint = "close the string with ' (write '' for a quote inside it)"
    return IqlSyntaxError(message, hint=hint, line=p.line, column=p.column, span=p.span, source=text)


def parse(text: str) -> A.Statement:
    """Parse one IQL statement (optionally `EXPLAIN ...`, optionally ending in `;`)."""
    if not isinstance(text, str):
        raise TypeError(f"IQL text must be a str, got {type(text).__name__}")
    if not text.strip() or all(
        not line.strip() or line.strip().startswith("--") for line in text.splitlines()
    ):
        raise IqlSyntaxError("empty query", hint="write e.g. SELECT p.id FROM WebPage p", source=text)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, text) from None
    try:
        return _ToAst(text).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, IqlError):
            raise e.orig_exc from None
        if isinstance(e.orig_exc, ValueError):
            raise IqlSyntaxError(str(e.orig_exc), source=text) from e.orig_exc
        raise
