"""Capture never changes results: the same pipeline code on a plain and a tracked DataFrame
gives the same rows (property test over random small nested tweet sets)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from support.capture_helpers import USERS, USERS_SCHEMA, normalize
from support.pipelines import PIPELINES, SCHEMA, double_flatten, tweet

from capture import Tracker


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(tweet, min_size=0, max_size=6))
@pytest.mark.parametrize("pipeline", PIPELINES, ids=[p.__name__ for p in PIPELINES])
def test_tracked_results_equal_untracked_results(spark, pipeline, rows):
    plain_t = spark.createDataFrame(rows, SCHEMA)
    plain_u = spark.createDataFrame(USERS, USERS_SCHEMA)
    tracker = Tracker(spark, None)
    tracked = pipeline(tracker.track(plain_t, name="t"), tracker.track(plain_u, name="u"))
    expected = pipeline(plain_t, plain_u)
    assert tracked.columns == expected.columns
    assert normalize(tracked.collect()) == normalize(expected.collect())


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(tweet, min_size=0, max_size=6), keep=st.lists(st.booleans(), min_size=12, max_size=12))
@pytest.mark.parametrize("pipeline", [*PIPELINES, double_flatten],
                         ids=[p.__name__ for p in [*PIPELINES, double_flatten]])
def test_first_copy_filter_stores_what_distinct_would(spark, pipeline, rows, keep):
    """Rows repeated by later flattens are kept by their first copy instead of a shuffle: the
    stored associations are exactly the de-duplicated ones (same rows, none twice).

    TRACE derives associations from the matched rows alone, on the driver (assoc_rows): for any
    subset of result rows that equals Spark's assoc_frame(complete=True) over the same rows, and
    over all rows it holds exactly the stored associations (every one, however often repeated)."""
    from dataclasses import replace

    from capture.storing.associations import assoc_rows
    from capture.storing.materialize import assoc_frame

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

