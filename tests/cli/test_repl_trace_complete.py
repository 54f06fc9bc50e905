"""REPL completion around TRACE: `TRACE(` after FROM, MATCH after TRACE / its run string, and the
trace columns of a `FROM TRACE(...) t` alias (pure: no Spark)."""

from __future__ import annotations

import pytest

from iql import TRACE_COLUMNS
from strata.repl_complete import (
    Keyword,
    MatchWord,
    TypeName,
    aliases,
    complete,
    suggest,
)

COLUMNS = tuple(name for name, _ in TRACE_COLUMNS)


@pytest.fixture()
def vocab(movies_vocab):
    return movies_vocab


def texts(before: str, vocab, full: str | None = None) -> list[str]:
    return [c.text for c in complete(before, before if full is None else full, vocab)]


@pytest.mark.parametrize("before, expected", [
    ("TRACE ", (MatchWord(),)),
    ("trace ma", (MatchWord(),)),
    ("EXPLAIN TRACE ", (MatchWord(),)),
    ("TRACE 'running-example/run-1' ", (MatchWord(),)),
    ("select * from TRACE(", (MatchWord(),)),
    ("select * from TRACE('run-1' ", (MatchWord(),)),
    ("TRACE 'run-1", ()),  # inside the run string
    ("TRACE MATCH ", ()),  # the pattern (a string) comes next
    ("select * from TRACE ", ()),  # "(" comes next, not MATCH
    ("TRACE MATCH '/user/id_str' ", (Keyword(),)),  # LIMIT
    ("select * from TRACE(MATCH '/user') ", (Keyword(),)),  # an alias or WHERE
    ("select * from ", (TypeName(),)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_trace_contexts_are_classified(before, expected):
    assert suggest(before) == expected


def test_trace_call_is_offered_right_after_from_with_the_types(vocab):
    every = texts("select * from ", vocab)
    assert "TRACE(" in every and "WebPage" in every
    assert texts("select * from TR", vocab) == ["TRACE("]
    assert texts("select * from tr", vocab) == ["trace("]  # lower-case word, lower-case keyword
    got = complete("select * from T", "select * from T", vocab)
    assert [(c.text, c.meta) for c in got if c.text == "TRACE("] == [("TRACE(", "trace a captured run")]
    # a trace cannot be joined with element types: not offered after a comma
    assert "TRACE(" not in texts("select p.id from WebPage p, ", vocab)


def test_match_is_offered_after_trace_and_its_run_string(vocab):
    assert texts("TRACE ", vocab) == ["MATCH"]
    assert texts("trace 'r1' m", vocab) == ["match"]
    assert texts("SELECT path FROM TRACE('r1' ", vocab) == ["MATCH"]
    assert texts("TRACE x", vocab) == []  # nothing else fits there


def test_a_trace_alias_completes_the_trace_columns(vocab):
    full = "select t. from TRACE('r' MATCH '/a)') t where t.role = 'contributing'"
    assert aliases(full)["t"] == ("TRACE(...)",)
    got = complete("select t.", full, vocab)
    assert [c.text for c in got] == list(COLUMNS) and {c.meta for c in got} == {"trace column"}
    assert texts("select t.ro", vocab, full) == ["role"]
