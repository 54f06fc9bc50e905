"""Pebble's running example (Section 2): Table 1 in, Figure 1's pipeline, Table 2 out.

Figure 1, as DataFrame calls: the upper branch keeps tweets with retweet_cnt = 0 and selects
text, user.id_str, user.name; the lower branch flattens user_mentions and selects text and the
mentioned user's id_str and name; the union is restructured into a user struct, grouped by it,
and the texts are nested into a list of {text}.
"""

from __future__ import annotations

import pytest
from support.capture_helpers import TWEETS, normalize
from support.running_example import TABLE_2, running_example, walk_associations

from capture import OpType, Tracker
from capture.operators import Manipulation as M


@pytest.fixture(scope="module")
def captured(spark):
    tracker = Tracker(spark, None, pipeline="running-example")
    tweets = tracker.read.json(TWEETS, name="tweets")
    result = running_example(tweets)
    cap = tracker.capture(result)
    assoc = [tuple(r) for r in cap.associations().collect()]
    sources = [(r.text, r._pid) for r in tweets.with_item_ids("_pid").collect()]
    rows = result.with_item_ids("_pid").collect()
    return cap, assoc, sources, rows, result.collect()


def test_result_is_table_2(captured, spark):
    _, _, _, rows, visible = captured
    got = {(r.user.id_str, r.user.name): sorted(t.text for t in r.tweets) for r in rows}
    assert got == {k: sorted(v) for k, v in TABLE_2.items()}
    plain = running_example(spark.read.json(TWEETS)).collect()
    assert normalize(plain) == normalize(visible)


def test_operator_provenance_per_definition_5_1(captured):
    cap, *_ = captured
    ops = {o.oid: o for o in cap.operators}
    got = {
        oid: (o.type, tuple(i.pred for i in o.inputs), tuple(i.accessed for i in o.inputs), o.manipulated)
        for oid, o in ops.items()
    }
    assert got == {
        1: (OpType.SOURCE, (), (), ()),
        2: (OpType.FILTER, (1,), (("retweet_cnt",),), ()),
        3: (OpType.SELECT, (2,), (("text", "user.id_str", "user.name"),),
            (M(0, "text", "text"), M(0, "user.id_str", "id_str"), M(0, "user.name", "name"))),
        4: (OpType.FLATTEN, (1,), (("user_mentions.[pos]", "text"),),
            (M(0, "text", "text"), M(0, "user_mentions.[pos]", "m_user"))),
        5: (OpType.SELECT, (4,), (("text", "m_user.id_str", "m_user.name"),),
            (M(0, "text", "text"), M(0, "m_user.id_str", "id_str"), M(0, "m_user.name", "name"))),
        6: (OpType.UNION, (3, 5), ((), ()), ()),
        7: (OpType.SELECT, (6,), (("id_str", "name", "text"),),
            (M(0, "id_str", "user.id_str"), M(0, "name", "user.name"), M(0, "text", "text"))),
        8: (OpType.AGGREGATION, (7,), (("user", "text"),),
            (M(0, "user", "user"), M(0, "text", "tweets.[pos].text"))),
    }
    assert ops[1].dataset == "tweets"


def test_backtracing_lisa_paul_finds_the_two_hello_world_tweets(captured):
    cap, assoc, sources, rows, _ = captured
    (lp,) = [r for r in rows if r.user.id_str == "lp"]
    traced = walk_associations(assoc, 8, lp._pid, cap.operators)
    text_of = {p: t for t, p in sources}
    # every nested position of the result comes from exactly one source tweet, with that text
    assert sorted(ap for _, _, ap in traced) == [1, 2, 3, 4]
    for src, _, ap in traced:
        assert lp.tweets[ap - 1].text == text_of[src]
    hello_world = sorted(src for src, _, ap in traced if lp.tweets[ap - 1].text == "Hello World")
    assert hello_world == sorted(p for t, p in sources if t == "Hello World")  # tweets 12 and 17
    # "Hello @lp" (tweet 29) reached lp through the flatten, as its first mention
    assert [fp for src, fp, _ in traced if text_of[src] == "Hello @lp"] == [1]


def test_backtracing_lauren_smith_keeps_both_mention_positions(captured):
    cap, assoc, sources, rows, _ = captured
    (ls,) = [r for r in rows if r.user.id_str == "ls"]
    traced = walk_associations(assoc, 8, ls._pid, cap.operators)
    (tweet1,) = [p for t, p in sources if t == "Hello @ls @jm @ls"]
    assert sorted((src, fp) for src, fp, _ in traced) == [(tweet1, 1), (tweet1, 3)]


def test_association_counts_per_operator(captured):
    _, assoc, *_ = captured
    counts: dict[int, int] = {}
    for oid, *_ in assoc:
        counts[oid] = counts.get(oid, 0) + 1
    # 4 tweets pass the filter, 5 mentions are flattened, 9 union inputs, 9 items grouped into 3
    assert counts == {2: 4, 3: 4, 4: 5, 5: 5, 6: 9, 7: 9, 8: 9}
