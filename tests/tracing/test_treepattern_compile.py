"""Tree patterns compiled to Spark expressions (capture/tracing/spark/compile.py) give exactly what the
Python matcher (capture.tracing.pattern.match, the reference) gives: same items, same matched paths."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.strategies import SPARK_EXAMPLES

from capture.tracing.pattern import match, parse_pattern
from capture.tracing.spark.compile import docs_schema, match_column, match_docs, prepare_match
from store.spark.frames import local_frame

LP = {"user": {"id_str": "lp", "name": "Lisa Paul"},
      "tweets": [{"text": "Hello @ls"}, {"text": "Hello World"}, {"text": "Hello World"}, {"text": "Hello @lp"}]}
ITEMS = [
    LP,
    {"user": {"id_str": "jm"}, "tweets": [{"text": "Hello World"}]},
    {"a": [{"b": [1, 5, 7]}, {"b": [2]}], "n": 3.5, "flag": True, "nest": [[1, 2], None, [3]]},
    {"a": [], "n": 2, "flag": False, "user": {"name": "lp"}},
]
PATTERNS = [
    "//id_str = 'lp' and /tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'",
    "/user/id_str", "/user", "//name", "/tweets[2]/text", "/tweets[9]/text",
    "/tweets/text != 'Hello World'", "/tweets[count(.) = 4]", "/user[id_str = 'lp' and name = 'Lisa Paul']/name",
    "//*[. = 'lp']", "/tweets/*", "/user/id_str > 'a'", "/user/id_str = 3", "/a/b > 4", "/a[count(b) = 4]",
    "/a[2]/b[1]", "/n >= 3.5", "/n < 3", "/flag = true", "/flag != true", "/nest[count(.) = 4]", "/nest > 1",
    "/nest[2]", "/nest[3]", "//*", "/user[1]", "/a[count(b) >= 1]/b", "//b[2]", "/tweets[2][count(text) = 1]/text",
]


def _compare_all(spark, items, patterns):
    docs = local_frame(spark, [(i, json.dumps(d)) for i, d in enumerate(items)], "id long, doc string")
    schema = docs_schema(docs)
    cols, names = [], []
    for k, text in enumerate(patterns):
        col, plan = match_column(parse_pattern(text), schema)
        assert plan.compiled, (text, plan.reason)
        cols.append(col.alias(f"m{k}"))
        names.append(f"m{k}")
    rows = docs.select("id", *cols).collect()  # one Spark job for every pattern
    for k, text in enumerate(patterns):
        pat = parse_pattern(text)
        got = {r.id: (list(r[names[k]]) if r[names[k]] is not None else None) for r in rows}
        want = {i: match(pat, d) for i, d in enumerate(items)}
        assert got == want, text


def test_every_pattern_form_agrees_with_the_python_matcher(spark):
    _compare_all(spark, ITEMS, PATTERNS)


def test_trace_matching_is_compiled_and_finds_the_running_example(spark):
    docs = local_frame(spark, [(i, json.dumps(d)) for i, d in enumerate(ITEMS)], "id long, doc string")
    prep = prepare_match(docs, PATTERNS[0])
    assert prep.plan.compiled and prep.column is not None
    assert "no Python worker" in "\n".join(prep.plan.describe())
    assert match_docs(docs, PATTERNS[0]) == {0: ["tweets.[2].text", "tweets.[3].text", "user.id_str"]}
    assert match_docs(docs, PATTERNS[0], compiled=False) == match_docs(docs, PATTERNS[0])


# ---- property: random items of one random schema, random patterns --------------------------
NAMES = ("a", "b", "id", "text")
WORDS = ("lp", "x", "Hello World")


def _schemas(depth: int):
    leaf = st.sampled_from(["str", "int", "num", "bool"])
    if depth == 0:
        return leaf
    sub = _schemas(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.just("arr"), sub),
        st.dictionaries(st.sampled_from(NAMES), sub, min_size=1, max_size=3).map(lambda d: ("obj", d)),
    )


def _value(draw, schema):
    if draw(st.integers(0, 9)) == 0:
        return None
    if schema == "str":
        return draw(st.sampled_from(WORDS))
    if schema == "int":
        return draw(st.integers(0, 3))
    if schema == "num":
        return draw(st.sampled_from([0.5, 1.0, 2.5, 3.0]))
    if schema == "bool":
        return draw(st.booleans())
    if schema[0] == "arr":
        return [_value(draw, schema[1]) for _ in range(draw(st.integers(0, 3)))]
    return {k: _value(draw, s) for k, s in schema[1].items() if draw(st.integers(0, 4))}


LITERALS = st.sampled_from(["'lp'", "'x'", "'Hello World'", "0", "1", "2.5", "3", "true", "false"])
CMPS = st.sampled_from(["=", "!=", "<", ">=", ">"])


@st.composite
def _patterns(draw):
    def rel():
        names = draw(st.lists(st.sampled_from(NAMES), max_size=2))
        base = "/".join(names) or "."
        return base + (f" {draw(CMPS)} {draw(LITERALS)}" if draw(st.booleans()) else "")

    def step():
        text = draw(st.sampled_from(["/", "//"])) + draw(st.sampled_from([*NAMES, "*"]))
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.integers(0, 2))
            if kind == 0:
                text += f"[{draw(st.integers(1, 3))}]"
            elif kind == 1:
                text += f"[{rel()}]"
            else:
                text += f"[count({rel()}) {draw(CMPS)} {draw(st.integers(0, 3))}]"
        return text

    branches = []
    for _ in range(draw(st.integers(1, 2))):
        b = "".join(step() for _ in range(draw(st.integers(1, 3))))
        if draw(st.booleans()):
            b += f" {draw(CMPS)} {draw(LITERALS)}"
        branches.append(b)
    return " and ".join(branches)


@st.composite
def _cases(draw):
    schema = ("obj", draw(st.dictionaries(st.sampled_from(NAMES), _schemas(2), min_size=1, max_size=3)))
    items = [_value(draw, schema) or {} for _ in range(draw(st.integers(1, 6)))]
    patterns = draw(st.lists(_patterns(), min_size=1, max_size=8))
    return items, patterns


@settings(max_examples=SPARK_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_cases())
def test_compiled_patterns_equal_the_reference_on_random_items(spark, case):
    items, patterns = case
    if not any(items):  # nothing to infer a schema from: nothing can match either way
        items = [*items, {"id": "x"}]
    _compare_all(spark, items, patterns)


@pytest.mark.parametrize("text", ["/a[count(b) = 1]", "//text = 'x'"])
def test_patterns_over_missing_fields_match_nothing(spark, text):
    _compare_all(spark, [{"id": 1}, {"id": 2}], [text])


def test_stored_result_columns_match_like_their_json(spark):
    """TRACE matches on the run's stored Parquet columns (no JSON): ints, doubles, dates, nested
    arrays of structs and nulls give the same items and paths as the Python matcher over the
    items' JSON, and a map column falls back to that matcher."""
    import datetime

    from pyspark.sql import functions as F

    from capture.tracing.spark.compile import matched_frame, prepare_items

    rows = [(1, "lp", 3, 1.5, ["a", "b"], [("x", 2)], datetime.date(2024, 5, 1), {"k": 1}),
            (2, "jm", None, 2.0, None, [("y", 5), ("x", 7)], None, {}),
            (3, None, 4, -1.0, [], [], datetime.date(2023, 1, 2), None)]
    df = local_frame(spark, rows, "__strata_id_1 long, id_str string, n int, x double, tags array<string>, "
                                     "m array<struct<k:string,v:int>>, d date, props map<string,int>")
    df = df.select("__strata_id_1", F.struct("id_str", "n").alias("user"), "x", "tags", "m", "d", "props")
    visible = ["user", "x", "tags", "m", "d"]
    docs = df.select(F.col("__strata_id_1").alias("id"), F.to_json(F.struct(*visible)).alias("doc"))
    for text in ["/user/n = 3 and /tags[2] = 'b'", "/m[k = 'x']/v", "/m[count(.) >= 2]", "/x < 0",
                 "/d = '2024-05-01'", "//id_str", "/tags", "/user/n > 3.5"]:
        prep = prepare_items(df, "__strata_id_1", visible, text)
        assert prep.column is not None and prep.plan.compiled, text
        got = {r.id: list(r._paths) for r in matched_frame(prep, None).collect()}
        pat = parse_pattern(text)
        want = {r.id: m for r in docs.collect() if (m := match(pat, json.loads(r.doc))) is not None}
        assert got == want, text
    prep = prepare_items(df, "__strata_id_1", [*visible, "props"], "/props/k = 1")
    assert prep.column is None and "map" in prep.plan.reason
    assert {r.id for r in matched_frame(prep, None).collect()} == {1}

