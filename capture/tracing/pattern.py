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
from typing import Any, NamedTuple

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


_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|(?P<num>-?\d+(?:\.\d+)?)"
    r"|(?P<op>//|<=|>=|!=|[/\[\]()=<>.*])|(?P<name>[A-Za-z_][A-Za-z0-9_]*))"
)


class _Token(NamedTuple):
    kind: str  # str, num, op, name, end
    value: Any
    start: int  # offsets into the pattern text
    end: int

    def shown(self) -> str:
        return "the end" if self.kind == "end" else repr(self.value)


def _tokens(text: str) -> list[_Token]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m or m.end() == i:
            j = len(text) - len(text[i:].lstrip())
            raise _error(text, j, j + 1, f"unexpected character {text[j]!r}")
        kind = m.lastgroup
        raw = m.group(kind)
        if kind == "str":
            value: Any = re.sub(r"\\(.)", r"\1", raw[1:-1])
        elif kind == "num":
            value = float(raw) if "." in raw else int(raw)
        else:
            value = raw
        out.append(_Token(kind, value, m.start(kind), m.end()))
        i = m.end()
    out.append(_Token("end", None, len(text), len(text)))
    return out


def _error(text: str, start: int, end: int, what: str) -> PatternError:
    """The error at characters ``start:end`` of the pattern ``text``."""
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return PatternError(what, hint=HINT, line=line, column=column, span=(start, end), source=text)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> _Token:
        return self.toks[self.i]

    def take(self) -> _Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def error(self, tok: _Token, what: str) -> PatternError:
        return _error(self.text, tok.start, tok.end, what)

    def expect(self, value: str, what: str) -> None:
        tok = self.take()
        if tok.value != value or tok.kind not in ("op", "name"):
            raise self.error(tok, f"expected {what}, found {tok.shown()}")

    def is_op(self, *values: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.value in values

    def is_word(self, word: str) -> bool:
        tok = self.peek()
        return tok.kind == "name" and tok.value.lower() == word

    def pattern(self) -> Pattern:
        branches = [self.branch()]
        while self.is_word("and"):
            self.take()
            branches.append(self.branch())
        tok = self.peek()
        if tok.kind != "end":
            raise self.error(tok, f"expected 'and' or the end, found {tok.shown()}")
        return Pattern(tuple(branches), self.text)

    def branch(self) -> Branch:
        steps = []
        while self.is_op("/", "//"):
            steps.append(self.step())
        if not steps:
            tok = self.peek()
            raise self.error(tok, f"expected a step '/name' or '//name', found {tok.shown()}")
        return Branch(tuple(steps), self.maybe_cmp())

    def step(self) -> Step:
        sep = self.take().value
        tok = self.take()
        if not (tok.kind == "name" or (tok.kind == "op" and tok.value == "*")):
            raise self.error(tok, f"expected a field name or '*' after {sep!r}, found {tok.shown()}")
        preds: list[Cond] = []
        while self.is_op("["):
            self.take()
            preds.append(self.cond())
            while self.is_word("and"):
                self.take()
                preds.append(self.cond())
            self.expect("]", "']'")
        return Step(sep == "//", tok.value, tuple(preds))

    def cond(self) -> Cond:
        tok = self.peek()
        if tok.kind == "num":
            self.take()
            if not isinstance(tok.value, int) or tok.value < 1:
                raise self.error(tok, f"a position is a whole number >= 1, got {tok.value}")
            return Position(tok.value)
        if tok.kind == "name" and tok.value.lower() == "count" and self.toks[self.i + 1].value == "(":
            self.take()
            self.take()
            rel = self.rel()
            self.expect(")", "')' closing count(")
            cmp = self.maybe_cmp()
            if cmp is None or not isinstance(cmp.value, int):
                raise self.error(self.peek(), "count(...) needs a comparison with a whole number, e.g. >= 2")
            return Count(rel, cmp)
        return self.rel()

    def rel(self) -> Rel:
        tok = self.take()
        if tok.kind == "op" and tok.value == ".":
            names: tuple[str, ...] = ()
        elif tok.kind == "name":
            parts = [tok.value]
            while self.is_op("/"):
                self.take()
                part = self.take()
                if part.kind != "name":
                    raise self.error(part, f"expected a field name after '/', found {part.shown()}")
                parts.append(part.value)
            names = tuple(parts)
        else:
            raise self.error(tok, "expected a condition (a position, a field, '.' or count(...)), "
                                  f"found {tok.shown()}")
        return Rel(names, self.maybe_cmp())

    def maybe_cmp(self) -> Cmp | None:
        if not self.is_op(*CMPS):
            return None
        op = self.take().value
        tok = self.take()
        if tok.kind == "name" and tok.value.lower() in ("true", "false"):
            return Cmp(op, tok.value.lower() == "true")
        if tok.kind not in ("str", "num"):
            raise self.error(tok, f"expected a literal after {op!r} ('text', a number, true or false), "
                                  f"found {tok.shown()}")
        return Cmp(op, tok.value)


def parse_pattern(text: str) -> Pattern:
    """Parse a tree pattern; raises :class:`PatternError` pointing at the problem."""
    if not text or not text.strip():
        raise PatternError("the pattern is empty", hint="e.g. //id_str = 'lp'", source=text)
    return _Parser(text).pattern()


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
