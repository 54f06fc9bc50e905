"""Completion for the REPL (pure): classify the context into typed suggestions, then match.

`suggest(text_before_cursor, full_text)` looks at the tokens before the cursor and says what
may come next: a keyword, a type name (after FROM or a comma in the FROM list), an attribute
of an alias (after `alias.`), an alias in scope, an aggregate function, a backslash command,
MATCH inside a TRACE, or nothing (an alias being named, inside a string). Right after FROM,
`TRACE(` is offered next to the types; a `FROM TRACE(...) t` alias completes the trace columns.
`complete(...)` matches those suggestions
against a `Vocabulary`, a snapshot of the store's catalog, and yields `Candidate`s. The
prompt_toolkit adapter (`IqlCompleter`) is the only part that knows about prompt_toolkit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from prompt_toolkit.completion import Completer, Completion

from iql.ast import TRACE_COLUMNS as _TRACE_COLUMNS
from iql.ast import AggFunc, Wildcard

# ------------------------------------------------------------------------------ tokens

_TOKEN = re.compile(
    r"""(?P<comment>--[^\n]*)
      | (?P<string>'(?:[^']|'')*'?)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>[0-9]+(?:\.[0-9]+)?)
      | (?P<op><>|!=|<=|>=|[=<>*,.();-])
      | (?P<space>\s+)
      | (?P<other>.)""",
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # comment, string, name, number, op, other
    text: str
    start: int

    @property
    def upper(self) -> str:
        return self.text.upper()


def tokenize(text: str) -> list[Token]:
    """Tokens of (possibly unfinished) IQL text, without white space."""
    return [Token(m.lastgroup, m.group(), m.start()) for m in _TOKEN.finditer(text)
            if m.lastgroup != "space"]


# ------------------------------------------------------------------------------ suggestions


@dataclass(frozen=True, slots=True)
class Keyword:
    """An IQL keyword."""


@dataclass(frozen=True, slots=True)
class TypeName:
    """A type (alias or granularity name) or FROM wildcard."""


@dataclass(frozen=True, slots=True)
class Alias:
    """An alias declared in the statement's FROM lists."""


@dataclass(frozen=True, slots=True)
class Function:
    """An aggregate function."""


@dataclass(frozen=True, slots=True)
class Attribute:
    """An attribute (or `id`) of the elements bound to `alias`."""

    alias: str


@dataclass(frozen=True, slots=True)
class Command:
    """A backslash command name."""


@dataclass(frozen=True, slots=True)
class MatchWord:
    """MATCH, after TRACE, TRACE( or a TRACE's run string (MATCH is not a reserved word)."""


Suggestion = Keyword | TypeName | Alias | Function | Attribute | Command | MatchWord

TRACE_COLUMNS = tuple(name for name, _ in _TRACE_COLUMNS)

# the "type" of a `FROM TRACE(...) t` alias: its attributes are the trace rows' columns
TRACE_ROWS = "TRACE(...)"
TRACE_CALL = "TRACE("

_CLOSED_STRING = re.compile(r"'(?:[^']|'')*'")
_CLAUSE_END = {"WHERE", "GROUP", "HAVING", "ORDER", "LIMIT"}
_EXPR_CLAUSES = {"SELECT", "WHERE", "HAVING", "BY", "AND", "OR", "NOT", "UNDER", "FEEDS", "EMITS",
                 "INFLUENCES", "IN", "DISTINCT"}


def aliases(text: str) -> dict[str, tuple[str, ...]]:
    """Aliases declared in every FROM list of `text` -> the type names they range over.

    `FROM WebPage p, (Row, Column) c` gives {"p": ("WebPage",), "c": ("Row", "Column")}.
    """
    toks = tokenize(text)
    out: dict[str, tuple[str, ...]] = {}
    i = 0
    while i < len(toks):
        if toks[i].kind == "name" and toks[i].upper == "FROM":
            i += 1
            while i < len(toks):
                types: tuple[str, ...] = ()
                if toks[i].upper == "TRACE" and i + 1 < len(toks) and toks[i + 1].text == "(":
                    i = _after_parens(toks, i + 1)
                    types = (TRACE_ROWS,)
                elif toks[i].kind == "name":
                    types = (toks[i].text,)
                    i += 1
                elif toks[i].text == "(":
                    names = []
                    i += 1
                    while i < len(toks) and toks[i].text != ")":
                        if toks[i].kind == "name":
                            names.append(toks[i].text)
                        i += 1
                    types = tuple(names)
                    i += 1
                else:
                    break
                if i < len(toks) and toks[i].kind == "name" and toks[i].upper == "AS":
                    i += 1
                if (i < len(toks) and toks[i].kind == "name" and toks[i].upper not in _CLAUSE_END
                        and types):
                    out[toks[i].text] = types
                    i += 1
                if i < len(toks) and toks[i].text == ",":
                    i += 1
                    continue
                break
        else:
            i += 1
    return out


