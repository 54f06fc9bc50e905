"""Tree patterns (capture/treepattern.py): parsing, user errors, matching against a reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capture.treepattern import PatternError, match, parse_pattern

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
    ("pattern", "where", "what"),
    [
        ("user/id_str", 1, "expected a step"),
        ("/user[", 7, "expected a condition"),
        ("/a = ", 6, "expected a literal"),
        ("/a[0]", 4, "a position is a whole number >= 1"),
        ("/a[count(b)]", 12, "count(...) needs a comparison"),
        ("/a ! 'x'", 4, "unexpected character '!'"),
        ("/a /b extra", 7, "expected 'and' or the end"),
    ],
)
def test_bad_patterns_say_what_and_where(pattern, where, what):
    with pytest.raises(PatternError) as err:
        parse_pattern(pattern)
    text = str(err.value)
    assert what in text and f"position {where}" in text
    assert err.value.column == where
    assert "hint:" in text  # an example of a correct pattern


def test_empty_pattern():
    with pytest.raises(PatternError, match="empty"):
        parse_pattern("  ")


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

    from capture.treepattern import required_literals

    for text in (f"//{name} = '{value}'", f"/{name}[count(. = '{value}') >= {n}]",
                 f"/{name}[. = '{value}'] and //{name}", f"//*[{name} = '{value}']"):
        pat = parse_pattern(text)
        if match(pat, item) is not None:
            doc = json.dumps(item)
            assert all(f'"{lit}"' in doc for lit in required_literals(pat)), text
