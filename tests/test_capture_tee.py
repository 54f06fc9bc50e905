"""tracker.write computes the annotated result once: on a local store one job writes the user's
output and the store's copy (capture/tee.py); elsewhere, and for column types Arrow cannot carry,
a cached result is written twice. Both paths must give the user the output the untracked pipeline
writes and store the same provenance."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from test_capture_helpers import USERS, USERS_SCHEMA, normalize
from test_capture_identity import PIPELINES, SCHEMA, _tweet

from capture import Tracker
from capture.backtrace import load_run
from capture.runs import result_table
from store import Store
from store.storage import _HadoopFS

TYPED = ("k string, n long, d decimal(12,3), ts timestamp, day date, raw binary, ok boolean, "
         "tags array<string>, attrs map<string,int>, who struct<name:string,score:double>")
TYPED_ROWS = [
    ("a", 1, Decimal("1.500"), dt.datetime(2024, 1, 2, 3, 4, 5), dt.date(2024, 1, 2), b"\x00\x01", True,
     ["x", "y"], {"p": 1}, ("ann", 0.5)),
    ("a", 2, None, None, None, None, None, None, None, None),
    ("b", 3, Decimal("-2.250"), dt.datetime(1999, 12, 31, 23, 59, 59), dt.date(1999, 12, 31), b"", False,
     [], {}, ("bo", None)),
]


def typed_pipeline(df):
    return (df.select("k", "n", "d", "ts", "day", "raw", "ok", "who", "attrs",
                      F.posexplode_outer("tags").alias("p", "tag"))
            .groupBy("k").agg(F.collect_list(F.struct("n", "d", "ts", "day", "raw", "ok", "who", "attrs", "tag"))
                              .alias("rows"), F.max("ts").alias("last")))


def hadoop_store(spark, root) -> Store:
    """A store reached through Hadoop's FileSystem API (as an hdfs:// or s3a:// store would be),
    on a local folder: the cached two-write path."""
    st = Store.open(root, spark=spark)
    st.storage.fs = _HadoopFS("file://" + str(root), spark)
    return st


def stored_rows(st, run):
    return normalize(st.table(result_table(run)).collect())


def test_both_paths_write_the_untracked_output_and_store_the_same_result(spark, tmp_path):
    plain = spark.createDataFrame(TYPED_ROWS, TYPED)
    typed_pipeline(plain).write.parquet(str(tmp_path / "plain"))
    expected = normalize(spark.read.parquet(str(tmp_path / "plain")).collect())
    runs = {}
    for kind, store in (("local", Store.open(tmp_path / "local", spark=spark)),
                        ("hadoop", hadoop_store(spark, tmp_path / "hadoop"))):
        tracker = Tracker(spark, store, model=False)
        info = tracker.write(typed_pipeline(tracker.track(plain, name="typed")), str(tmp_path / f"out-{kind}"))
        written = spark.read.parquet(str(tmp_path / f"out-{kind}"))
        assert written.schema == spark.read.parquet(str(tmp_path / "plain")).schema
        assert normalize(written.collect()) == expected
        assert info.items == 2 and store.table("capture_runs").first()["items"] == 2
        runs[kind] = (store, info)
    (local, li), (hadoop, hi) = runs["local"], runs["hadoop"]
    assert (li.one_pass, hi.one_pass) == (True, False)
    assert local.table(result_table(li.run)).schema == hadoop.table(result_table(hi.run)).schema
    assert stored_rows(local, li.run) == stored_rows(hadoop, hi.run)  # hence the same P (a view of it)


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(_tweet, min_size=0, max_size=6))
@pytest.mark.parametrize("pipeline", PIPELINES, ids=[p.__name__ for p in PIPELINES])
def test_written_output_equals_the_untracked_write(spark, tmp_path_factory, pipeline, rows):
    root = tmp_path_factory.mktemp("tee")
    plain_t, plain_u = spark.createDataFrame(rows, SCHEMA), spark.createDataFrame(USERS, USERS_SCHEMA)
    pipeline(plain_t, plain_u).write.json(str(root / "plain"))
    st = Store.open(root / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    info = tracker.write(pipeline(tracker.track(plain_t, name="t"), tracker.track(plain_u, name="u")),
                         str(root / "out"), format="json")
    assert info.one_pass
    expected = spark.read.json(str(root / "plain")).collect() if os.listdir(root / "plain") else []
    got = spark.read.json(str(root / "out")).collect() if len(expected) else []
    assert normalize(got) == normalize(expected)
    assert info.items == len(expected) == st.table(result_table(info.run)).count()


def test_an_empty_result_is_stored_with_its_schema(spark, tmp_path):
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED), name="typed")
    info = tracker.write(t.filter(F.col("n") > 99).select("k", F.explode("tags").alias("tag")), str(tmp_path / "out"))
    assert (info.one_pass, info.items) == (True, 0)
    stored = load_run(st, info.run)
    assert stored.visible == ["k", "tag"] and stored.result.count() == 0
    assert stored.associations().count() == 0


def test_types_arrow_cannot_carry_take_the_cached_path(spark, tmp_path):
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED), name="typed")
    result = t.select("k", F.make_ym_interval(F.lit(1), F.col("n").cast("int")).alias("span"))
    info = tracker.write(result, str(tmp_path / "out"))
    assert not info.one_pass and info.items == 3
    span = F.make_ym_interval(F.lit(1), F.col("n").cast("int")).cast("string")  # Python has no such type
    got = spark.read.parquet(str(tmp_path / "out")).select("k", F.col("span").cast("string"))
    want = spark.createDataFrame(TYPED_ROWS, TYPED).select("k", span)
    assert sorted(got.collect()) == sorted(want.collect()) and len(got.collect()) == 3


def test_a_failed_output_write_leaves_nothing_in_the_store(spark, tmp_path):
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED), name="typed")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "taken.txt").write_text("the user's file")
    with pytest.raises(Exception, match="already exists"):
        tracker.write(t.select("k", F.explode("tags").alias("tag")), str(tmp_path / "out"))  # mode errorifexists
    assert st.version == 0 and not st.has_table("capture_runs")
    staged = tmp_path / "store" / "tables"
    assert not staged.exists() or not any(f.is_file() for f in staged.rglob("*"))
    assert os.listdir(tmp_path / "out") == ["taken.txt"]
    # a job that fails half-way, after the store copy of some partitions was written
    boom = F.udf(lambda n: n if n < 3 else 1 // 0, "long")
    with pytest.raises(Exception, match="ZeroDivisionError"):
        spread = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED).repartition(3, "n"), name="spread")
        tracker.write(spread.withColumn("n", boom("n")), str(tmp_path / "out2"))
    assert st.version == 0 and not st.has_table("capture_runs")
    assert not staged.exists() or not any(f.is_file() for f in staged.rglob("*"))
