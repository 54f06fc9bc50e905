"""Capture never changes results: the same pipeline code on a plain and a tracked DataFrame
gives the same rows (property test over random small nested tweet sets)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from test_capture_helpers import USERS, USERS_SCHEMA, normalize

from capture import Tracker

SCHEMA = ("text string, user struct<id_str:string,name:string>, "
          "user_mentions array<struct<id_str:string,name:string>>, retweet_cnt int")
NAMES = {"lp": "Lisa Paul", "jm": "John Miller", "ls": "Lauren Smith"}
_user = st.sampled_from(sorted(NAMES)).map(lambda u: (u, NAMES[u]))
_tweet = st.tuples(
    st.sampled_from(["Hello World", "hi", "good day", "BTS!"]),
    _user,
    st.lists(_user, max_size=3),
    st.integers(min_value=0, max_value=2),
)


def running_example(t, users):
    upper = t.filter(F.col("retweet_cnt") == 0).select(
        "text", F.col("user.id_str").alias("id_str"), F.col("user.name").alias("name"))
    lower = t.select("text", F.explode("user_mentions").alias("m")).select(
        "text", F.col("m.id_str").alias("id_str"), F.col("m.name").alias("name"))
    return (upper.union(lower).select(F.struct("id_str", "name").alias("user"), "text")
            .groupBy("user").agg(F.collect_list(F.struct("text")).alias("tweets")))


def mentions_per_user(t, users):
    return (t.select(F.col("user.id_str").alias("author"), F.posexplode_outer("user_mentions").alias("p", "m"))
            .withColumn("mentioned", F.col("m.id_str")).drop("m")
            .groupBy("mentioned").agg(F.count(F.lit(1)).alias("n"), F.collect_set("author").alias("by"),
                                      F.sum("p").alias("ps")))


def joined_and_sorted(t, users):
    return (t.join(users, t["user.id_str"] == users["id"], "left")
            .where(F.col("followers").isNull() | (F.col("followers") > 5))
            .select("text", "id", "followers", F.size("user_mentions").alias("k"))
            .orderBy("text", "id", "k").limit(50))


def distinct_union(t, users):
    a = t.select(F.col("user.id_str").alias("id")).distinct()
    b = t.select(F.inline("user_mentions")).select("id_str").withColumnRenamed("id_str", "id")
    return a.unionByName(b).join(users, "id", "left_semi").distinct()


def flags(t, users):
    return t.selectExpr("text", "retweet_cnt * 2 AS twice", "user.name AS who").withColumns(
        {"good": F.col("text").contains("good"), "bts": F.col("text").contains("BTS")}).dropDuplicates()


PIPELINES = [running_example, mentions_per_user, joined_and_sorted, distinct_union, flags]


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(_tweet, min_size=0, max_size=6))
@pytest.mark.parametrize("pipeline", PIPELINES, ids=[p.__name__ for p in PIPELINES])
def test_tracked_results_equal_untracked_results(spark, pipeline, rows):
    plain_t = spark.createDataFrame(rows, SCHEMA)
    plain_u = spark.createDataFrame(USERS, USERS_SCHEMA)
    tracker = Tracker(spark, None)
    tracked = pipeline(tracker.track(plain_t, name="t"), tracker.track(plain_u, name="u"))
    expected = pipeline(plain_t, plain_u)
    assert tracked.columns == expected.columns
    assert normalize(tracked.collect()) == normalize(expected.collect())


def double_flatten(t, users):
    a = t.select("text", "user_mentions", F.posexplode_outer("user_mentions").alias("p", "m"))
    b = a.select("text", "p", F.explode("user_mentions").alias("m2")).filter(F.col("m2.id_str") != "jm")
    return b.groupBy("text").agg(F.collect_list("p").alias("ps"))


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(_tweet, min_size=0, max_size=6), keep=st.lists(st.booleans(), min_size=12, max_size=12))
@pytest.mark.parametrize("pipeline", [*PIPELINES, double_flatten],
                         ids=[p.__name__ for p in [*PIPELINES, double_flatten]])
def test_first_copy_filter_stores_what_distinct_would(spark, pipeline, rows, keep):
    """Rows repeated by later flattens are kept by their first copy instead of a shuffle: the
    stored associations are exactly the de-duplicated ones (same rows, none twice).

    TRACE derives associations from the matched rows alone, on the driver (assoc_rows): for any
    subset of result rows that equals Spark's assoc_frame(complete=True) over the same rows, and
    over all rows it holds exactly the stored associations (every one, however often repeated)."""
    from dataclasses import replace

    from capture.storing.materialize import assoc_frame, assoc_rows

    tracker = Tracker(spark, None)
    out = pipeline(tracker.track(spark.createDataFrame(rows, SCHEMA), name="t"),
                   tracker.track(spark.createDataFrame(USERS, USERS_SCHEMA), name="u"))
    cap = tracker.capture(out)
    got = sorted(tuple(r) for r in cap.stored_associations().collect())
    reference = [replace(s, first=None) for s in cap.slots]
    assert got == sorted({tuple(r) for r in assoc_frame(cap.annotated, reference).collect()})

    annotated = cap.annotated.toArrow().to_pylist()
    assert set(assoc_rows(annotated, cap.slots)) == set(got)
    subset = [r for i, r in enumerate(annotated) if keep[i % len(keep)]]
    ids = sorted({r[cap.id_col] for r in subset})
    frame = cap.annotated.filter(F.col(cap.id_col).isin(ids)) if ids else cap.annotated.limit(0)
    assert sorted(assoc_rows(subset, cap.slots)) == sorted(
        tuple(r) for r in assoc_frame(frame, cap.slots, complete=True).collect())

