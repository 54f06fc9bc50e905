"""Strata's grammars (`grammar/*.lark`: IQL and tree patterns) and the one way they are parsed.

The grammars ship as package data so installed wheels can parse. This package also holds what
every language parsed from them shares, so IQL (iql/parser.py) and tree patterns
(capture/tracing/pattern.py) read and report the same way: :func:`parser` builds a grammar's
Lark LALR(1) parser, :func:`syntax_problem` turns Lark's ``UnexpectedInput`` into a message in
words with a line, a column and a span. It lives here, not in iql/ or store/, because it is the
one place both languages may import: capture must not import iql, and store must not import
Lark or grammar/. It imports nothing of Strata's other packages and returns plain data, so each
language raises its own error class (``IqlSyntaxError``, ``PatternError``) from it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken


def load(name: str = "iql") -> str:
    """The text of grammar `name` (without the `.lark` suffix), read from the installed package."""
    return resources.files(__name__).joinpath(f"{name}.lark").read_text(encoding="utf-8")


@cache
def parser(name: str, lexer: str = "basic") -> Lark:
    """Grammar `name` as a Lark LALR(1) parser with positions and None for absent optional parts.

    cache=True: Lark keeps the built LALR tables in a file of the temp folder, keyed by the
    grammar's hash, the options and Lark's version (about 5 ms to load instead of 60 ms to build,
    in every new process)."""
    return Lark(load(name), parser="lalr", lexer=lexer, propagate_positions=True,
                maybe_placeholders=True, cache=True)


def word(terminal: str) -> str:
    """A terminal's name without the leading underscore that keeps it out of the tree."""
    return terminal.lstrip("_")


def expected_words(names: Collection[str], words: Mapping[str, str]) -> str:
    """Terminal names as words for "expected ..." (`words` names them; a keyword is its name)."""
    out = []
    for name in sorted(set(names)):
        if name.startswith("__") or name == "COMMENT":
            continue
        name = word(name)
        out.append(words.get(name, name if name.isupper() else repr(name)))
    out = sorted(set(out), key=lambda w: (w.startswith("'") or w.startswith("a"), w))
    if not out:
        return "something else"
    if len(out) > 12:
        return ", ".join(out[:12]) + ", ..."
    return ", ".join(out[:-1]) + (" or " if len(out) > 1 else "") + out[-1]


@dataclass(frozen=True, slots=True)
class Problem:
    """What a syntax error says and where: ``span`` is offsets into the parsed text, ``line`` and
    ``column`` (1-based) where it starts; ``char`` is the unexpected character, or None when a
    token was unexpected; ``token`` that token (None for a character or the end)."""

    message: str
    hint: str | None
    line: int
    column: int
    span: tuple[int, int]
    char: str | None = None
    token: Token | None = None


def syntax_problem(e: UnexpectedInput, text: str, lark: Lark, words: Mapping[str, str], *,
                   what: str, examples: Mapping[str, list[str]] | None = None,
                   hint: Callable[[Token, Collection[str]], str | None] | None = None) -> Problem:
    """Lark's error over `text` in words, as lark's ``UnexpectedInput.get_context`` places it.

    A character no terminal starts with: "unexpected character 'x'". A token the grammar does not
    take there: "unexpected 'x'; expected ..." (`words` names the terminals). The input running out
    (``UnexpectedToken`` on ``$END`` with LALR): "{what} ended early; expected ...". The hint is
    `hint(token, expected)` when it gives one, else the label ``match_examples`` finds in
    `examples` (common mistakes, by parser state and token)."""
    label = e.match_examples(lark.parse, examples, use_accepts=True) if examples else None
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        return Problem(f"unexpected character {ch!r}", label, e.line, e.column,
                       (e.pos_in_stream, e.pos_in_stream + 1), char=ch)
    assert isinstance(e, UnexpectedToken)
    tok = e.token
    expected = e.accepts or e.expected
    said = expected_words(expected, words)
    if tok.type == "$END":
        lines = text.splitlines() or [""]
        return Problem(f"{what} ended early; expected {said}", label, len(lines), len(lines[-1]) + 1,
                       (len(text), len(text)))
    return Problem(f"unexpected {str(tok)!r}; expected {said}", (hint and hint(tok, expected)) or label,
                   tok.line, tok.column, (tok.start_pos, tok.end_pos), token=tok)
