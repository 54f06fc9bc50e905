"""Tree patterns (capture/tracing/pattern.py): parsing, user errors, matching against a reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capture.tracing import PatternError, parse_pattern
from capture.tracing.pattern import match
from store.errors import UserError

LP = {
    "user": {"id_str": "lp", "name": "Lisa Paul"},
    "tweets": [{"text": "Hello @ls"}, {"text": "Hello World"}, {"text": "Hello World"}, {"text": "Hello @lp"}],
}
QUESTION = "//id_str = 'lp' and /tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'"


def m(pattern: str, item=LP):
    return match(parse_pattern(pattern), item)


def test_the_running_example_question_matches_the_duplicate_texts_and_the_user():
    assert m(QUESTION) == ["tweets.[2].text", "tweets.[3].text", "user.id_str"]
    other = {"user": {"id_str": "lp"}, "tweets": [{"text": "Hello World"}, {"text": "x"}]}
    assert m(QUESTION, other) is None  # only one Hello World: the multiplicity fails
    assert m(QUESTION, {**LP, "user": {"id_str": "jm"}}) is None


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("/user/id_str", ["user.id_str"]),
        ("/user", ["user"]),
        ("//name", ["user.name"]),
        ("/tweets[2]/text", ["tweets.[2].text"]),
        ("/tweets[9]/text", None),
        ("/tweets/text != 'Hello World'", ["tweets.[1].text", "tweets.[4].text"]),
        ("/tweets[count(.) = 4]", ["tweets"]),
        ("/tweets[count(.) > 4]", None),
        ("/user[id_str = 'lp' and name = 'Lisa Paul']/name", ["user.name"]),
        ("/user[id_str = 'zz']/name", None),
        ("//*[. = 'lp']", ["user.id_str"]),
        ("/tweets/*", ["tweets.[1].text", "tweets.[2].text", "tweets.[3].text", "tweets.[4].text"]),
        ("/user/id_str > 'a'", ["user.id_str"]),
        ("/user/id_str = 3", None),  # a string never equals a number
    ],
)
def test_steps_conditions_positions_and_multiplicity(pattern, expected):
    assert m(pattern) == expected


def test_numbers_and_nested_arrays():
    item = {"a": [{"b": [1, 5, 7]}, {"b": [2]}], "n": 3.5}
    assert m("/a/b > 4", item) == ["a.[1].b.[2]", "a.[1].b.[3]"]
    assert m("/a[count(b) = 4]", item) == ["a"]
    assert m("/a[2]/b[1]", item) == ["a.[2].b.[1]"]
    assert m("/n >= 3.5", item) == ["n"]
    assert m("/flag = true", {"flag": True}) == ["flag"]
    assert m("/flag = true", {"flag": 1}) is None


@pytest.mark.parametrize(
    ("pattern", "span", "what", "hint"),
    [
        ("user/id_str", (0, 4), "unexpected 'user'; expected a step ('/name' or '//name')",
         "a pattern starts with a step"),
        ("/user[", (6, 6), "the pattern ended early; expected '.', a field name or a number",
         "a condition is a position, a field, '.' or count(...)"),
        ("/a = ", (5, 5), "the pattern ended early; expected a boolean (true, false), a number or a string ('text')",
         "compare with a literal"),
        ("/a = b", (5, 6), "unexpected 'b'; expected a boolean (true, false), a number or a string ('text')",
         "compare with a literal"),
        ("/a[0]", (3, 4), "a position is a whole number >= 1, got 0", "//id_str = 'lp'"),
        ("/a[count(b)]", (11, 12), "count(...) needs a comparison with a whole number, e.g. >= 2", "//id_str = 'lp'"),
        ("/a[cnt(b) > 1]", (3, 6), "unknown function 'cnt'", "count(...) is the one function"),
        ("/a ! 'x'", (3, 4), "unexpected character '!'", "//id_str = 'lp'"),
        ("/a = 'x", (5, 6), "unterminated string", "close the string with '"),
        ("/a /b extra", (6, 11), "unexpected 'extra'; expected the end of the pattern, '[', 'and', a comparison "
                                "(=, !=, <, <=, >, >=) or a step ('/name' or '//name')", "//id_str = 'lp'"),
    ],
)
def test_bad_patterns_say_what_and_where(pattern, span, what, hint):
    with pytest.raises(PatternError) as err:
        parse_pattern(pattern)
    e = err.value
    assert isinstance(e, UserError)
    assert (e.message, e.span, e.column, e.line, e.source) == (what, span, span[0] + 1, 1, pattern)
    assert "\n" not in e.message and "^" not in e.message
    assert e.hint and hint in e.hint  # what to write instead, or an example of a correct pattern
    carets = " " * (span[0] + 2) + "^" * max(1, span[1] - span[0])
    assert str(e) == (f"tree pattern: {what} (line 1, column {span[0] + 1})\n  {pattern}\n{carets}\n"
                      f"  hint: {e.hint}")


@pytest.mark.parametrize(
    ("pattern", "branches"),
    [
        ("/and/true[count = 2]",
         "(Branch(steps=(Step(descendant=False, name='and', preds=()), Step(descendant=False, "
         "name='true', preds=(Rel(names=('count',), cmp=Cmp(op='=', value=2)),))), cmp=None),)"),
        ("/a = TRUE and //b[COUNT(.) > 1 AND c/d != \"x\\\"y\"]",
         "(Branch(steps=(Step(descendant=False, name='a', preds=()),), cmp=Cmp(op='=', value=True)), "
         "Branch(steps=(Step(descendant=True, name='b', preds=(Count(rel=Rel(names=(), cmp=None), "
         "cmp=Cmp(op='>', value=1)), Rel(names=('c', 'd'), cmp=Cmp(op='!=', value='x\"y')))),), cmp=None))"),
    ],
    ids=["keywords-as-field-names", "case-and-escapes"],
)
def test_keywords_are_words_only_where_they_can_be(pattern, branches):
    """and, true, false and count are field names wherever a field name goes; keywords match in
    any case; a backslash escapes a quote in a string."""
    assert repr(parse_pattern(pattern).branches) == branches


def test_a_pattern_error_points_into_an_enclosing_text():
    """A pattern held in a string literal of a larger text (a TRACE statement, quotes written
    twice) reports its error there: line, column and caret in the enclosing text."""
    from capture.tracing.pattern import Embedded

    query = "TRACE MATCH '/a[b = ''x''][0]'"
    pattern = "/a[b = 'x'][0]"
    with pytest.raises(PatternError) as err:
        parse_pattern(pattern, Embedded(query, query.index("/a")))
    e = err.value
    start, end = e.span
    assert query[start:end] == "0" and e.source == query and (e.line, e.column) == (1, start + 1)
    assert f"\n  {query}\n  {' ' * start}^\n" in str(e)


def test_a_pattern_over_several_lines_gives_the_line_and_column():
    with pytest.raises(PatternError) as err:
        parse_pattern("/a\n  /b extra")
    e = err.value
    assert (e.line, e.column, e.span) == (2, 6, (8, 13))
    assert "(line 2, column 6)\n    /b extra\n       ^^^^^\n" in str(e)


def test_empty_pattern():
    with pytest.raises(PatternError, match="empty") as err:
        parse_pattern("  ")
    assert err.value.message == "the pattern is empty" and err.value.span is None
    assert str(err.value).startswith("tree pattern: the pattern is empty")


# ---- property: // and count() agree with a direct walk of the tree ----------------------
names = st.sampled_from(["a", "b", "c"])
leaves = st.one_of(st.integers(0, 3), st.sampled_from(["x", "y"]))
trees = st.recursive(
    leaves,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(names, kids, max_size=3)),
    max_leaves=12,
)


def _walk(value, path=()):
    """Reference: every (path, field name, value) below value, arrays 1-based."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*path, k), k, v
            yield from _walk(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value, 1):
            yield from _walk(v, (*path, f"[{i}]"))


