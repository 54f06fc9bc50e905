"""An aggregation's shuffle leaves out the member ids that are hashes of other hidden columns and
computes them again after it (capture/derive.py). The annotated result -- every id, position and
collected list, hence the stored provenance -- must be exactly what carrying every column gives."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from test_capture_helpers import USERS, USERS_SCHEMA, normalize
from test_capture_identity import PIPELINES, SCHEMA, _tweet

from capture import Tracker, grouping


def shared_source_union(t, users):
    """T4's shape: two branches of one source (one flattened) united, flattened again, grouped."""
    authors = t.select(F.col("user.id_str").alias("uid"), "user_mentions")
    mentioned = t.select(F.explode("user_mentions").alias("m"), "user_mentions").select(
        F.col("m.id_str").alias("uid"), "user_mentions")
    return (authors.union(mentioned).select("uid", F.posexplode_outer("user_mentions").alias("p", "x"))
            .groupBy("uid").agg(F.collect_list("p").alias("ps")))


def outer_join_then_group(t, users):
    """Flattens on both sides of a full outer join (one side missing on some rows), then a group."""
    left = t.select("text", F.explode_outer("user_mentions").alias("m")).select("text", F.col("m.id_str").alias("id"))
    right = users.select("id", F.explode(F.array(F.lit(1), F.lit(2))).alias("k"))
    return left.join(right, "id", "full").groupBy("id").agg(F.count(F.lit(1)).alias("n"))


def nested_unions_distinct(t, users):
    a = t.select(F.col("user.id_str").alias("id"))
    b = t.select(F.explode("user_mentions").alias("m")).select(F.col("m.id_str").alias("id"))
    c = users.select("id")
    return a.union(b).union(c).join(users, "id", "left").select("id", "followers").distinct()


def group_of_groups(t, users):
    first = t.select("text", F.explode("user_mentions").alias("m")).groupBy("text").agg(
        F.collect_list("m.id_str").alias("ids"))
    return first.select(F.explode("ids").alias("id"), "text").groupBy("id").agg(F.count("text").alias("n"))


CASES = [*PIPELINES, shared_source_union, outer_join_then_group, nested_unions_distinct, group_of_groups]


def annotated_rows(spark, pipeline, rows, derive: bool, monkeypatch):
    monkeypatch.setattr(grouping, "DERIVE", derive)
    tracker = Tracker(spark, None)
    t = tracker.track(spark.createDataFrame(rows, SCHEMA), name="t")
    u = tracker.track(spark.createDataFrame(USERS, USERS_SCHEMA), name="u")
    out = pipeline(t, u).annotated
    return out.columns, normalize(out.collect())


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(_tweet, min_size=1, max_size=6))
@pytest.mark.parametrize("pipeline", CASES, ids=[p.__name__ for p in CASES])
def test_derived_member_ids_equal_the_carried_ones(spark, pipeline, rows, monkeypatch):
    assert (annotated_rows(spark, pipeline, rows, True, monkeypatch)
            == annotated_rows(spark, pipeline, rows, False, monkeypatch))


def test_the_shuffle_carries_only_what_cannot_be_derived(spark):
    import json

    from capture.plan import analyzed, cls, seq

    tracker = Tracker(spark, None)
    t = tracker.track(spark.createDataFrame([("a", ("lp", "L"), [("jm", "J")], 0)], SCHEMA), name="t")
    grouped = shared_source_union(t, None)
    node = analyzed(grouped.annotated)
    while cls(node) != "Aggregate":
        (node,) = seq(node.children())
    (collected,) = [e for e in seq(node.aggregateExpressions()) if e.name().startswith("__strata_agg_")]
    shuffled = json.loads(collected.dataType().json())["elementType"]["fields"]
    # the source id, the two flatten positions and the union side; not the three derived ids
    assert [f["name"] for f in shuffled] == ["__strata_id_1", "__strata_pos_3", "__strata_side_5", "__strata_pos_6"]
    # after the aggregation every member has all seven hidden columns again, in their order
    member = grouped.annotated.schema[collected.name()].dataType.elementType.fieldNames()
    assert member == ["__strata_id_1", "__strata_pos_3", "__strata_id_3", "__strata_side_5", "__strata_id_5",
                      "__strata_pos_6", "__strata_id_6"]