def _after_parens(toks: list[Token], i: int) -> int:
    """The index after the ")" matching the "(" at ``i`` (or the end)."""
    depth = 0
    for j in range(i, len(toks)):
        depth += {"(": 1, ")": -1}.get(toks[j].text, 0)
        if depth == 0:
            return j + 1
    return len(toks)


def _match_next(toks: list[Token]) -> bool:
    """MATCH comes next: after TRACE (not FROM TRACE: a "(" comes first), TRACE(, or a TRACE's
    run string."""
    def trace(k: int) -> bool:
        return k >= 0 and toks[k].kind == "name" and toks[k].upper == "TRACE"

    n = len(toks) - 1
    if trace(n):
        return not (n >= 1 and toks[n - 1].upper == "FROM")
    if toks[n].text == "(":
        return trace(n - 1)
    if toks[n].kind == "string":
        top_level_run = trace(n - 1) and not (n >= 2 and toks[n - 2].upper == "FROM")
        return top_level_run or (n >= 2 and toks[n - 1].text == "(" and trace(n - 2))
    return False


def _right_after_from(before: str) -> bool:
    """The word at the end of ``before`` starts a FROM list (where TRACE(...) may stand)."""
    toks = [t for t in tokenize(before[: len(before) - len(word_before(before))]) if t.kind != "comment"]
    return bool(toks) and toks[-1].kind == "name" and toks[-1].upper == "FROM"


def word_before(text: str) -> str:
    """The identifier being typed at the end of `text` (may be empty)."""
    m = re.search(r"[A-Za-z0-9_]*\Z", text)
    return m.group() if m else ""


def suggest(before: str) -> tuple[Suggestion, ...]:
    """What may be typed at the end of `before` (the text left of the cursor)."""
    stripped = before.lstrip()
    if stripped.startswith("\\"):
        if " " not in stripped:
            return (Command(),)
        name = stripped.split()[0]
        return (TypeName(),) if name in ("\\d", "\\describe") else ()
    word = word_before(before)
    head = before[: len(before) - len(word)]
    toks = tokenize(head)
    if toks and toks[-1].kind == "string" and not _CLOSED_STRING.fullmatch(toks[-1].text):
        return ()  # inside a string literal
    if toks and toks[-1].kind == "comment" and "\n" not in head[toks[-1].start:]:
        return ()  # inside a comment
    toks = [t for t in toks if t.kind != "comment"]
    if toks and toks[-1].text == "." and len(toks) >= 2 and toks[-2].kind == "name":
        return (Attribute(toks[-2].text),)
    if not toks:
        return (Keyword(),)
    if _match_next(toks):
        return (MatchWord(),)
    if toks[-1].upper == "MATCH" and len(toks) > 1 and _match_next(toks[:-1]):
        return ()  # the tree pattern, a string, comes next
    last = toks[-1]
    # Find the innermost clause keyword before the cursor.
    clause = None
    for t in reversed(toks):
        if t.kind == "name" and t.upper in {"SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER",
                                            "LIMIT"}:
            clause = t.upper
            break
    if clause == "FROM":
        if last.upper == "FROM" or last.text == "," or (last.text == "(" and _in_tuple(toks)):
            return (TypeName(),)
        if last.kind == "name" and last.upper == "AS":
            return ()  # naming an alias
        if last.kind == "name" and _is_type_position(toks):
            return ()  # after a type comes its alias
        return (Keyword(),)
    if clause == "LIMIT":
        return ()
    if last.kind == "name" and last.upper == "AS":
        return ()
    if last.kind in ("name", "number", "string") and last.upper not in _EXPR_CLAUSES \
            and last.upper not in {"IS", "EXISTS"}:
        return (Keyword(),)
    if last.text == ")":
        return (Keyword(),)
    return (Alias(), Function(), Keyword())


def _in_tuple(toks: list[Token]) -> bool:
    return len(toks) >= 2 and toks[-1].text == "(" and (
        toks[-2].text == "," or toks[-2].upper == "FROM")


def _is_type_position(toks: list[Token]) -> bool:
    """The last token is a FROM type name (follows FROM or a comma), so an alias comes next."""
    if len(toks) < 2:
        return False
    prev = toks[-2]
    if prev.text == "(" or (prev.text == "," and _inside_parens(toks)):
        return True  # inside a type tuple: another granularity or `)`
    return prev.upper == "FROM" or prev.text == ","


