"""under / feeds / emits / influences(k) on Spark and on the local engine (store/duckdb/semantics.py),
against the paper and the naive reference."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from support.reference import Reference
from support.strategies import SPARK_EXAMPLES, bundle_pairs, bundles

from store import Store
from store.duckdb import semantics as local
from store.spark import semantics as sem

ROOT_MOVIES = "examples/movies.json"


@pytest.fixture(scope="module")
def movies_ref(examples_dir):
    return Reference([json.loads((examples_dir / "movies.json").read_text())])


def pairs(df, a, b):
    return {(r[a], r[b]) for r in df.collect()}


# Section 5's worked inferences over Figure 2 (docs/movies.md maps the paper's names to ids).
@pytest.mark.parametrize(
    "pred, left, right",
    [
        ("under", "imdb_worthington", "imdb_lead_actor_col"),  # the cell is under the column...
        ("under", "imdb_lead_actor_col", "imdb_table"),  # ...which is under the table
        ("feeds", "imdb_page", "extract_script"),
        ("feeds", "imdb_avatar_row", "merge_script"),
        ("emits", "extract_script", "imdb_table"),
        ("emits", "extract_job_1", "imdb_avatar_row"),
        ("inf0", "imdb_table", "imdb_avatar_row"),
        ("inf1", "imdb_avatar_row", "avatar_lead_actor_v1"),
        ("inf1", "imdb_page", "imdb_lead_actor_col"),
        ("inf2", "imdb_page", "avatar_lead_actor_v1"),
    ],
)
def test_section5_inferences(movies_store, ids_df, pred, left, right):
    L, R = ids_df(left), ids_df(right)
    if pred == "under":
        got = pairs(sem.under(movies_store, L, R), "lower", "upper")
    elif pred == "feeds":
        got = pairs(sem.feeds(movies_store, L, R), "data", "process")
    elif pred == "emits":
        got = pairs(sem.emits(movies_store, L, R), "process", "data")
    else:
        got = pairs(sem.influences(movies_store, int(pred[-1]), L, R), "src", "dst")
    assert got == {(left, right)}


def test_the_inference_that_cannot_be_made(movies_store, ids_df):
    # "(part of) IMDB extracted table influences(k) (all of) combined extracted table" for no k.
    got = sem.influences(movies_store, None, ids_df("imdb_table"), ids_df("combined_table"))
    assert got.count() == 0


def test_table1_q1_and_q3_through_the_python_api(movies_store, ids_df, movies_ref):
    back = pairs(sem.influences(movies_store, 2, dst=ids_df("avatar_lead_actor_v1")), "src", "dst")
    pages = {s for s, _ in back} & movies_ref.vertices_of_type("WebPage")
    assert pages == {"imdb_page"}
    feeds = pairs(sem.feeds(movies_store, process=ids_df("merge_map_task2_attempt1")), "data", "process")
    tables = {d for d, _ in feeds} & movies_ref.vertices_of_type("Table")
    assert tables == {"ymovies_table"}


def test_bound_and_unbound_agree_with_the_reference(movies_store, movies_ref):
    assert pairs(sem.under(movies_store), "lower", "upper") == movies_ref.under_pairs()
    assert pairs(sem.feeds(movies_store), "data", "process") == movies_ref.feeds_pairs()
    assert pairs(sem.emits(movies_store), "process", "data") == movies_ref.emits_pairs()
    for k in (0, 1, 2, None):
        assert pairs(sem.influences(movies_store, k), "src", "dst") == movies_ref.influences_pairs(k), k


def test_negative_k_is_rejected(movies_store):
    with pytest.raises(ValueError, match="k >= 0"):
        sem.influences(movies_store, -1)


def _check_local(st: Store, ref: Reference) -> None:
    """The local engine's predicates, unbound and bound on each vertex, against the reference."""
    assert set(local.pairs(st, "under", None, None, None)) == ref.under_pairs()
    assert set(local.pairs(st, "feeds", None, None, None)) == ref.feeds_pairs()
    assert set(local.pairs(st, "emits", None, None, None)) == ref.emits_pairs()
    for k in (0, 1, 2, None):
        assert set(local.pairs(st, "influences", k, None, None)) == ref.influences_pairs(k), k
    for v in sorted(ref.vertices()):
        assert set(local.pairs(st, "under", None, None, [v])) == {p for p in ref.under_pairs() if p[1] == v}
        assert set(local.pairs(st, "feeds", None, [v], None)) == {p for p in ref.feeds_pairs() if p[0] == v}
        assert set(local.pairs(st, "emits", None, None, [v])) == {p for p in ref.emits_pairs() if p[1] == v}
        for k in (1, None):
            want = ref.influences_pairs(k)
            assert set(local.pairs(st, "influences", k, [v], None)) == {p for p in want if p[0] == v}
            assert set(local.pairs(st, "influences", k, None, [v])) == {p for p in want if p[1] == v}


def test_local_engine_answers_like_the_reference_on_movies(movies_store, movies_ref):
    _check_local(movies_store, movies_ref)


def _check_store(st: Store, ref: Reference, spark) -> None:
    _check_local(st, ref)
    assert pairs(sem.under(st), "lower", "upper") == ref.under_pairs()
    assert pairs(sem.feeds(st), "data", "process") == ref.feeds_pairs()
    assert pairs(sem.emits(st), "process", "data") == ref.emits_pairs()
    for k in (0, 2, None):
        assert pairs(sem.influences(st, k), "src", "dst") == ref.influences_pairs(k), k
    data = sorted(ref.vertices("data"))
    if data:  # a bound side, both directions, gives the reference's slice
        one = spark.createDataFrame([(data[0],)], "id string")
        want = {p for p in ref.influences_pairs(1) if p[0] == data[0]}
        assert pairs(sem.influences(st, 1, src=one), "src", "dst") == want
        want = {p for p in ref.influences_pairs(None) if p[1] == data[0]}
        assert pairs(sem.influences(st, None, dst=one), "src", "dst") == want
        want = {p for p in ref.under_pairs() if p[1] == data[0]}
        assert pairs(sem.under(st, upper=one), "lower", "upper") == want


_SLOW = settings(max_examples=SPARK_EXAMPLES, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# make test: test_incremental_ingest_matches_the_reference below runs the same `_check_store` (Spark
# and the local engine against the reference) on random bundles, after two ingests instead of one.
@pytest.mark.deep
@_SLOW
@given(bundle=bundles())
def test_random_bundles_match_the_reference(spark, tmp_path_factory, bundle):
    st = Store.open(tmp_path_factory.getbasetemp() / f"prop-{uuid.uuid4().hex}", spark=spark)
    st.ingest(bundle)
    _check_store(st, Reference([bundle]), spark)


# Two ingests per example, so half the examples of the one-bundle property above (the suite's
# time budget); STRATA_SPARK_EXAMPLES deepens both.
@settings(_SLOW, max_examples=max(1, SPARK_EXAMPLES // 2))
@given(pair=bundle_pairs())
def test_incremental_ingest_matches_the_reference(spark, tmp_path_factory, pair):
    first, second = pair
    st = Store.open(tmp_path_factory.getbasetemp() / f"inc-{uuid.uuid4().hex}", spark=spark)
    st.ingest(first)
    st.ingest(second)
    assert st.version == 2
    _check_store(st, Reference([first, second]), spark)
