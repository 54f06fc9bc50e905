"""TRACE on the driver (capture/tracing/duckdb/) against TRACE on Spark: the same backtraces.

Each run is traced twice from the same committed files: through a store whose Spark cannot start
(the local engine: pyarrow reads, the reference matcher) and through a store forced onto Spark
(the compiled match). Runs: the running example with a split store copy (Parquet output) and with
a one-table copy (JSON output), and a pipeline over typed columns (numbers, decimals, dates,
timestamps, binary, nested arrays of structs; a map column for the to_json view).
"""

from __future__ import annotations

import datetime
import decimal

import pytest
from pyspark.sql import functions as F
from support.capture_helpers import TWEETS
from support.running_example import running_example

import iql
from capture import Tracker
from capture.tracing import parse_pattern, trace
from store import Store
from store.errors import UserError

UTC = datetime.timezone.utc  # instants independent of the machine's time zone
EXAMPLE_PATTERNS = [
    "//id_str = 'lp' and /tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'",
    "/user/id_str",
    "//text = 'Hello World'",
    "/tweets[2]/text",
    "/tweets[count(.) >= 3]",
    "//*",
    "/user/name != 'Lisa Paul'",
    "/nothing",
]
TYPED_PATTERNS = [
    "/n > 2", "/big >= 5000000000", "/x < 0", "/f = 1.5", "/dec = 2.5", "/dec0 = 3", "/flag = true",
    "/d = '2024-05-01'", "/ts = '2024-05-01 12:30:00.5'", "/ts >= '2024-05-01'", "/tsn = '2023-01-02 03:04:05'",
    "/b = 'ab'", "/m[k = 'x']/v > 1", "//v", "/tags[2] = 'b'", "/s = 'lp'",
]


def no_spark():
    raise AssertionError("the local TRACE started Spark")


def _typed_input(spark, path: str, with_map: bool) -> None:
    rows = [
        (1, 5_000_000_001, 1.5, 1.5, decimal.Decimal("2.50"), decimal.Decimal("3"), True,
         datetime.date(2024, 5, 1), datetime.datetime(2024, 5, 1, 12, 30, 0, 500000, tzinfo=UTC),
         datetime.datetime(2023, 1, 2, 3, 4, 5), b"ab", [("x", 2)], ["a", "b"], "lp", {"k": 1}),
        (3, 7, -1.0, 0.1, decimal.Decimal("0.10"), decimal.Decimal("12"), False,
         datetime.date(2023, 1, 2), datetime.datetime(2023, 1, 2, tzinfo=UTC), None, b"\xff",
         [("y", 5), ("x", 7)], [], "ls", {}),
        (None, None, None, None, None, None, None, None, None, None, None, None, None, "jm", None),
    ]
    schema = ("n int, big long, x double, f float, dec decimal(10,2), dec0 decimal(10,0), flag boolean, d date, "
              "ts timestamp, tsn timestamp_ntz, b binary, m array<struct<k:string,v:int>>, tags array<string>, "
              "s string, props map<string,int>")
    df = spark.createDataFrame(rows, schema)
    if not with_map:
        df = df.drop("props")
    df.coalesce(1).write.parquet(path)


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """name -> (store root, run id)."""
    base = tmp_path_factory.mktemp("trace-local")
    out = {}
    for name, fmt in (("split", "parquet"), ("one-table", "json")):
        root = str(base / name / "store")
        tracker = Tracker(spark, Store.open(root, spark=spark), pipeline="running-example", model=False)
        info = tracker.write(running_example(tracker.read.json(TWEETS, name="tweets")),
                             str(base / name / "out"), format=fmt)
        out[name] = (root, info.run)
    for name, with_map, fmt in (("typed", False, "parquet"), ("typed-json", False, "json"),
                                ("typed-map", True, "json")):
        src = str(base / name / "in")
        _typed_input(spark, src, with_map)
        root = str(base / name / "store")
        tracker = Tracker(spark, Store.open(root, spark=spark), pipeline="typed", model=False)
        items = tracker.read.parquet(src, name="items").filter(F.col("s") != "jm")
        info = tracker.write(items, str(base / name / "out"), format=fmt)
        out[name] = (root, info.run)
    return out


