"""Pure parts of the capture layer (no Spark): operator provenance records and slots."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capture.errors import UnsupportedOperation
from capture.operators import Access, InRef, Manipulation, OperatorProv, OpInput, OpType, Slot
from capture.storing.commit import operator_rows

_col = st.sampled_from(["__strata_id_1", "__strata_id_2", "__strata_agg_3", "__strata_side_4"])


@given(nest=st.lists(_col, max_size=3), conds=st.lists(st.tuples(st.integers(0, 3), _col, st.integers(0, 1))),
       outer=_col)
def test_nesting_moves_every_condition_one_level_down(nest, conds, outer):
    s = Slot(5, "__strata_id_5", InRef("__strata_id_1"), nest=tuple(nest), when=tuple(conds))
    n = s.nested_in(outer)
    assert n.nest == (outer, *nest)
    assert n.when == tuple((d + 1, c, v) for d, c, v in conds)
    assert (n.out_col, n.in_ref) == (s.out_col, s.in_ref)  # the fields inside the struct keep their names


def test_renaming_touches_only_top_level_columns():
    flat = Slot(2, "__strata_id_1", InRef("__strata_id_1"), when=((0, "__strata_side_4", 1),))
    assert flat.renamed({"__strata_id_1": "__strata_id_1_j9", "__strata_side_4": "s"}) == Slot(
        2, "__strata_id_1_j9", InRef("__strata_id_1_j9"), when=((0, "s", 1),))
    nested = flat.nested_in("__strata_agg_3")
    r = nested.renamed({"__strata_agg_3": "a", "__strata_id_1": "x", "__strata_side_4": "s"})
    assert (r.nest, r.out_col, r.when) == (("a",), "__strata_id_1", ((1, "__strata_side_4", 1),))


def test_only_when_and_repeated():
    s = Slot(3, "o", InRef("i", 1)).only_when("side", 0).repeated()
    assert (s.when, s.distinct, s.repeated() is s) == (((0, "side", 0),), True, True)


def test_operator_records_reject_bad_shapes():
    with pytest.raises(ValueError, match="source operator has no inputs"):
        OperatorProv(1, OpType.SOURCE, "read.json", (OpInput(1, ()),), ())
    with pytest.raises(ValueError, match="operator id"):
        OperatorProv(0, OpType.FILTER, "filter", (OpInput(1, ()),), ())
    with pytest.raises(ValueError):
        Access(0, "")
    assert OperatorProv(2, OpType.MAP, "mapInPandas", (OpInput(1, None),), None).opaque


def test_operator_rows_keep_undefined_apart_from_empty():
    ops = [
        OperatorProv(1, OpType.SOURCE, "read.json", (), (), dataset="t"),
        OperatorProv(2, OpType.FILTER, "filter", (OpInput(1, ("retweet_cnt",)),), ()),
        OperatorProv(3, OpType.MAP, "select", (OpInput(2, None),), None),
        OperatorProv(4, OpType.SELECT, "select", (OpInput(3, ("user.name",)),), (Manipulation(0, "user.name", "n"),)),
    ]
    rows = operator_rows("r", ops)
    assert rows[1][4:6] == ([(0, 1, ["retweet_cnt"])], [])
    assert rows[2][4:6] == ([(0, 2, None)], None)
    assert rows[3][5] == [(0, "user.name", "n")]


def test_unsupported_operation_message_names_the_operation():
    err = UnsupportedOperation.named("sample")
    assert "'sample'" in str(err) and "docs/capture.md" in str(err) and "untracked()" in str(err)


def test_first_copy_survives_nesting_until_a_filter_or_join():
    s = Slot(2, "__strata_id_2", InRef("__strata_id_1"), pos_col="__strata_pos_2")
    flat = s.repeated_by("__strata_pos_3").repeated_by("__strata_pos_4")
    assert (flat.distinct, flat.first) == (True, ((0, "__strata_pos_3"), (0, "__strata_pos_4")))
    nested = flat.nested_in("__strata_agg_5")
    assert nested.first == ((1, "__strata_pos_3"), (1, "__strata_pos_4"))
    assert nested.filtered().first is None and s.filtered() == s  # unrepeated rows need nothing
    assert flat.repeated().first is None and flat.repeated().repeated_by("p").first is None


@given(rows=st.lists(st.tuples(st.integers(0, 9), st.lists(st.integers(0, 99), max_size=6)), max_size=30),
       groups=st.integers(1, 4))
def test_the_ids_a_store_copy_holds_are_counted_from_its_footers(tmp_path_factory, rows, groups):
    """`_stored_ids` (which picks the driver or Spark for a run's model): the hidden columns' ids,
    an array's elements counted one by one, the visible columns not at all, over files and row
    groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capture.storing.commit import _stored_ids

    folder = tmp_path_factory.mktemp("copy")
    table = pa.table({"name": [str(k) for k, _ in rows], "__strata_id_1": [k for k, _ in rows],
                      "__strata_agg_2": [ids for _, ids in rows]})
    half = len(rows) // 2
    pq.write_table(table.slice(0, half), folder / "part-0.parquet", row_group_size=max(1, half // groups))
    pq.write_table(table.slice(half), folder / "part-1.parquet")
    assert _stored_ids(str(folder)) == len(rows) + sum(max(len(ids), 1) for _, ids in rows)
