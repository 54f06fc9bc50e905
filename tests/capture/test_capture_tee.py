"""tracker.write computes the annotated result once: on a local store one job writes the user's
output and the store's copy (capture/storing/tee.py; for Parquet output a split copy: the hidden columns,
with the output's files linked); elsewhere, and for column types Arrow cannot carry, a cached
result is written twice. Every path must give the user the output the untracked pipeline writes
and store the same provenance."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from support.capture_helpers import USERS, USERS_SCHEMA, normalize
from support.pipelines import PIPELINES, SCHEMA, tweet

from capture import Tracker, jvm
from capture.storing import load_run, tee
from capture.storing.runs import ROW_KEY
from capture.storing.stored import hidden_rows, joined_rows, keyed
from capture.storing.tables import RESULT_PREFIX, RUNS, output_table, result_table
from store import Store
from store.storage import _HadoopFS, spark_conf

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
    return normalize(load_run(st, run).result.collect())


def _hidden_files(root) -> list:
    return sorted(f for f in root.rglob("*") if f.is_file() and RESULT_PREFIX in str(f))


def test_every_path_writes_the_untracked_output_and_stores_the_same_result(spark, tmp_path, monkeypatch):
    """The split copy (local store, Parquet output; its hidden columns written by Strata's JVM
    writer, or where that is not loaded by an Arrow UDF), the one-pass tee (local store, the
    output written with maxRecordsPerFile, so its files cannot be paired by task) and the cached
    two writes (a Hadoop-reached store) keep the same annotated result."""
    plain = spark.createDataFrame(TYPED_ROWS, TYPED)
    typed_pipeline(plain).write.parquet(str(tmp_path / "plain"))
    expected = normalize(spark.read.parquet(str(tmp_path / "plain")).collect())
    with_jvm = jvm.available(spark, jvm.SPLIT)
    runs = {}
    for kind, store, options in (("split", Store.open(tmp_path / "split", spark=spark), {}),
                                 ("split-arrow", Store.open(tmp_path / "split-arrow", spark=spark), {}),
                                 ("tee", Store.open(tmp_path / "tee", spark=spark), {"maxRecordsPerFile": 1}),
                                 ("hadoop", hadoop_store(spark, tmp_path / "hadoop"), {})):
        tracker = Tracker(spark, store, model=False)
        with monkeypatch.context() as m:
            if kind == "split-arrow":  # as in a SparkSession started without Strata's jar
                m.setattr(jvm, "available", lambda spark, name=jvm.CLASS: False)
            info = tracker.write(typed_pipeline(tracker.track(plain, name="typed")), str(tmp_path / f"out-{kind}"),
                                 **options)
        written = spark.read.parquet(str(tmp_path / f"out-{kind}"))
        assert written.schema == spark.read.parquet(str(tmp_path / "plain")).schema
        assert normalize(written.collect()) == expected
        assert info.items == 2 and store.table(RUNS).first()["items"] == 2
        runs[kind] = (store, info)
    assert [(i.one_pass, i.split) for _, i in runs.values()] == [(True, True), (True, True), (True, False),
                                                                 (False, False)]
    split_store, split_info = runs["split"]
    assert split_store.has_table(output_table(split_info.run))
    assert not runs["tee"][0].has_table(output_table(runs["tee"][1].run))
    # which writer wrote the hidden columns: Spark's (parquet-mr, no checksum files) or pyarrow
    writers = {k: {pq.ParquetFile(f).metadata.created_by.split()[0] for f in _hidden_files(tmp_path / k)}
               for k in ("split", "split-arrow")}
    assert writers == {"split": {"parquet-mr" if with_jvm else "parquet-cpp-arrow"},
                       "split-arrow": {"parquet-cpp-arrow"}}
    assert all(f.suffix == ".parquet" for f in _hidden_files(tmp_path / "split"))
    schemas = {k: load_run(st, i.run).result.schema for k, (st, i) in runs.items()}
    assert schemas["split"] == schemas["split-arrow"] == schemas["tee"] == schemas["hadoop"]
    rows = {k: stored_rows(st, i.run) for k, (st, i) in runs.items()}
    assert rows["split"] == rows["split-arrow"] == rows["tee"] == rows["hadoop"]  # hence the same P (a view of it)


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(tweet, min_size=0, max_size=6))
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


@pytest.mark.parametrize("options", [{}, {"maxRecordsPerFile": 2}], ids=["split", "not-split"])
def test_types_arrow_cannot_carry_stay_out_of_python(spark, tmp_path, options):
    """A visible column Arrow cannot carry: the split copy never sends visible columns to Python;
    when the output cannot be split, the cached two writes run instead of the tee."""
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED), name="typed")
    result = t.select("k", F.make_ym_interval(F.lit(1), F.col("n").cast("int")).alias("span"))
    info = tracker.write(result, str(tmp_path / "out"), **options)
    assert (info.one_pass, info.split, info.items) == (not options, not options, 3)
    span = F.make_ym_interval(F.lit(1), F.col("n").cast("int")).cast("string")  # Python has no such type
    got = spark.read.parquet(str(tmp_path / "out")).select("k", F.col("span").cast("string"))
    want = spark.createDataFrame(TYPED_ROWS, TYPED).select("k", span)
    assert sorted(got.collect()) == sorted(want.collect()) and len(got.collect()) == 3
    stored = load_run(st, info.run).result.select("k", F.col("span").cast("string"))
    assert sorted(stored.collect()) == sorted(want.collect())


def test_a_failed_output_write_leaves_nothing_in_the_store(spark, tmp_path):
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED), name="typed")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "taken.txt").write_text("the user's file")
    with pytest.raises(Exception, match="already exists"):
        tracker.write(t.select("k", F.explode("tags").alias("tag")), str(tmp_path / "out"))  # mode errorifexists
    assert st.version == 0 and not st.has_table(RUNS)
    staged = tmp_path / "store" / "tables"
    assert not staged.exists() or not any(f.is_file() for f in staged.rglob("*"))
    assert os.listdir(tmp_path / "out") == ["taken.txt"]
    # a job that fails half-way, after the store copy of some partitions was written
    boom = F.udf(lambda n: n if n < 3 else 1 // 0, "long")
    with pytest.raises(Exception, match="ZeroDivisionError"):
        spread = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED).repartition(3, "n"), name="spread")
        tracker.write(spread.withColumn("n", boom("n")), str(tmp_path / "out2"))
    assert st.version == 0 and not st.has_table(RUNS)
    assert not staged.exists() or not any(f.is_file() for f in staged.rglob("*"))


def flattened(t, users):  # no shuffle: one output file per input partition
    return t.select("text", F.explode("user_mentions").alias("m")).select("text", F.col("m.name").alias("who"))


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(tweet, min_size=4, max_size=24))
@pytest.mark.parametrize("pipeline", [*PIPELINES, flattened], ids=[p.__name__ for p in [*PIPELINES, flattened]])
def test_split_copy_pairs_every_output_row_with_its_hidden_columns(spark, tmp_path_factory, pipeline, rows):
    """The split copy stores each output row's hidden columns in a separate file, paired by task
    and row index: over three input partitions (and the sort of joined_and_sorted) its stored
    result has exactly the rows (visible and hidden together) the one-file tee stores."""
    root = tmp_path_factory.mktemp("split")
    plain_t = spark.createDataFrame(rows, SCHEMA).repartition(3)
    plain_u = spark.createDataFrame(USERS, USERS_SCHEMA)
    stored = {}
    for kind, options in (("split", {}), ("tee", {"maxRecordsPerFile": 10**9})):
        st = Store.open(root / kind, spark=spark)
        tracker = Tracker(spark, st, model=False)
        result = pipeline(tracker.track(plain_t, name="t"), tracker.track(plain_u, name="u"))
        info = tracker.write(result, str(root / f"out-{kind}"), **options)
        assert info.split == (kind == "split")
        stored[kind] = stored_rows(st, info.run)
    assert stored["split"] == stored["tee"]


def test_hidden_rows_of_a_split_copy_read_by_pyarrow_equal_the_spark_join(spark, tmp_path, monkeypatch):
    """TRACE's second step on a local store reads the matched rows' hidden columns with pyarrow,
    row group by row group; on a cluster path a Spark join does it. Both return the same rows."""
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.range(5000).repartition(3).withColumn("tags", F.array(F.col("id") % 7, F.col("id") % 5)),
                      name="r")
    monkeypatch.setattr(tee, "ROW_GROUP_ROWS", 1000)  # several row groups per hidden file
    with spark_conf(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", "500"):
        info = tracker.write(t.select("id", F.posexplode("tags").alias("p", "tag")), str(tmp_path / "out"))
    assert info.split
    files = [f for f in (tmp_path / "store").rglob("part-*.parquet") if RESULT_PREFIX in str(f)]
    groups = [pq.ParquetFile(f).metadata.num_row_groups for f in files]
    assert len(groups) == 3 and min(groups) > 1
    stored = load_run(st, info.run)
    keys = sorted(r[ROW_KEY] for r in keyed(stored.outputs).select(ROW_KEY).collect())
    assert len(keys) == 10000
    wanted = keys[::997] + keys[-3:]
    got = sorted(hidden_rows(stored.hidden, wanted), key=lambda r: r[ROW_KEY])
    want = sorted(joined_rows(stored.hidden, wanted), key=lambda r: r[ROW_KEY])
    assert [r[ROW_KEY] for r in got] == sorted(wanted) and got == want


@pytest.mark.parametrize("mode", ["append", "ignore"])
def test_a_write_that_keeps_other_files_in_the_folder_is_not_split(spark, tmp_path, mode):
    """Append (and ignore) leave earlier files in the output folder, so the output's files could
    not be told apart by task: the one-pass tee stores every column instead."""
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED), name="typed")
    info = tracker.write(t.select("k", "n"), str(tmp_path / "out"), mode=mode)
    assert (info.one_pass, info.split) == (True, False)
    assert not st.has_table(output_table(info.run))
    assert sorted(load_run(st, info.run).result.select("k", "n").collect()) == sorted(
        spark.read.parquet(str(tmp_path / "out")).collect())


def test_a_split_copy_reads_back_columns_with_dots_in_their_names(spark, tmp_path):
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, model=False)
    t = tracker.track(spark.createDataFrame(TYPED_ROWS, TYPED), name="typed")
    info = tracker.write(t.select(F.col("k").alias("my.key"), "n"), str(tmp_path / "out"))
    assert info.split
    stored = load_run(st, info.run)
    assert stored.visible == ["my.key", "n"]
    assert sorted(stored.result.select("`my.key`", "n").collect()) == sorted(
        spark.read.parquet(str(tmp_path / "out")).collect())
