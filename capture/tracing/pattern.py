"""Tree patterns over nested result items (Pebble Section 6.1), pure Python, no Spark here.

Syntax (XPath/JSONPath-like; docs/tracing.md)::

    pattern  := branch ('and' branch)*            all branches must match the same item
    branch   := step+ [cmp literal]                the final nodes, optionally compared
    step     := ('/' | '//') (name | '*') pred*    child / descendant (any depth)
    pred     := '[' cond ('and' cond)* ']'
    cond     := INT                                1-based position in an array
              | rel [cmp literal]                  some node at rel exists (and compares)
              | 'count' '(' rel [cmp literal] ')' cmp INT    multiplicity
    rel      := '.' | name ('/' name)*
    cmp      := '=' | '!=' | '<' | '<=' | '>' | '>='
    literal  := 'text' | "text" | number | true | false

Arrays are stepped through implicitly: ``/tweets/text`` reaches the ``text`` of every element
of the array ``tweets``; ``/tweets[2]/text`` only the second. Matched node paths use the capture
path notation: ``tweets.[2].text`` (1-based positions).

The running example's question (Section 2)::

    //id_str = 'lp' and /tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lark import Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

import grammar
from store.errors import UserError

CMPS = ("<=", ">=", "!=", "=", "<", ">")


HINT = ("a pattern is steps like /user/id_str or //id_str with [conditions], e.g. "
        "//id_str = 'lp' and /tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'")


class PatternError(UserError):
    """A tree pattern does not parse: ``message`` says what (one line, no position), ``span`` the
    offending characters as offsets into ``source`` (the pattern's text), ``line`` and ``column``
    (1-based) where they start. A caller holding the pattern inside a larger text (a TRACE
    statement) points into it by adding the pattern's offset to ``span``. Rendered as every Strata
    error is (:meth:`store.errors.StrataError.render`), with the prefix ``tree pattern`` and
    carets under the span."""

    prefix = "tree pattern"


@dataclass(frozen=True, slots=True)
class Cmp:
    op: str
    value: Any


@dataclass(frozen=True, slots=True)
class Rel:
    names: tuple[str, ...]  # () = '.' (the node itself)
    cmp: Cmp | None = None


@dataclass(frozen=True, slots=True)
class Count:
    rel: Rel
    cmp: Cmp  # compared with the number of nodes rel reaches (that satisfy rel.cmp)


@dataclass(frozen=True, slots=True)
class Position:
    n: int


Cond = Position | Rel | Count


@dataclass(frozen=True, slots=True)
class Step:
    descendant: bool
    name: str  # '*' = any field
    preds: tuple[Cond, ...] = ()


@dataclass(frozen=True, slots=True)
class Branch:
    steps: tuple[Step, ...]
    cmp: Cmp | None = None


@dataclass(frozen=True, slots=True)
class Pattern:
    branches: tuple[Branch, ...]
    text: str = ""


# ---- parsing: grammar/pattern.lark through grammar.parser, as IQL is parsed ------------------
# Terminal names of grammar/pattern.lark in words, for "expected ..." messages.
EXPECTED_WORDS: dict[str, str] = {
    "SLASH": "a step ('/name' or '//name')",
    "DSLASH": "a step ('/name' or '//name')",
    "NAME": "a field name",
    "STAR": "'*'",
    "STRING": "a string ('text')",
    "NUMBER": "a number",
    "TRUE": "a boolean (true, false)",
    "FALSE": "a boolean (true, false)",
    "CMP": "a comparison (=, !=, <, <=, >, >=)",
    "AND": "'and'",
    "DOT": "'.'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LPAR": "'('",
    "RPAR": "')'",
    "$END": "the end of the pattern",
}

# Common mistakes, labelled with lark's match_examples (parser state + offending token): the hint.
_EXAMPLES: dict[str, list[str]] = {
    "a pattern starts with a step: /name (a child) or //name (a descendant at any depth)": [
        "user/id_str", "id_str = 'lp'", "[1]",
    ],
    "a condition is a position, a field, '.' or count(...), e.g. [2], [id_str = 'lp'], "
    "[count(text) >= 2]": ["/a[", "/a[]", "/a[= 1]", "/a[and]"],
    "compare with a literal: 'text', a number, true or false": [
        "/a = ", "/a = b", "/a[b = ]", "/a = ]", "/a[count(b) >]",
    ],
}


@dataclass(frozen=True, slots=True)
class Embedded:
    """Where a pattern's text sits in a larger text ``source``: a string literal whose first
    character after the opening quote is at offset ``start``, and inside which every ``quote``
    is written twice (IQL's ``TRACE MATCH '//id_str = ''lp'''``). :func:`parse_pattern` reports
    errors at the positions :meth:`offset` gives, so their caret points into ``source``."""

    source: str
    start: int
    quote: str = "'"

    def offset(self, pattern: str, i: int) -> int:
        """Offset ``i`` of the (unescaped) ``pattern`` as an offset into ``source``: past the
        literal's start, one more character for each quote before ``i`` (written twice)."""
        return self.start + i + pattern.count(self.quote, 0, i)


def _error(text: str, start: int, end: int, what: str, hint: str | None = None,
           within: Embedded | None = None) -> PatternError:
    """The error at characters ``start:end`` of the pattern ``text`` (of ``within.source`` when
    the pattern is embedded there)."""
    source = text
    if within is not None:
        source, start, end = within.source, within.offset(text, start), within.offset(text, end)
    line = source.count("\n", 0, start) + 1
    column = start - (source.rfind("\n", 0, start) + 1) + 1
    return PatternError(what, hint=hint or HINT, line=line, column=column, span=(start, end), source=source)


def _unquote(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw[1:-1])


def _number(raw: str) -> int | float:
    return float(raw) if "." in raw else int(raw)


@v_args(meta=True)
class _ToPattern(Transformer):
    """Parse tree -> Pattern (one method per grammar alternative); the checks the grammar cannot
    make (a position >= 1, count(...) named and compared with a whole number) raise
    :class:`PatternError` at the offending characters."""

    def __init__(self, text: str, within: Embedded | None) -> None:
        super().__init__()
        self.text, self.within = text, within

    def error(self, start: int, end: int, what: str, hint: str | None = None) -> PatternError:
        return _error(self.text, start, end, what, hint, self.within)

    def start(self, meta, ch):
        return Pattern(tuple(ch), self.text)

    def branch(self, meta, ch):
        *steps, cmp = ch
        return Branch(tuple(steps), cmp)

    def child(self, meta, ch):
        name, *preds = ch
        return Step(False, name, tuple(c for p in preds for c in p))

    def descendant(self, meta, ch):
        name, *preds = ch
        return Step(True, name, tuple(c for p in preds for c in p))

    def field(self, meta, ch):
        return str(ch[0])

    def pred(self, meta, ch):
        return tuple(ch)

    def position(self, meta, ch):
        tok = ch[0]
        n = _number(tok)
        if not isinstance(n, int) or n < 1:
            raise self.error(tok.start_pos, tok.end_pos, f"a position is a whole number >= 1, got {n}")
        return Position(n)

    def count(self, meta, ch):
        name, rel, cmp = ch
        if name.lower() != "count":
            raise self.error(name.start_pos, name.end_pos, f"unknown function {str(name)!r}",
                             hint="count(...) is the one function of a pattern, e.g. [count(text) >= 2]")
        if cmp is None or isinstance(cmp.value, bool) or not isinstance(cmp.value, int):
            raise self.error(meta.end_pos, meta.end_pos + 1,
                             "count(...) needs a comparison with a whole number, e.g. >= 2")
        return Count(rel, cmp)

    def self(self, meta, ch):
        return Rel((), ch[0])

    def path(self, meta, ch):
        *names, cmp = ch
        return Rel(tuple(str(n) for n in names), cmp)

    def cmp(self, meta, ch):
        op, value = ch
        return Cmp(str(op), value)

    def string(self, meta, ch):
        return _unquote(str(ch[0]))

    def number(self, meta, ch):
        return _number(str(ch[0]))

    def true(self, meta, ch):
        return True

    def false(self, meta, ch):
        return False


def _lark():
    return grammar.parser("pattern", lexer="contextual")


def parse_pattern(text: str, within: Embedded | None = None) -> Pattern:
    """Parse a tree pattern; raises :class:`PatternError` pointing at the problem: into ``text``,
    or, with ``within``, into the larger text that holds it (see :class:`Embedded`)."""
    if not text or not text.strip():
        source = text if within is None else within.source
        raise PatternError("the pattern is empty", hint="e.g. //id_str = 'lp'", source=source)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        p = grammar.syntax_problem(e, text, _lark(), EXPECTED_WORDS, what="the pattern",
                                   examples=_EXAMPLES)
        message, hint = p.message, p.hint
        if p.char in ("'", '"'):
            message = "unterminated string"
            hint = f"close the string with {p.char} (write \\{p.char} for a quote inside it)"
        raise _error(text, *p.span, message, hint, within) from None
    try:
        return _ToPattern(text, within).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, PatternError):
            raise e.orig_exc from None
        raise


# ---- matching ------------------------------------------------------------------------------
Node = tuple[tuple[str, ...], Any]  # (path segments, value)


def _compare(value: Any, cmp: Cmp) -> bool:
    v, w = value, cmp.value
    num = (int, float)
    if isinstance(w, bool) or isinstance(v, bool):
        if not (isinstance(w, bool) and isinstance(v, bool)):
            return False
    elif isinstance(w, num):
        if not isinstance(v, num):
            return False
    elif not isinstance(v, str):
        return False
    try:
        return {
            "=": v == w, "!=": v != w, "<": v < w, "<=": v <= w, ">": v > w, ">=": v >= w,
        }[cmp.op]
    except TypeError:
        return False


def _elements(node: Node) -> list[Node]:
    """A node, or the elements of an array node (arrays are stepped through implicitly)."""
    path, value = node
    if isinstance(value, list):
        return [e for i, v in enumerate(value, 1) for e in _elements(((*path, f"[{i}]"), v))]
    return [node]


def _children(node: Node, name: str) -> list[Node]:
    out = []
    for path, value in _elements(node):
        if isinstance(value, dict):
            for k, v in value.items():
                if (name == "*" or k == name) and v is not None:
                    out.append(((*path, k), v))
    return out


def _descendants(node: Node, name: str) -> list[Node]:
    out = []
    stack = [node]
    while stack:
        cur = stack.pop()
        kids = _children(cur, "*")
        out.extend(k for k in kids if name == "*" or k[0][-1] == name)
        stack.extend(reversed(kids))
    return out


def _rel(node: Node, rel: Rel) -> list[Node]:
    nodes = [node]
    for name in rel.names:
        nodes = [c for n in nodes for c in _children(n, name)]
    nodes = [e for n in nodes for e in _elements(n)]
    if rel.cmp is not None:
        nodes = [n for n in nodes if _compare(n[1], rel.cmp)]
    return nodes


def _holds(node: Node, cond: Cond) -> bool:
    if isinstance(cond, Rel):
        return bool(_rel(node, cond))
    if isinstance(cond, Count):
        return _compare(len(_rel(node, cond.rel)), cond.cmp)
    raise AssertionError(cond)


def _step(nodes: list[Node], step: Step) -> list[Node]:
    out = []
    for n in nodes:
        out.extend(_descendants(n, step.name) if step.descendant else _children(n, step.name))
    for cond in step.preds:
        if isinstance(cond, Position):
            out = [((*p, f"[{cond.n}]"), v[cond.n - 1]) for p, v in out
                   if isinstance(v, list) and len(v) >= cond.n and v[cond.n - 1] is not None]
        else:
            out = [n for n in out if _holds(n, cond)]
    return out


def match(pattern: Pattern, item: dict) -> list[str] | None:
    """The matched node paths of one top-level item (dotted, sorted), or None if it does not match."""
    found: dict[str, None] = {}
    root: Node = ((), item)
    for branch in pattern.branches:
        nodes = [root]
        for step in branch.steps:
            nodes = _step(nodes, step)
        if branch.cmp is not None:
            nodes = [e for n in nodes for e in _elements(n) if _compare(e[1], branch.cmp)]
        if not nodes:
            return None
        for path, _ in nodes:
            found.setdefault(".".join(path), None)
    return sorted(found)


_SAFE = re.compile(r"[A-Za-z0-9 _@.,:;!?#+*-]+")


def required_literals(pattern: Pattern) -> list[str]:
    """Strings every matching item's JSON text must contain (a cheap pre-filter before the
    matcher): string literals compared with '=' where a match needs at least one equal node.
    Only literals JSON never escapes are returned, so the filter cannot drop a matching item."""
    out: dict[str, None] = {}

    def need(cmp: Cmp | None) -> None:
        if cmp is not None and cmp.op == "=" and isinstance(cmp.value, str) and _SAFE.fullmatch(cmp.value):
            out.setdefault(cmp.value, None)

    for branch in pattern.branches:
        need(branch.cmp)
        for step in branch.steps:
            for cond in step.preds:
                if isinstance(cond, Rel):
                    need(cond.cmp)
                elif isinstance(cond, Count) and (
                    (cond.cmp.op in (">=", "=") and cond.cmp.value >= 1) or (cond.cmp.op == ">" and cond.cmp.value >= 0)
                ):
                    need(cond.rel.cmp)
    return list(out)
