"""Structural backtracing (capture/tracing/backtrace.py): hand-checked operators and the running example.

The running example (Pebble Section 2): tracing user lp's duplicate "Hello World" texts must give
exactly the two Hello World tweets, with text and user.id_str contributing (dark green) and
user.name and retweet_cnt only influencing (medium green) -- nothing of the other tweets.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from support.backtrace_helpers import match_items, spark_fetcher, trace_captured, trace_over
from support.capture_helpers import TWEETS, USERS, USERS_SCHEMA
from support.running_example import running_example

from capture import Tracker
from capture.operators import Manipulation as M
from capture.operators import OperatorProv, OpInput, OpType
from capture.storing import load_run
from capture.tracing import item_element_id, parse_pattern, trace
from capture.tracing.backtrace import backtrace
from capture.tracing.pattern import match

QUESTION = "//id_str = 'lp' and /tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'"


def src(oid=1, name="d"):
    return OperatorProv(oid, OpType.SOURCE, "read.json", (), (), dataset=name)


def fetch_from(table):
    """A fetch over in-memory associations {oid: [(out, input, in, pos)]}, recording the calls."""
    calls = []

    def fetch(oid, ids):
        calls.append((oid, tuple(ids)))
        return [r for r in table.get(oid, []) if r[0] in ids]

    fetch.calls = calls
    return fetch


def nodes(trace, dataset):
    return {i.item_id: {n.path: (n.role, n.accessed, n.manipulated) for n in i.nodes}
            for i in trace.items if i.dataset == dataset}


# ---- pure core, hand-checked ---------------------------------------------------------------
def test_select_swaps_are_undone_at_once_and_filters_add_influencing_nodes():
    ops = [src(), OperatorProv(2, OpType.FILTER, "filter", (OpInput(1, ("flag",)),), ()),
           OperatorProv(3, OpType.SELECT, "select", (OpInput(2, ("a", "b")),), (M(0, "a", "b"), M(0, "b", "a")))]
    t = backtrace(ops, 3, {7: ["a"]}, fetch_from({}))
    assert nodes(t, "d") == {7: {"b": ("contributing", (3,), (3,)), "a": ("influencing", (3,), ()),
                                 "flag": ("influencing", (2,), ())}}


def test_struct_built_by_a_select_maps_back_to_every_field():
    ops = [src(), OperatorProv(2, OpType.SELECT, "select", (OpInput(1, ("x", "y")),),
                               (M(0, "x", "s.x"), M(0, "y", "s.y")))]
    t = backtrace(ops, 2, {5: ["s"]}, fetch_from({}))
    assert {p for p, (role, *_) in nodes(t, "d")[5].items() if role == "contributing"} == {"x", "y"}


def test_union_branches_keep_only_their_items_and_rename_the_second_input():
    ops = [src(1, "l"), src(2, "r"), OperatorProv(3, OpType.UNION, "union", (OpInput(1, ()), OpInput(2, ())),
                                                 (M(1, "rname", "name"),))]
    fetch = fetch_from({3: [(100, 0, 10, None), (200, 1, 20, None)]})
    t = backtrace(ops, 3, {200: ["name"]}, fetch)
    assert t.datasets() == ["r"]
    assert nodes(t, "r") == {20: {"rname": ("contributing", (), (3,))}}
    assert fetch.calls == [(3, (200,))]  # only the traced id is asked for


def test_join_sides_get_only_their_own_columns_and_the_join_keys_influence():
    ops = [src(1, "l"), src(2, "r"),
           OperatorProv(3, OpType.JOIN, "join", (OpInput(1, ("k",)), OpInput(2, ("id",))),
                        (M(0, "k", "k"), M(0, "a", "a"), M(1, "id", "id"), M(1, "b", "b")))]
    t = backtrace(ops, 3, {9: ["b"]}, fetch_from({3: [(9, 0, 1, None), (9, 1, 2, None)]}))
    assert nodes(t, "l") == {1: {"k": ("influencing", (3,), ())}}
    assert nodes(t, "r") == {2: {"b": ("contributing", (), (3,)), "id": ("influencing", (3,), ())}}


def test_flatten_positions_replace_the_placeholder_and_merge_per_input_item():
    ops = [src(), OperatorProv(2, OpType.FLATTEN, "select", (OpInput(1, ("arr.[pos]", "t")),),
                               (M(0, "t", "t"), M(0, "arr.[pos]", "e")))]
    fetch = fetch_from({2: [(11, 0, 1, 1), (13, 0, 1, 3), (12, 0, 1, 2)]})
    t = backtrace(ops, 2, {11: ["e.f"], 13: ["e"]}, fetch)
    got = nodes(t, "d")[1]
    assert got["arr.[1].f"][0] == "contributing" and got["arr.[3]"][0] == "contributing"
    assert "arr.[2]" not in got  # position 2 was not asked for
    assert got["t"] == ("influencing", (2,), ())


def test_aggregation_keeps_only_the_members_at_the_queried_nested_positions():
    ops = [src(), OperatorProv(2, OpType.AGGREGATION, "groupBy.agg", (OpInput(1, ("k", "v")),),
                               (M(0, "k", "k"), M(0, "v", "vs.[pos].v")))]
    members = [(50, 0, 1, 1), (50, 0, 2, 2), (50, 0, 3, 3)]
    t = backtrace(ops, 2, {50: ["vs.[2].v"]}, fetch_from({2: members}))
    assert list(nodes(t, "d")) == [2]
    assert nodes(t, "d")[2] == {"v": ("contributing", (2,), (2,)), "k": ("influencing", (2,), ())}
    # asking for the key alone: every member of the group produced it
    t = backtrace(ops, 2, {50: ["k"]}, fetch_from({2: members}))
    assert sorted(nodes(t, "d")) == [1, 2, 3]
    assert all(n["k"][0] == "contributing" and n["v"][0] == "influencing" for n in nodes(t, "d").values())


def test_opaque_map_marks_every_node_manipulated():
    ops = [src(), OperatorProv(2, OpType.MAP, "mapInPandas", (OpInput(1, None),), None)]
    t = backtrace(ops, 2, {4: ["a", "b.c"]}, fetch_from({}))
    assert nodes(t, "d")[4] == {"a": ("contributing", (), (2,)), "b": ("contributing", (), ()),
                                "b.c": ("contributing", (), (2,))}


def test_sort_and_limit_keep_paths_and_record_the_sort_key():
    ops = [src(), OperatorProv(2, OpType.SORT, "orderBy", (OpInput(1, ("n",)),), ()),
           OperatorProv(3, OpType.LIMIT, "limit", (OpInput(2, ()),), ())]
    t = backtrace(ops, 3, {1: ["a.b"]}, fetch_from({}))
    assert nodes(t, "d")[1] == {"a": ("contributing", (), ()), "a.b": ("contributing", (), ()),
                                "n": ("influencing", (2,), ())}


def test_distinct_traces_every_duplicate():
    ops = [src(), OperatorProv(2, OpType.AGGREGATION, "distinct", (OpInput(1, ("a",)),), (M(0, "a", "a"),))]
    t = backtrace(ops, 2, {9: ["a"]}, fetch_from({2: [(9, 0, 1, 1), (9, 0, 2, 2)]}))
    assert sorted(nodes(t, "d")) == [1, 2]
    assert all(n["a"] == ("contributing", (2,), (2,)) for n in nodes(t, "d").values())


def test_semi_join_traces_its_matching_right_items_as_influencing():
    # a semi join's rows: the kept left item (input 0) and each right item that matched it (input 1,
    # its position in the collected matches); no right path is manipulated into the output
    ops = [src(1, "l"), src(2, "r"),
           OperatorProv(3, OpType.JOIN, "join", (OpInput(1, ("k",)), OpInput(2, ("id",))), (M(0, "k", "k"),))]
    t = backtrace(ops, 3, {5: ["k"]}, fetch_from({3: [(5, 0, 5, None), (5, 1, 7, 1), (5, 1, 8, 2), (6, 1, 9, 1)]}))
    assert t.datasets() == ["l", "r"] and nodes(t, "l") == {5: {"k": ("contributing", (3,), (3,))}}
    assert nodes(t, "r") == {7: {"id": ("influencing", (3,), ())}, 8: {"id": ("influencing", (3,), ())}}


# ---- the running example in Spark --------------------------------------------------------
@pytest.fixture(scope="module")
def example(spark):
    tracker = Tracker(spark, None, pipeline="running-example")
    tweets = tracker.read.json(TWEETS, name="tweets")
    result = running_example(tweets)
    cap = tracker.capture(result)
    assoc = spark.createDataFrame(cap.associations().collect(), "oid int, out_id long, input int, in_id long, pos int")
    ids = {}
    for r in tweets.with_item_ids("_pid").collect():
        ids.setdefault(r.text, []).append(r._pid)
    return tracker, result, cap, assoc, ids


def _run(example, pattern, fetch=None):
    _, result, cap, assoc, _ = example
    matched = match_items(result.with_item_ids("_pid"), pattern, "_pid")
    return backtrace(cap.operators, cap.result_oid, matched, fetch or spark_fetcher(assoc))


def roles(t, dataset="tweets"):
    return {i: {p for p, (r, *_) in ns.items() if r == "contributing"} for i, ns in nodes(t, dataset).items()}, \
        {i: {p for p, (r, *_) in ns.items() if r == "influencing"} for i, ns in nodes(t, dataset).items()}


def test_running_example_duplicate_hello_world_of_lp(example):
    *_, ids = example
    t = _run(example, QUESTION)
    assert t.matched == 1 and t.datasets() == ["tweets"]
    contributing, influencing = roles(t)
    hello = sorted(ids["Hello World"])
    assert sorted(contributing) == hello  # exactly the two Hello World tweets (12 and 17 in Table 1)
    for i in hello:
        assert contributing[i] == {"text", "user", "user.id_str"}  # dark green
        assert influencing[i] == {"user.name", "retweet_cnt"}  # medium green
        got = nodes(t, "tweets")[i]
        assert got["retweet_cnt"] == ("influencing", (2,), ())  # the filter of the upper branch
        assert got["text"] == ("contributing", (3, 7, 8), (3, 7, 8))
        assert got["user.id_str"][2] == (3, 7, 8)


def test_running_example_without_the_user_condition_the_grouping_key_only_influences(example):
    t = _run(example, "/tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'")
    contributing, influencing = roles(t)
    assert all(c == {"text"} for c in contributing.values()) and len(contributing) == 2
    assert all({"user.id_str", "user.name", "retweet_cnt"} <= i for i in influencing.values())


def test_lower_branch_item_is_traced_through_the_flatten_position(example):
    *_, ids = example
    t = _run(example, "//id_str = 'lp' and /tweets/text = 'Hello @lp'")
    contributing, influencing = roles(t)
    (tweet29,) = ids["Hello @lp"]
    assert list(contributing) == [tweet29]  # the union's second branch; no retweet_cnt filter
    assert contributing[tweet29] == {"text", "user_mentions", "user_mentions.[1]", "user_mentions.[1].id_str"}
    assert influencing[tweet29] == {"user_mentions.[1].name"}


def test_both_mention_positions_of_ls_in_one_tweet(example):
    *_, ids = example
    t = _run(example, "/user/id_str = 'ls'")
    contributing, influencing = roles(t)
    (tweet1,) = ids["Hello @ls @jm @ls"]
    assert list(contributing) == [tweet1]
    assert {p for p in contributing[tweet1] if p.endswith("id_str")} == {
        "user_mentions.[1].id_str", "user_mentions.[3].id_str"}  # not the jm mention at position 2
    assert "user_mentions.[2].id_str" not in influencing[tweet1] | contributing[tweet1]
    assert "text" in influencing[tweet1]


def test_only_the_traced_ids_are_fetched_and_only_for_id_changing_operators(example):
    _, _, cap, assoc, _ = example
    inner = spark_fetcher(assoc)
    calls = []

    def fetch(oid, ids):
        calls.append((oid, len(ids)))
        return inner(oid, ids)

    _run(example, QUESTION, fetch)
    assert [oid for oid, _ in calls] == [8, 6]  # aggregation, union (the flatten branch is never reached)
    assert calls == [(8, 1), (6, 2)]


def test_match_in_spark_equals_the_pure_matcher(example):
    _, result, *_ = example
    rows = result.with_item_ids("_pid").collect()
    pat = parse_pattern("/tweets/text = 'Hello @ls @jm @ls'")
    expected = {r._pid: match(pat, {"user": r.user.asDict(), "tweets": [t.asDict() for t in r.tweets]})
                for r in rows}
    got = match_items(result.with_item_ids("_pid"), pat, "_pid")
    assert got == {k: v for k, v in expected.items() if v is not None}
    assert len(got) == 3


def test_trace_captured_renders_trees_and_json(example):
    tracker, result, *_ = example
    t = trace_captured(tracker, result, QUESTION)
    text = t.render()
    assert text.count("dataset:tweets#") == 2 and "retweet_cnt  [influencing]  (accessed by 2)" in text
    assert all(item_element_id(i.dataset, i.item_id) in text.splitlines() for i in t.items)
    assert '"role": "contributing"' in t.to_json()
    assert {r[3] for r in t.rows()} == {"contributing", "influencing"}


# ---- a join side, through the store -------------------------------------------------------
def test_join_sides_from_a_committed_run(spark, tmp_path):
    from store import Store

    store = Store.open(str(tmp_path / "store"), spark=spark)
    tracker = Tracker(spark, store, pipeline="join", model=False)
    tweets = tracker.read.json(TWEETS, name="tweets")
    users = tracker.track(spark.createDataFrame(USERS, USERS_SCHEMA), name="users")
    result = (tweets.select("text", F.col("user.id_str").alias("uid"))
              .join(users, F.col("uid") == F.col("id")).select("text", "followers"))
    tracker.write(result, str(tmp_path / "out"), format="parquet")
    store = Store.open(str(tmp_path / "store"), spark=spark)
    run = load_run(store)
    # the whole P of the run (a view of its stored result) and TRACE's own path (the matched
    # rows' hidden columns only) give the same trace
    t = trace_over(run.operators, run.result_oid, result.with_item_ids("_pid"), "_pid", "/followers = 20",
              run.associations())
    assert sorted(trace(store, None, parse_pattern("/followers = 20")).rows()) == sorted(t.rows())
    (jm_user,) = [i for i in t.items if i.dataset == "users"]
    assert {n.path: n.role for n in jm_user.nodes} == {"followers": "contributing", "id": "influencing"}
    left = [i for i in t.items if i.dataset == "tweets"]
    assert len(left) == 2  # jm's two tweets joined with jm: their join key and the selected text influence
    assert all({n.path: n.role for n in i.nodes} == {"user": "influencing", "user.id_str": "influencing",
                                                     "text": "influencing"} for i in left)


# ---- against the lineage reference of test_capture_example (a walk over all associations) --
def test_every_position_traces_to_the_one_reference_source_item(example):
    """Driver-side matching and an in-memory fetch (both tested above against Spark) keep this fast."""
    from support.running_example import walk_associations

    _, result, cap, assoc, _ = example
    rows = [tuple(r) for r in assoc.collect()]
    table: dict = {}
    for oid, out_id, inp, in_id, pos in rows:
        table.setdefault(oid, []).append((out_id, inp, in_id, pos))
    for row in result.with_item_ids("_pid").collect():
        user = row.user.id_str
        doc = {"user": row.user.asDict(), "tweets": [t.asDict() for t in row.tweets]}
        reference = walk_associations(rows, cap.result_oid, row._pid, cap.operators)
        by_position = {ap: (src, fp) for src, fp, ap in reference}

        def run(pattern, doc=doc, pid=row._pid):
            paths = match(parse_pattern(pattern), doc)
            return backtrace(cap.operators, cap.result_oid, {pid: paths}, fetch_from(table))

        for k in range(1, len(row.tweets) + 1):
            contributing, _ = roles(run(f"/user/id_str = '{user}' and /tweets[{k}]/text"))
            src, fp = by_position[k]
            assert list(contributing) == [src]
            expected = {"text", "user", "user.id_str"} if fp is None else {
                "text", "user_mentions", f"user_mentions.[{fp}]", f"user_mentions.[{fp}].id_str"}
            assert contributing[src] == expected
        # the grouping key alone: exactly the reference lineage (every member of the group)
        contributing, _ = roles(run(f"/user/id_str = '{user}'"))
        assert sorted(contributing) == sorted({src for src, _, _ in reference})
