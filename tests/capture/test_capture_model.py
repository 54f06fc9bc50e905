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
    """`stored_ids` (which picks the driver or Spark for a run's model): the hidden columns' ids,
    an array's elements counted one by one, the visible columns not at all, over files and row
    groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capture.storing.driver_model import stored_ids
    from store.segments import parquet_files

    folder = tmp_path_factory.mktemp("copy")
    table = pa.table({"name": [str(k) for k, _ in rows], "__strata_id_1": [k for k, _ in rows],
                      "__strata_agg_2": [ids for _, ids in rows]})
    half = len(rows) // 2
    pq.write_table(table.slice(0, half), folder / "part-0.parquet", row_group_size=max(1, half // groups))
    pq.write_table(table.slice(half), folder / "part-1.parquet")
    assert stored_ids(parquet_files(str(folder))) == len(rows) + sum(max(len(ids), 1) for _, ids in rows)


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_item_ids_formatted_column_wise_are_item_hex(ids):
    import numpy as np
    import pyarrow as pa

    from capture.ids import item_element_ids, item_hex

    names = [f"d{i % 3}" for i in range(len(ids))]
    out = item_element_ids(pa.array(names, pa.string()), np.array(ids, np.int64)).to_pylist()
    assert out == [f"{n}#{item_hex(i)}" for n, i in zip(names, ids, strict=True)]


# a source twice (a self-join's two inputs read one dataset), a join, an aggregate over it
_OPS = [OperatorProv(1, OpType.SOURCE, "read.json", (), (), dataset="t"),
        OperatorProv(2, OpType.SOURCE, "read.json", (), (), dataset="t"),
        OperatorProv(3, OpType.JOIN, "join", (OpInput(1, None), OpInput(2, None)), None),
        OperatorProv(4, OpType.AGGREGATION, "groupBy.agg", (OpInput(3, None),), None)]


@given(st.lists(st.tuples(st.sampled_from([(3, 0), (3, 1), (4, 0)]), st.integers(-3, 3), st.integers(-3, 3),
                          st.none() | st.integers(1, 3)), max_size=40))
def test_the_driver_model_has_one_item_per_dataset_and_id_and_one_edge_per_association(drawn):
    """capture/storing/to_model.py `driver_items` against the model's definition over plain sets:
    an element per (dataset, id) an association names, an edge per distinct (input item,
    operator, output item); elements the store knows are left out of the small bundle only."""
    import numpy as np

    from capture.ids import item_hex, operator_id
    from capture.storing.to_model import dataset_id, driver_items

    run = "p/run-1"
    assoc = [(oid, out_id, k, in_id, pos) for (oid, k), out_id, in_id, pos in drawn]
    by_oid = {o.oid: o for o in _OPS}

    def item(ds, i):
        return f"{ds}#{item_hex(i)}"

    want_edges, want_items = set(), set()
    for oid, out_id, k, in_id, _pos in assoc:
        src_ds, dst_ds = dataset_id(run, by_oid[by_oid[oid].inputs[k].pred]), dataset_id(run, by_oid[oid])
        want_edges.add((item(src_ds, in_id), operator_id(run, oid), item(dst_ds, out_id)))
        want_items |= {(item(src_ds, in_id), src_ds), (item(dst_ds, out_id), dst_ds)}
    rows = np.array([a[:4] for a in assoc], np.int64).reshape(-1, 4)
    small, items, edges = driver_items(run, "p", _OPS, rows, lambda ids: {"pipeline:p"}, {}, {"path": "/o"})
    got_edges = list(zip(*(edges[c].to_pylist() for c in ("src", "process", "dst")), strict=True))
    got_items = list(zip(items["id"].to_pylist(), items["parent"].to_pylist(), strict=True))
    assert sorted(got_edges) == sorted(want_edges) and len(got_edges) == len(set(got_edges))
    assert sorted(got_items) == sorted(want_items) and len(got_items) == len(set(got_items))
    ids = [e["id"] for e in small["elements"]]
    assert "pipeline:p" not in ids and {run, "dataset:t", f"{run}/op3/out", f"{run}/op4/out"} <= set(ids)


_members = st.none() | st.lists(st.none() | st.fixed_dictionaries({"__strata_id_3": st.none() | st.integers(-5, 5)}),
                                max_size=4)
_id = st.none() | st.integers(-5, 5)


@given(st.lists(st.fixed_dictionaries({"__strata_id_4": st.none() | st.integers(0, 9), "__strata_agg_4": _members,
                                       "__strata_id_3": _id, "__strata_id_1": _id, "__strata_id_2": _id}),
                max_size=12))
def test_associations_computed_column_wise_are_the_row_wise_ones(rows):
    """capture/storing/assoc_columns.py against associations.py's `assoc_rows` and
    `identity_rows` on the same rows: an aggregation's members (null lists, null members, null
    ids among them), a join's two id columns, and a sort after the aggregation (identity)."""
    import numpy as np  # noqa: F401  (the arrays compared below are numpy's)
    import pyarrow as pa

    from capture.operators import InRef
    from capture.storing.assoc_columns import assoc_columns, identity_columns
    from capture.storing.associations import assoc_rows, identity_rows

    ops = [OperatorProv(1, OpType.SOURCE, "read.json", (), (), dataset="t"),
           OperatorProv(2, OpType.SOURCE, "read.json", (), (), dataset="u"),
           OperatorProv(3, OpType.JOIN, "join", (OpInput(1, None), OpInput(2, None)), None),
           OperatorProv(4, OpType.AGGREGATION, "groupBy.agg", (OpInput(3, None),), None),
           OperatorProv(5, OpType.SORT, "orderBy", (OpInput(4, None),), None)]
    slots = [Slot(4, "__strata_id_4", InRef("__strata_id_3"), array="__strata_agg_4"),
             Slot(3, "__strata_id_3", InRef("__strata_id_1")), Slot(3, "__strata_id_3", InRef("__strata_id_2", 1))]
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("__strata_id_4", pa.int64()), ("__strata_agg_4", pa.list_(pa.struct([("__strata_id_3", pa.int64())]))),
        ("__strata_id_3", pa.int64()), ("__strata_id_1", pa.int64()), ("__strata_id_2", pa.int64())]))
    stored = assoc_columns(table, slots)
    tuples = assoc_rows(table.to_pylist(), slots)
    assert sorted(map(tuple, stored.tolist())) == sorted(r[:4] for r in tuples)
    ident = identity_columns(stored, ops, 5, table.column("__strata_id_4"))
    want = identity_rows(tuples, ops, 5, (r["__strata_id_4"] for r in rows))
    assert sorted(map(tuple, ident.tolist())) == sorted(r[:4] for r in want)