def _both(spark, runs, name, text, limit=None, compiled=True):
    root, run = runs[name]
    pattern = parse_pattern(text)
    on_this_machine = Store.open(root, spark=no_spark)
    timings: dict = {}
    here = trace(on_this_machine, run, pattern, limit, compiled=compiled, timings=timings)
    assert not on_this_machine.spark_started and set(timings) >= {"run", "match", "associations", "backtrace", "total"}
    there = trace(Store.open(root, spark=spark, engine="spark"), run, pattern, limit, compiled=compiled)
    return here, there


@pytest.mark.parametrize("name", ["split", "one-table"])
@pytest.mark.parametrize("text", EXAMPLE_PATTERNS)
def test_the_running_example_traces_the_same_on_both_engines(spark, runs, name, text):
    here, there = _both(spark, runs, name, text)
    assert here.matched == there.matched and here.rows() == there.rows()


@pytest.mark.parametrize("name", ["split", "one-table"])
@pytest.mark.parametrize("limit", [0, 1, 2])
def test_a_limit_takes_the_same_items(spark, runs, name, limit):
    here, there = _both(spark, runs, name, "/user/id_str", limit)
    assert here.matched == there.matched == limit and here.rows() == there.rows()


@pytest.mark.parametrize("name", ["typed", "typed-json"])
@pytest.mark.parametrize("text", TYPED_PATTERNS)
def test_typed_columns_match_as_the_compiled_expression_sees_them(spark, runs, name, text):
    here, there = _both(spark, runs, name, text)
    assert here.matched == there.matched and here.rows() == there.rows()


@pytest.mark.parametrize("text", [*TYPED_PATTERNS, "/ts = '2024-05-01T12:30:00.500Z'", "/b = 'YWI='",
                                  "/tsn = '2023-01-02T03:04:05.000'", "/f = 0.1"])
def test_the_to_json_view_without_compiling(spark, runs, text):
    here, there = _both(spark, runs, "typed", text, compiled=False)
    assert here.matched == there.matched and here.rows() == there.rows()


@pytest.mark.parametrize("text", ["/props/k = 1", "/props", "/s = 'lp' and /props/k >= 1", "/dec0 = 3"])
def test_a_map_column_matches_over_to_json_on_both_engines(spark, runs, text):
    here, there = _both(spark, runs, "typed-map", text)
    assert here.matched == there.matched and here.rows() == there.rows()


def test_typed_patterns_match_something(spark, runs):
    """The typed cases are not vacuous: most of them match an item."""
    root, run = runs["typed"]
    st = Store.open(root, spark=no_spark)
    hits = [text for text in TYPED_PATTERNS if trace(st, run, parse_pattern(text)).matched]
    assert hits == TYPED_PATTERNS


def test_iql_trace_select_and_explain_start_no_jvm(runs):
    root, run = runs["split"]
    st = Store.open(root, spark=no_spark)
    rows = iql.run(st, "TRACE MATCH '/user/id_str = ''lp'''").rows()
    assert rows and {r[0] for r in rows} == {"tweets"}
    res = iql.run(st, "SELECT path, count(*) AS n FROM TRACE(MATCH '//text') t GROUP BY path ORDER BY path")
    assert res.engine.engine.value == "local" and ("text", 5) in res.rows()
    text = "\n".join(r[0] for r in iql.run(st, f"EXPLAIN TRACE '{run}' MATCH '/user' LIMIT 2").rows())
    assert "on the driver (no Spark job)" in text and "the first 2 matching result items" in text
    with pytest.raises(UserError, match="no captured run 'nope'") as err:
        iql.run(st, "TRACE 'nope' MATCH '/user'")
    assert run in str(err.value)
    assert not st.spark_started