def _inside_parens(toks: list[Token]) -> bool:
    depth = 0
    for t in reversed(toks):
        if t.text == ")":
            depth += 1
        elif t.text == "(":
            if depth == 0:
                return True
            depth -= 1
        elif t.kind == "name" and t.upper == "FROM":
            return False
    return False


# ------------------------------------------------------------------------------ matching


@dataclass(frozen=True)
class Vocabulary:
    """What completion can offer: keywords, functions, types and their attributes, commands."""

    keywords: tuple[str, ...]
    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # type name -> attributes
    commands: Mapping[str, str] = field(default_factory=dict)  # "\d" -> help
    functions: tuple[str, ...] = tuple(f.value for f in AggFunc)

    @classmethod
    def of_catalog(cls, catalog, keywords: Iterable[str], commands: Mapping[str, str]) -> Vocabulary:
        types: dict[str, tuple[str, ...]] = {}
        for name in catalog.type_names():
            info = catalog.type_by_name(name)
            types[name] = tuple(a for a, _ in info.attributes) if info else ()
        for w in Wildcard:
            types.setdefault(w.value, ())
        return cls(tuple(keywords), types, dict(commands))

    def attributes_of(self, type_names: tuple[str, ...], catalog=None) -> tuple[str, ...]:
        if type_names == (TRACE_ROWS,):
            return TRACE_COLUMNS
        attrs: list[str] = ["id"]
        if len(type_names) == 1:
            attrs += self.types.get(type_names[0], ())
        elif catalog is not None:
            info = catalog.type_by_granularities(type_names)
            attrs += [a for a, _ in info.attributes] if info else []
        return tuple(dict.fromkeys(attrs))


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    meta: str  # shown next to the completion: "keyword", "type", "alias of WebPage", ...


def _matches(word: str, options: Iterable[str]) -> list[str]:
    low = word.lower()
    return [o for o in options if o.lower().startswith(low)]


def complete(before: str, full: str, vocab: Vocabulary, catalog=None) -> list[Candidate]:
    """Candidates for the word at the end of `before`, given the whole statement `full`."""
    word = word_before(before)
    if before.lstrip().startswith("\\") and " " not in before.lstrip():
        word = before.lstrip()
    out: list[Candidate] = []
    scope = aliases(full)
    for s in suggest(before):
        if isinstance(s, Command):
            out += [Candidate(c, h) for c, h in vocab.commands.items() if c.startswith(word)]
        elif isinstance(s, TypeName):
            out += [Candidate(t, "type") for t in _matches(word, sorted(vocab.types))]
            if _right_after_from(before) and _matches(word, [TRACE_CALL]):
                call = TRACE_CALL if word == "" or word[:1].isupper() else TRACE_CALL.lower()
                out.append(Candidate(call, "trace a captured run"))
        elif isinstance(s, MatchWord):
            if _matches(word, ["MATCH"]):
                out.append(Candidate("MATCH" if word == "" or word[:1].isupper() else "match", "keyword"))
        elif isinstance(s, Attribute):
            types = scope.get(s.alias)
            if types is None:
                continue
            meta = "trace column" if types == (TRACE_ROWS,) else "attribute of " + " + ".join(types)
            out += [Candidate(a, meta) for a in _matches(word, vocab.attributes_of(types, catalog))]
        elif isinstance(s, Alias):
            out += [Candidate(a, "alias of " + ", ".join(t)) for a, t in scope.items()
                    if a.lower().startswith(word.lower())]
        elif isinstance(s, Function):
            out += [Candidate(f, "aggregate") for f in _matches(word, vocab.functions)]
        elif isinstance(s, Keyword):
            upper = word == "" or word[:1].isupper()
            out += [Candidate(k if upper else k.lower(), "keyword") for k in _matches(word, vocab.keywords)]
    return out


class IqlCompleter(Completer):
    """prompt_toolkit adapter; wrap in `ThreadedCompleter`."""

    def __init__(self, vocab: Vocabulary, catalog=None) -> None:
        self.vocab = vocab
        self.catalog = catalog

    def get_completions(self, document, complete_event) -> Iterator[Completion]:
        before = document.text_before_cursor
        word = word_before(before)
        if before.lstrip().startswith("\\") and " " not in before.lstrip():
            word = before.lstrip()
        for c in complete(before, document.text, self.vocab, self.catalog):
            yield Completion(c.text, start_position=-len(word), display_meta=c.meta)