_i64 = st.none() | st.integers(-(2**63), 2**63 - 1)
_small = st.none() | st.integers(-3, 3)
_inner = st.none() | st.lists(st.none() | st.fixed_dictionaries({"x": _small, "y": _i64}), max_size=3)
_member = st.none() | st.fixed_dictionaries({"m1": _small, "m2": _i64, "ms": st.none() | st.integers(0, 1),
                                             "inner": _inner})


@given(st.lists(st.fixed_dictionaries({"a": _small, "b": _i64, "s": st.none() | st.integers(0, 1),
                                       "p": st.none() | st.integers(-(2**31), 2**31 - 1), "l": _small, "r": _i64,
                                       "members": st.none() | st.lists(_member, max_size=3)}),
                max_size=10))
def test_derived_ids_and_nested_slots_column_wise_are_the_row_wise_ones(rows):
    """The driver model's column-wise path (capture/storing/assoc_columns.py: `hydrate_columns`,
    `assoc_columns`, `identity_columns`) against the row-wise reference (`hydrate_rows`,
    `assoc_rows`, `identity_rows`) on the same rows: every kind of derived id, one derived from
    another, a column with two alternatives by a union's side, ids two collected arrays deep,
    slots under aggregations with conditions at their own level, nulls anywhere."""
    import pyarrow as pa

    from capture.ids import FLATTEN, JOIN, UNION, Derived, hydrate_rows
    from capture.operators import InRef
    from capture.storing.assoc_columns import assoc_columns, hydrate_columns, identity_columns
    from capture.storing.associations import assoc_rows, identity_rows

    derived = (Derived("j", JOIN, 3, ("a", "b")), Derived("jj", JOIN, 4, ("j", "l")),
               Derived("f", FLATTEN, 5, ("a", "p")), Derived("u", UNION, 6, ("s", "l", "r")),
               Derived("alt", JOIN, 7, ("a", "b"), when=(("s", 0),)),
               Derived("alt", FLATTEN, 8, ("b", "p"), when=(("s", 1),)),
               Derived("mj", JOIN, 10, ("m1", "m2"), nest=("members",)),
               Derived("ij", JOIN, 11, ("x", "y"), nest=("members", "inner")))
    slots = (Slot(3, "j", InRef("a")), Slot(3, "j", InRef("b", 1)), Slot(4, "jj", InRef("j")),
             Slot(5, "f", InRef("a"), pos_col="p"), Slot(6, "u", InRef("l"), when=((0, "s", 0),)),
             Slot(6, "u", InRef("r", 1), when=((0, "s", 1),)), Slot(7, "alt", InRef("b")),
             Slot(12, "jj", InRef("mj"), array="members"),
             Slot(10, "mj", InRef("m1"), nest=("members",)),
             Slot(10, "mj", InRef("m2", 1), nest=("members",), when=((1, "ms", 1),)),
             Slot(13, "mj", InRef("ij"), nest=("members",), array="inner"),
             Slot(11, "ij", InRef("x"), nest=("members", "inner"), when=((0, "s", 0),)))
    ops = [OperatorProv(1, OpType.SOURCE, "read.json", (), (), dataset="t"),
           OperatorProv(14, OpType.FILTER, "filter", (OpInput(1, None),), None),
           OperatorProv(3, OpType.JOIN, "join", (OpInput(14, None), OpInput(1, None)), None),
           OperatorProv(12, OpType.AGGREGATION, "groupBy.agg", (OpInput(3, None),), None),
           OperatorProv(15, OpType.SORT, "orderBy", (OpInput(12, None),), None)]
    inner = pa.list_(pa.struct([("x", pa.int64()), ("y", pa.int64())]))
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("s", pa.int8()), ("p", pa.int32()),
                        ("l", pa.int64()), ("r", pa.int64()),
                        ("members", pa.list_(pa.struct([("m1", pa.int64()), ("m2", pa.int64()), ("ms", pa.int32()),
                                                        ("inner", inner)])))])
    table = pa.Table.from_pylist(rows, schema=schema)
    want = hydrate_rows(table.to_pylist(), derived)
    got = hydrate_columns(table, derived)
    assert got.to_pylist() == want
    stored = assoc_columns(got, slots)
    tuples = assoc_rows(want, slots)
    assert sorted(map(tuple, stored.tolist())) == sorted(r[:4] for r in tuples)
    ident = identity_columns(stored, ops, 15, got.column("jj"))
    assert sorted(map(tuple, ident.tolist())) == \
        sorted(r[:4] for r in identity_rows(tuples, ops, 15, (r["jj"] for r in want)))


@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**64 - 1), st.booleans()), max_size=20),
       st.sampled_from(["<i", "<q"]))
def test_column_wise_hashes_are_xxhash64(values, width):
    """`mix_columns` against `capture.ids.mix` (the xxhash package's XXH64), 4- and 8-byte
    values, every seed, nulls keeping the seed."""
    import numpy as np

    from capture.ids import mix
    from capture.storing.assoc_columns import mix_columns

    if width == "<i":
        values = [(v % 2**32 - 2**31, seed, ok) for v, seed, ok in values]
    v = np.array([x for x, _, _ in values], np.int64)
    seeds = np.array([s for _, s, _ in values], np.uint64)
    ok = np.array([o for _, _, o in values], bool)
    got = mix_columns(seeds, v, ok, width).view(np.int64).tolist()
    signed = [s - 2**64 if s >= 2**63 else s for _, s, _ in values]
    assert got == [mix(s, x if o else None, width) for (x, _, o), s in zip(values, signed, strict=True)]