def _expand(path, v):
    if isinstance(v, list):
        for i, e in enumerate(v, 1):
            yield from _expand((*path, f"[{i}]"), e)
    else:
        yield path, v


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(names, trees, max_size=3), names, st.sampled_from(["x", "y"]), st.integers(0, 3))
def test_descendant_equality_and_count_agree_with_a_walk(item, name, value, n):
    hits = sorted(
        ".".join(p) for path, k, v in _walk(item) if k == name
        for p, e in _expand(path, v) if e == value and isinstance(e, str)
    )
    got = m(f"//{name} = '{value}'", item)
    assert (got or []) == sorted(set(hits))
    # multiplicity: the number of equal elements of a top-level field
    if name in item:
        k = sum(1 for _, e in _expand((), item[name]) if e == value and isinstance(e, str))
        got = m(f"/{name}[count(. = '{value}') >= {n}]", item)
        assert (got == [name]) == (k >= n)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(names, trees, max_size=3), names, st.sampled_from(["x", "y"]), st.integers(0, 2))
def test_required_literals_never_drop_a_match(item, name, value, n):
    import json

    from capture.tracing.pattern import required_literals

    for text in (f"//{name} = '{value}'", f"/{name}[count(. = '{value}') >= {n}]",
                 f"/{name}[. = '{value}'] and //{name}", f"//*[{name} = '{value}']"):
        pat = parse_pattern(text)
        if match(pat, item) is not None:
            doc = json.dumps(item)
            assert all(f'"{lit}"' in doc for lit in required_literals(pat)), text
