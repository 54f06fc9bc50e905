"""Split planning of the workflow dependency graph (pure; CSProv Section 3)."""

from __future__ import annotations

import pytest

from store.errors import UserError
from store.index.splits import plan_splits, split_rows

# A chain-with-branches workflow: inputs I1, I2 -> A -> B -> {C, D} -> E ; F alone.
WF = [("I1", "A"), ("I2", "A"), ("A", "B"), ("B", "C"), ("B", "D"), ("C", "E"), ("D", "E")]
TABLES = ["I1", "I2", "A", "B", "C", "D", "E", "F"]


def _connected(tables, edges):
    tables = set(tables)
    seen, todo = set(), [min(tables)]
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        todo += [b for a, b in edges if a == t and b in tables] + [a for a, b in edges if b == t and a in tables]
    return seen == tables


def test_auto_splits_partition_tables_into_weakly_connected_pieces():
    splits = plan_splits(TABLES, WF, bands=3)
    all_splits = [s for top in splits for s in top.walk()]
    top_tables = sorted(t for s in splits for t in s.tables)
    assert top_tables == sorted(TABLES)
    for s in all_splits:
        assert _connected(s.tables, WF), s
        if s.children:
            assert sorted(t for c in s.children for t in c.tables) == sorted(s.tables)
    assert all(len(s.tables) == 1 for s in all_splits if s.leaf)
    assert len(splits) >= 3  # three rank bands, F is its own piece


def test_cycles_in_the_workflow_do_not_hang_and_stay_together():
    splits = plan_splits(["A", "B", "C"], [("A", "B"), ("B", "A"), ("B", "C")], bands=2)
    assert sorted(t for s in splits for t in s.tables) == ["A", "B", "C"]


def test_user_splits_are_kept_and_the_rest_is_automatic():
    splits = plan_splits(TABLES, WF, user=[["I1", "I2", "A"], ["B", "C", "D"]])
    assert splits[0].tables == ("A", "I1", "I2") and splits[0].name == "sp1"
    assert splits[1].tables == ("B", "C", "D")
    assert sorted(t for s in splits[2:] for t in s.tables) == ["E", "F"]


@pytest.mark.parametrize(
    ("user", "message"),
    [([["A", "Nope"]], "names table 'Nope'"), ([["A"], ["A", "B"]], "in two splits")],
    ids=["unknown-table", "overlap"],
)
def test_bad_user_splits_are_user_errors(user, message):
    with pytest.raises(UserError, match=message):
        plan_splits(TABLES, WF, user=user)


def test_split_rows_give_every_table_a_split_at_every_level():
    splits = plan_splits(TABLES, WF, bands=2)
    rows = split_rows(splits)
    depth = max(r.level for r in rows)
    for t in TABLES:
        mine = sorted((r.level, r.split) for r in rows if r.table == t)
        assert [lv for lv, _ in mine] == list(range(1, depth + 1))
        assert [r for r in rows if r.table == t and r.level == depth][0].leaf
