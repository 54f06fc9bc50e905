"""TRACE in IQL: a committed run of the running example, traced from its result items."""

from __future__ import annotations

import pytest
from support.capture_helpers import TWEETS
from support.running_example import running_example

import iql
from capture import Tracker
from capture.tracing import item_element_id
from iql.errors import IqlSyntaxError
from store import Store
from store.errors import UserError


@pytest.fixture(scope="module")
def traced_store(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("trace") / "store"
    store = Store.open(str(root), spark=spark)
    tracker = Tracker(spark, store, pipeline="running-example", model=False)
    tweets = tracker.read.json(TWEETS, name="tweets")
    result = running_example(tweets)
    info = tracker.write(result, str(root.parent / "out"), format="parquet")  # one commit, traceable
    hello = sorted(r._pid for r in tweets.with_item_ids("_pid").collect() if r.text == "Hello World")
    return Store.open(str(root), spark=spark), info.run, hello


def test_trace_statement_returns_contributing_and_influencing_rows(traced_store):
    store, run, hello = traced_store
    res = iql.run(store, "TRACE MATCH '//id_str = ''lp'' and /tweets[count(text = ''Hello World'') >= 2]"
                         "/text = ''Hello World''';")
    assert res.columns == ("dataset", "item", "item_id", "path", "role", "accessed_by", "manipulated_by",
                           "source", "value")
    rows = res.rows()
    assert sorted({r[2] for r in rows}) == hello
    for item in hello:
        mine = {r[3]: r[4] for r in rows if r[2] == item}
        assert mine == {"text": "contributing", "user": "contributing", "user.id_str": "contributing",
                        "user.name": "influencing", "retweet_cnt": "influencing"}
    assert all(r[1] == item_element_id("tweets", r[2]) for r in rows)
    (rt,) = {tuple(r[5]) for r in rows if r[3] == "retweet_cnt"}
    assert rt == (2,)  # the upper branch's filter


def test_trace_with_an_explicit_run_and_limit(traced_store):
    store, run, _ = traced_store
    rows = iql.run(store, f"trace '{run}' match '/user/id_str' limit 1").rows()
    assert len({r[2] for r in rows}) >= 1 and {r[0] for r in rows} == {"tweets"}


def test_bad_pattern_points_into_the_query(traced_store):
    store, *_ = traced_store
    with pytest.raises(IqlSyntaxError) as err:
        iql.run(store, "TRACE MATCH 'user/id_str'")
    assert "bad tree pattern" in str(err.value) and err.value.column == 14  # under `user`, in the literal
    assert err.value.span == (13, 17) and "\n" not in err.value.message


def test_unknown_run_says_which_runs_exist(traced_store):
    store, run, _ = traced_store
    with pytest.raises(UserError) as err:
        iql.run(store, "TRACE 'nope' MATCH '/user'")
    assert "no captured run 'nope'" in str(err.value) and run in str(err.value)


def test_a_run_is_traceable_straight_after_tracker_write(spark, tmp_path):
    store = Store.open(str(tmp_path / "s"), spark=spark)
    tracker = Tracker(spark, store, pipeline="p", model=False)
    tweets = tracker.read.json(TWEETS, name="tweets")
    tracker.write(tweets.filter("retweet_cnt = 1"), str(tmp_path / "o"), format="parquet")
    assert store.refresh().version == 1  # the result items came in the run's own commit
    rows = iql.run(store, "TRACE MATCH '/text'").rows()
    assert rows and {r[0] for r in rows} == {"tweets"}
    # the matched text contributes; the filter's retweet_cnt only influenced the result
    assert {(r[3], r[4]) for r in rows} == {("text", "contributing"), ("retweet_cnt", "influencing")}


def test_no_match_gives_no_rows_and_rows_render_as_indented_trees(traced_store):
    from iql.result import trace_tree

    store, *_ = traced_store
    assert iql.run(store, "TRACE MATCH '/user/id_str = ''nobody'''").rows() == []
    rows = iql.run(store, "TRACE MATCH '/tweets/text = ''Hello @lp'''").rows()
    text = trace_tree(rows)
    lines = text.splitlines()
    assert lines[0].startswith(f"{TWEETS}:5  dataset:tweets#")  # where the item lives: file:line
    # only the grouping key (not asked for) came from it; each node shows its value read back
    assert '  user_mentions  influencing  = [{"id_str": "lp", "name": "Lisa Paul"}]' in lines
    assert "    [1]  influencing  accessed by 4  = {\"id_str\": \"lp\", \"name\": \"Lisa Paul\"}" in lines
    assert any(line.startswith("      name  influencing") for line in lines)


def test_strata_query_prints_trace_rows_as_trees(traced_store):
    from strata.cli_query import render

    store, *_ = traced_store
    result = iql.run(store, "TRACE MATCH '/tweets/text = ''Hello @lp'''")
    text = render(result, "table")
    assert result.form is iql.Form.TRACE and result.columns == tuple(n for n, _ in iql.TRACE_COLUMNS)
    assert text.splitlines()[0].startswith(f"{TWEETS}:")
    assert "  text  contributing" in text
    # the same rows through SELECT * FROM TRACE(...) are a relation like any other: a table
    select = iql.run(store, "SELECT * FROM TRACE(MATCH '/tweets/text = ''Hello @lp''')")
    assert select.form is iql.Form.SELECT and sorted(select.rows()) == sorted(result.rows())
    assert render(select, "table").splitlines()[0].split(" | ")[0].strip() == "dataset"
