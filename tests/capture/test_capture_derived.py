"""Derived ids (capture/ids.py): flatten, join and union ids are not carried into aggregations
nor stored, but computed again when read. Reference: the eager annotated result, in which every
aggregation collects every hidden column, over random small tweet sets; the driver's two ways
(row by row, and column-wise as the driver model computes them) against it and each other."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from support.capture_helpers import USERS, USERS_SCHEMA
from support.pipelines import PIPELINES, SCHEMA, double_flatten, tweet

from capture import Tracker
from capture.id_columns import hydrate
from capture.ids import FLATTEN, JOIN, UNION, Derived, hydrate_rows
from capture.storing.assoc_columns import assoc_columns, hydrate_columns
from capture.storing.associations import assoc_rows
from capture.storing.stored import load_run
from capture.tracking import grouping
from store import Store


def union_of_unions(t, users):
    """A flatten below both sides of a union, once through an inner union: its id column holds on
    the outer left side only where the inner union took it from its left side."""
    a = t.select("text", F.explode("user_mentions").alias("m")).select("text", F.col("m.id_str").alias("id"))
    b = t.select("text", F.col("user.id_str").alias("id"))
    return a.union(b).union(a).groupBy("id").agg(F.count(F.lit(1)).alias("n"))


def full_join_of_a_flatten(t, users):
    """A full outer join: rows without a left (right) side hold null ids of that side's operators."""
    mentioned = t.select(F.explode_outer("user_mentions").alias("m")).select(F.col("m.id_str").alias("id"))
    return users.join(mentioned, "id", "full").groupBy("id").agg(F.count(F.lit(1)).alias("n"))


def groups_of_groups(t, users):
    """Aggregations nested twice: the inner members' flatten ids sit two arrays deep."""
    per_text = (t.select("text", F.explode("user_mentions").alias("m"))
                .groupBy(F.col("m.id_str").alias("id"), "text").agg(F.count(F.lit(1)).alias("n")))
    return per_text.groupBy("id").agg(F.collect_list("text").alias("texts"))


EXTRA = [union_of_unions, full_join_of_a_flatten, groups_of_groups, double_flatten]
ALL = [*PIPELINES, *EXTRA]


def plain(v):
    """A collected value as plain data: structs as dicts (field order does not matter), lists
    sorted (collect_list order is not defined)."""
    if hasattr(v, "asDict"):
        v = v.asDict()
    if isinstance(v, dict):
        return tuple(sorted((k, plain(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(sorted((plain(x) for x in v), key=repr))
    return v


def rows_of(df) -> list:
    return sorted((plain(r) for r in df.collect()), key=repr)


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(tweet, min_size=3, max_size=8))
@pytest.mark.parametrize("pipeline", ALL, ids=[p.__name__ for p in ALL])
def test_derived_ids_equal_the_eagerly_collected_ones(spark, pipeline, rows):
    """Hydrating the lazily captured result (in Spark, and on the driver from its compact rows)
    gives every hidden column and collected field the eager capture holds, nulls included."""
    plain_t = spark.createDataFrame(rows, SCHEMA)
    plain_u = spark.createDataFrame(USERS, USERS_SCHEMA)

    def captured(eager: bool):
        tracker = Tracker(spark, None)
        saved = grouping.top
        if eager:  # every aggregation collects every hidden column, derived ones included
            grouping.top = lambda derived: {}
        try:
            out = pipeline(tracker.track(plain_t, name="t"), tracker.track(plain_u, name="u"))
        finally:
            grouping.top = saved
        return tracker.capture(out)

    eager, lazy = captured(True), captured(False)
    want = rows_of(eager.annotated)
    assert rows_of(lazy.annotated) == want
    if lazy.derived:  # something is not stored: a top-level column or a collected field
        assert len(lazy.compact.schema.simpleString()) < len(eager.annotated.schema.simpleString())
    driver = hydrate_rows(lazy.compact.toArrow().to_pylist(), lazy.derived)
    assert sorted((plain(r) for r in driver), key=repr) == want
    columns = hydrate_columns(lazy.compact.toArrow(), lazy.derived)  # the driver model's way
    assert sorted((plain(r) for r in columns.to_pylist()), key=repr) == want
    assert sorted(map(tuple, assoc_columns(columns, lazy.slots).tolist())) == \
        sorted(a[:4] for a in assoc_rows(driver, lazy.slots))
    assert sorted(eager.stored_associations().collect()) == sorted(lazy.stored_associations(lazy.compact).collect())


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1) | st.none(),
                                 st.integers(-(2**31), 2**31 - 1) | st.none(),
                                 st.integers(0, 1) | st.none()), min_size=1, max_size=8),
       oid=st.integers(1, 10**6))