def test_a_run_over_the_local_limit_is_traced_on_spark(spark, runs):
    root, run = runs["split"]
    st = Store.open(root, spark=spark, local_rows=1)  # the run has 3 result items
    text = "\n".join(r[0] for r in iql.run(st, "EXPLAIN TRACE MATCH '/user'").rows())
    assert "compiled: Spark higher-order functions" in text
    forced = Store.open(root, spark=no_spark, engine="local", local_rows=1)
    assert trace(forced, run, parse_pattern("/user")).matched == 3 and not forced.spark_started


def _spark_types():
    from pyspark.sql import types as T

    inner = T.StructType([T.StructField("k", T.StringType()), T.StructField("v", T.DecimalType(10, 0))])
    return [T.IntegerType(), T.LongType(), T.ShortType(), T.ByteType(), T.FloatType(), T.DoubleType(),
            T.DecimalType(10, 2), T.BooleanType(), T.StringType(), T.BinaryType(), T.DateType(),
            T.TimestampType(), T.TimestampNTZType(), T.ArrayType(inner), inner,
            T.MapType(T.StringType(), T.IntegerType()), T.ArrayType(T.MapType(T.IntegerType(), T.LongType())),
            T.DayTimeIntervalType(), T.NullType()]


@pytest.mark.parametrize("dtype", _spark_types(), ids=lambda t: t.simpleString())
def test_the_driver_reads_a_runs_schema_as_json_as_the_spark_wing_reads_its_types(dtype):
    """The DuckDB wing reads the manifest's schema JSON without pyspark (duckdb/view.py): its
    names and its JSON-view verdicts are those of pyspark's types and the Spark wing's json_view."""
    import json

    from pyspark.sql import types as T

    from capture.tracing.duckdb.view import simple_string, struct, unviewable, why_not_cast
    from capture.tracing.spark.compile import NotCompilable, json_view

    t = json.loads(dtype.json())
    assert simple_string(t) == dtype.simpleString()
    items = T.StructType([T.StructField("c", dtype)])
    try:
        json_view(items)
        spark_says = None
    except NotCompilable as e:
        spark_says = e.message
    assert why_not_cast(struct(json.loads(items.json())["fields"])) == spark_says
    if spark_says is None:
        assert unviewable(t, as_json=False) is None
    assert (unviewable(t, as_json=True) is None) == (not isinstance(dtype, (T.DayTimeIntervalType, T.NullType)))


def test_the_engine_is_chosen_once_and_an_engine_given_is_the_one_that_traces(spark, runs, monkeypatch):
    from capture.tracing import choose, describe
    from store.engine import Choice, Engine

    root, run = runs["split"]
    pattern = parse_pattern("/user")
    st = Store.open(root, spark=no_spark, engine="spark")  # the setting says Spark; the caller says local
    assert trace(st, run, pattern, engine=Engine.LOCAL).matched == 3
    assert "on the driver (no Spark job)" in "\n".join(describe(st, run, pattern, engine=Engine.LOCAL))
    assert not st.spark_started
    assert choose(Store.open(root, spark=no_spark), run).engine is Engine.LOCAL
    assert choose(Store.open(root, spark=spark, local_rows=1), run) == Choice(
        Engine.SPARK, "reads 3 rows, more than the local limit of 1")
    # a run the driver cannot read: auto goes to Spark and says why; a forced local engine refuses
    import capture.tracing.duckdb as wing

    monkeypatch.setattr(wing, "unreadable", lambda store, head: "table 'x' is partitioned")
    assert choose(Store.open(root, spark=spark), run) == Choice(
        Engine.SPARK, "the driver cannot read the run: table 'x' is partitioned")
    with pytest.raises(UserError, match="cannot be traced by the local engine: table 'x' is partitioned"):
        trace(Store.open(root, spark=no_spark, engine="local"), run, pattern)