def test_driver_hashes_are_sparks_xxhash64(spark, values, oid):
    """The driver's hashes (TRACE's fetched rows) equal Spark's for every kind, nulls included."""
    derived = (Derived("f", FLATTEN, oid, ("a", "p")), Derived("j", JOIN, oid, ("a", "f")),
               Derived("u", UNION, oid, ("s", "a", "j")))
    df = spark.createDataFrame(values, "a long, p int, s tinyint")
    got = hydrate_rows([r.asDict() for r in df.collect()], derived)
    assert got == [r.asDict() for r in hydrate(df, derived).collect()]
    assert hydrate_columns(df.toArrow(), derived).to_pylist() == got


def test_a_stored_run_keeps_only_what_cannot_be_derived(spark, tmp_path):
    """T2-like flattens: the store keeps the source id and the positions, not the three flatten
    ids; reading the run (and TRACE's driver-side fetch) computes them again."""
    from support.backtrace_helpers import trace_captured
    from support.capture_helpers import TWEETS

    from capture.tracing import parse_pattern, trace

    st_ = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st_, model=False)
    t = tracker.read.json(TWEETS, name="tweets")
    out = (t.select("text", F.explode("user_mentions").alias("m"))
           .select("text", F.col("m.id_str").alias("who"), F.posexplode(F.split("text", " ")).alias("i", "w")))
    cap = tracker.capture(out)
    info = tracker.write(out, str(tmp_path / "out"))
    run = load_run(st_, info.run)
    assert info.split
    stored = run.hidden.columns
    assert not any(c.startswith("__strata_id_") and c != "__strata_id_1" for c in stored), stored
    assert {d.col for d in run.derived} == {
        cap.id_col, *(c for c in cap.annotated.columns if c.startswith("__strata_id_") and c != "__strata_id_1")}
    assert rows_of(run.result) == rows_of(cap.annotated.select(*run.result.columns))
    traced = sorted(trace(st_, info.run, parse_pattern("/who")).rows())
    assert traced and traced == sorted(trace_captured(tracker, out, "/who").rows())


def test_run_rows_keep_slots_and_derived_ids_and_read_older_runs():
    """capture_runs.slots round-trips the slots and derivations; a run stored before derived ids
    (a bare list of slots) reads with nothing derived."""
    import json

    from capture.operators import InRef, Slot
    from capture.storing.runs import slots_from_json, slots_json

    slots = (Slot(2, "__strata_id_2", InRef("__strata_id_1"), pos_col="__strata_pos_2"),
             Slot(3, "__strata_id_3", InRef("__strata_id_2"), nest=("__strata_agg_3",),
                  when=((1, "__strata_side_4", 0),)))
    derived = (Derived("__strata_id_2", FLATTEN, 2, ("__strata_id_1", "__strata_pos_2"), ("__strata_agg_3",),
                       (("__strata_side_4", 1),)),)
    assert slots_from_json(slots_json(slots, derived)) == (slots, derived)
    older = json.dumps(json.loads(slots_json(slots))["slots"])
    assert slots_from_json(older) == (slots, ())


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(groups=st.lists(st.integers(0, 3), min_size=0, max_size=12))
def test_an_aggregation_collects_bare_ids_where_a_member_holds_nothing_else(spark, groups, monkeypatch):
    """A group's members are collected as bare ids where each holds only its id (rows of a
    source), as structs where it holds more (rows of a join): both forms give every reader
    (Spark's assoc_frame, the driver's rows and columns) the same associations as the struct form
    always gives, one per member at its position."""
    rows = [(i, g) for i, g in enumerate(groups)]
    sides = [(g, 10 * g) for g in range(4)]

    def captured(always_struct: bool, joined: bool):
        tracker = Tracker(spark, None)
        t = tracker.track(spark.createDataFrame(rows, "n int, g int"), name="t")
        if joined:
            t = t.join(tracker.track(spark.createDataFrame(sides, "g int, v int"), name="u"), "g")
        if always_struct:
            monkeypatch.setattr(grouping, "member", lambda tdf, col=F.col: (F.struct(*[
                col(h) for h in tdf.hidden() if h not in grouping.top(tdf._derived)]), False))
        try:
            return tracker.capture(t.groupBy("g").agg(F.sum("n").alias("s")))
        finally:
            monkeypatch.undo()

    for joined in (False, True):
        new, old = captured(False, joined), captured(True, joined)
        collected = [f.dataType.elementType for f in new.compact.schema.fields if f.name.startswith("__strata_agg")]
        assert [type(e).__name__ for e in collected] == ["StructType" if joined else "LongType"]
        want = sorted(tuple(r) for r in old.stored_associations(old.compact).collect())
        assert sorted(tuple(r) for r in new.stored_associations(new.compact).collect()) == want
        assert sorted(a[4] for a in want if a[4] is not None) == sorted(  # each row once, at its place in its group
            p for g in set(groups) for p in range(1, groups.count(g) + 1))
        driver = hydrate_rows(new.compact.toArrow().to_pylist(), new.derived)
        assert sorted(assoc_rows(driver, new.slots)) == want
        columns = hydrate_columns(new.compact.toArrow(), new.derived)
        assert sorted(map(tuple, assoc_columns(columns, new.slots).tolist())) == sorted(a[:4] for a in want)
