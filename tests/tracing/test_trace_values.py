"""What a trace prints per node, checked against plain references (no Spark): the backtrace's
shared work (one step back per tree shape, positions only where the operator's paths use them)
against stepping back every association on its own, the JSON text of values and operator lists
against ``json.dumps``, the traced Parquet rows DuckDB reads against pyarrow's, and the TRACE
table's CSV written column-wise against the csv module's."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.depth import examples

from capture.operators import Manipulation as M
from capture.operators import OperatorProv, OpInput, OpType
from capture.tracing import TRACE_SCHEMA, item_element_id
from capture.tracing.backtrace import GroupsFetcher, TracedItem, TracedNode, backtrace
from capture.tracing.locate import table_of
from capture.tracing.places import Place, json_column, json_text, located, value_at
from iql import TRACE_COLUMNS
from iql.result import cell_text


def _reference(ops, result_oid, matched, rows):
    """Every association row backtraced on its own (nothing shared between rows), the nodes of
    each input item merged over its rows: a path's role contributing if it is in any row's trace,
    its operators the union."""
    merged: dict[tuple, dict[str, list]] = {}
    for row in rows:
        if row[0] not in matched:
            continue
        one = backtrace(ops, result_oid, {row[0]: matched[row[0]]}, lambda oid, ids, row=row: [row])
        for item in one.items:
            nodes = merged.setdefault((item.dataset, item.item_id), {})
            for n in item.nodes:
                old = nodes.setdefault(n.path, [False, set(), set()])
                old[0] |= n.contributing
                old[1] |= set(n.accessed)
                old[2] |= set(n.manipulated)
    return {key: {p: (c, tuple(sorted(a)), tuple(sorted(m))) for p, (c, a, m) in nodes.items()}
            for key, nodes in merged.items()}


PATHS = st.sampled_from(["k", "v", "s.x", "arr.[pos]", "arr.[pos].f", "vs.[pos].v", "t"])


@st.composite
def _cases(draw):
    kind = draw(st.sampled_from([OpType.AGGREGATION, OpType.FLATTEN]))
    pairs = draw(st.lists(st.tuples(PATHS, PATHS), min_size=1, max_size=4, unique_by=lambda p: p[1]))
    # an operator that keeps ids (a filter) between the source and the operator, or not
    below = [OperatorProv(1, OpType.SOURCE, "read", (), (), dataset="d")]
    if draw(st.booleans()):
        below.append(OperatorProv(2, OpType.FILTER, "filter", (OpInput(1, tuple(draw(st.lists(PATHS, max_size=2)))),),
                                  ()))
    op = OperatorProv(len(below) + 1, kind, "op", (OpInput(len(below), tuple(draw(st.lists(PATHS, max_size=2)))),),
                      tuple(M(0, s, d) for s, d in pairs))
    outs = draw(st.lists(st.integers(100, 103), min_size=1, max_size=3, unique=True))
    rows = [(o, 0, draw(st.integers(1, 30)), draw(st.integers(1, 4))) for o in outs
            for _ in range(draw(st.integers(1, 12)))]
    positions = st.sampled_from(["[1]", "[2]", "[pos]"])
    matched = {o: [d.replace("[pos]", draw(positions)) for d in draw(st.lists(st.sampled_from([d for _, d in pairs]),
                                                                              min_size=1, max_size=2))]
               for o in outs}
    return [*below, op], matched, rows, op.oid


@settings(max_examples=examples(100, 300), deadline=None)
@given(_cases())
def test_shared_steps_back_equal_stepping_back_every_association(case):
    ops, matched, rows, top = case
    want = _reference(ops, top, matched, rows)
    got = backtrace(ops, top, matched, lambda oid, ids: [r for r in rows if r[0] in ids])
    assert {(i.dataset, i.item_id): {n.path: (n.contributing, n.accessed, n.manipulated) for n in i.nodes}
            for i in got.items} == want
    # the same associations as the matched rows' groups (a group's members as one list: stepped
    # back together where the operator's paths ignore positions)
    groups: dict[int, tuple[list, list]] = {}
    for out_id, _, in_id, pos in rows:
        groups.setdefault(out_id, ([], []))[0].append(in_id)
        groups[out_id][1].append(pos)
    fetch = GroupsFetcher([(top, out_id, 0, ids, pos) for out_id, (ids, pos) in groups.items()])
    grouped = backtrace(ops, top, matched, fetch)
    assert [(i.dataset, i.item_id, i.nodes) for i in grouped.items] == [(i.dataset, i.item_id, i.nodes)
                                                                          for i in got.items]


def test_a_groups_members_share_one_step_back_when_positions_do_not_count():
    ops = [OperatorProv(1, OpType.SOURCE, "read", (), (), dataset="d"),
           OperatorProv(2, OpType.AGGREGATION, "groupBy.agg", (OpInput(1, ("k",)),), (M(0, "k", "k"), M(0, "v", "s")))]
    rows = [(7, 0, i, i) for i in range(1, 50_001)]
    got = backtrace(ops, 2, {7: ["s"]}, lambda oid, ids: rows)
    assert len(got.items) == 50_000
    assert len({id(i.nodes) for i in got.items}) == 1  # one tree, shared by every member


SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.dates() | st.datetimes()
           | st.times() | st.decimals(allow_nan=False) | st.binary(max_size=8))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                             max_size=3), max_leaves=8)


def _as_text(v):
    """What a trace prints for a value JSON has no type for: its text (bytes decoded, else base64)."""
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            return base64.b64encode(v).decode()
    return str(v)


@given(VALUES)
def test_a_values_json_text_is_json_dumps(v):
    assert json_text(v) == json.dumps(v, ensure_ascii=False, default=_as_text)


@given(st.lists(st.integers() | st.booleans(), max_size=4)
       | st.lists(st.floats(allow_nan=False) | st.text(), max_size=3) | st.just((1, 2))
       | st.just({"a": [dt.date(2020, 1, 1), decimal.Decimal("1.5")]}))
def test_a_lists_cell_text_is_json_dumps(v):
    assert cell_text(v) == json.dumps(v, default=str)


_TYPED = {  # an Arrow type and the values hypothesis draws for it
    "i": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "u": (pa.uint8(), st.integers(0, 255)),
    "b": (pa.bool_(), st.booleans()),
    "t": (pa.string(), st.text(max_size=6) | st.text(st.sampled_from('a"\\\n\x01\x7fé'), max_size=3)),
    "d": (pa.date32(), st.dates()),
    "m": (pa.decimal128(9, 2), st.decimals(min_value=-9999999, max_value=9999999, places=2)),
    "z": (pa.decimal128(5, 0), st.decimals(min_value=-99999, max_value=99999, places=0)),
    "e": (pa.decimal128(12, 8), st.decimals(min_value=-999, max_value=999, places=8)
          | st.sampled_from([decimal.Decimal("0E-8"), decimal.Decimal("-1E-8"), decimal.Decimal("1.5E-7")])),
    "f": (pa.float64(), st.floats()),
    "ts": (pa.timestamp("us"), st.datetimes()),
    "s": (pa.struct([("a", pa.int32()), ("b", pa.string())]),
          st.fixed_dictionaries({"a": st.none() | st.integers(-5, 5), "b": st.none() | st.text(max_size=3)})),
    "l": (pa.list_(pa.int64()), st.lists(st.none() | st.integers(-5, 5), max_size=3)),
}
_PATHS = [*_TYPED, "s.a", "s.b", "s.c", "l.[1]", "l.[pos]", "i.x", "nothing", ""]


@st.composite
def _records(draw):
    n = draw(st.integers(0, 6))
    columns = {name: pa.array([draw(st.none() | values) for _ in range(n)], kind)
               for name, (kind, values) in _TYPED.items()}
    return pa.table(columns)


@settings(max_examples=examples(70, 200), deadline=None)
@given(_records())
def test_a_columns_json_texts_are_each_values_json_text(rows):
    """Each path's values over a file's records, written column-wise (Arrow where its text is
    Python's), equal json_text of each record's value at the path."""
    for path in _PATHS:
        want = [json_text(value_at(r, path.split(".") if path else [])) for r in rows.to_pylist()]
        assert json_column(rows, path).to_pylist() == want, path


def test_the_trace_tables_columns_are_iqls_trace_columns():
    """IQL's TRACE scan takes the Arrow table's columns by position under its own names."""
    arrow = {"STRING": pa.string(), "INT": pa.int64(), "INT_ARRAY": pa.list_(pa.int32())}
    def plain(t):
        return t.value_type if pa.types.is_dictionary(t) else t

    assert [(f.name, plain(f.type)) for f in TRACE_SCHEMA] == [(n, arrow[t.name]) for n, t in TRACE_COLUMNS]


_NODES = st.lists(st.builds(TracedNode, st.sampled_from(["i", "t", "s", "s.a", "l", "l.[pos]", "f"]), st.booleans(),
                            st.tuples(st.integers(1, 9)), st.tuples() | st.tuples(st.integers(1, 9))),
                  min_size=1, max_size=4, unique_by=lambda n: n.path).map(tuple)


@st.composite
def _traced(draw):
    """Traced items (some sharing one tree, as a group's members do) and where each lives: in one
    of two files' records read column-wise, as a Python record, changed since the run, or not
    located at all."""
    files = [draw(_records()) for _ in range(2)]
    trees = draw(st.lists(_NODES, min_size=1, max_size=3))
    items, places = [], {}
    for n, item_id in enumerate(draw(st.lists(st.integers(-5, 50), max_size=12, unique=True))):
        item = TracedItem(draw(st.sampled_from(["a", "b"])), item_id, draw(st.sampled_from(trees)))
        items.append(item)
        where = draw(st.sampled_from(["file", "python", "changed", "none"]))
        rows = draw(st.sampled_from(files))
        if where == "file" and rows.num_rows:
            places[item.dataset, item_id] = Place(f"f#{n}", None, True, rows, draw(st.integers(0, rows.num_rows - 1)))
        elif where == "python":
            places[item.dataset, item_id] = Place(f"p:{n}", draw(st.none() | st.fixed_dictionaries(
                {"i": st.integers(), "s": st.fixed_dictionaries({"a": st.text(max_size=3)})})), True)
        elif where == "changed":
            places[item.dataset, item_id] = Place("changed since the run")
    return tuple(items), places


@settings(max_examples=examples(50, 150), deadline=None)
@given(_traced(), st.booleans(), st.booleans())
def test_the_trace_table_is_each_items_nodes_with_its_source_and_values(case, where, values):
    """The column-wise table equals TRACE's rows made item by item and node by node."""
    items, places = case
    want = []
    for i in items:
        p = places.get((i.dataset, i.item_id))
        for n in i.nodes:
            want.append((i.dataset, item_element_id(i.dataset, i.item_id), i.item_id, n.path, n.role,
                         list(n.accessed), list(n.manipulated), p.source if p is not None and where else None,
                         p.value(n.path) if p is not None and values else None))
    got = table_of(items, located(places), where, values)
    assert got.schema == TRACE_SCHEMA
    assert list(zip(*(c.to_pylist() for c in got.columns), strict=True)) == want


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=3), groups=st.integers(1, 15),
       picks=st.data(), changed=st.booleans(), values=st.booleans())
def test_parquet_items_are_found_column_wise_as_row_by_row(tmp_path_factory, sizes, groups, picks, changed, values):
    """The driver's Parquet reader (one Arrow array per dataset, no object per item) finds each
    wanted item where a row-by-row walk over the files finds it: its ``file#row`` source and its
    record, in any row group; ids in no file, and every item of a file changed since the run, get
    the input's reason instead."""
    import os

    import numpy as np
    import pyarrow.parquet as pq

    from capture.locator import Locator
    from capture.tracing.duckdb.locate import _seed, read_input
    from capture.tracing.places import NO_RECORD, PYTHON_RECORD, gone, spark_file_path
    from store.index.xxh import hash_longs

    folder = tmp_path_factory.mktemp("pq")
    files, expected = [], {}
    for f, n in enumerate(sizes):
        local = str(folder / f"part-{f}.parquet")
        pq.write_table(pa.table({"a": list(range(n)), "s": [{"x": f"v{f}-{i}"} for i in range(n)]},
                                schema=pa.schema([("a", pa.int64()), ("s", pa.struct([("x", pa.string())]))])),
                       local, row_group_size=groups)
        st_ = os.stat(local)
        files.append((f"file:{local}", st_.st_size, st_.st_mtime_ns // 1_000_000))
        ids = hash_longs(np.arange(n, dtype=np.int64), _seed("ds", spark_file_path(f"file:{local}")))
        for row, item in enumerate(ids.tolist()):
            expected.setdefault(item, (local, row, f))
    spoilt = picks.draw(st.sampled_from(range(len(sizes)))) if changed else None
    if spoilt is not None:  # a file rewritten since the run: its length differs
        pq.write_table(pa.table({"a": [1]}), str(folder / f"part-{spoilt}.parquet"))
    known = sorted(expected)
    want = picks.draw(st.lists(st.sampled_from(known), unique=True) if known else st.just([]))
    strangers = picks.draw(st.lists(st.integers(-(1 << 63), (1 << 63) - 1).filter(lambda i: i not in expected),
                                    max_size=3, unique=True))
    loc = Locator(ids="row_index", format="parquet", files=tuple(files), paths=(f"file:{folder}",))
    got = read_input("ds", loc, np.asarray(want + strangers, np.int64), values)
    assert sorted(got.ids.tolist()) == sorted(want + strangers)
    changed_files = [str(folder / f"part-{spoilt}.parquet")] if spoilt is not None else []
    for i, item in enumerate(got.ids.tolist()):
        local, row, f = expected.get(item, (None, None, None))
        if local is None or f == spoilt:
            assert got.source[i].as_py() == gone(loc, changed_files)
            assert got.table[i] == NO_RECORD
            continue
        assert got.source[i].as_py() == f"{local}#{row}"
        if not values:
            assert got.table[i] == NO_RECORD
            continue
        assert got.table[i] not in (NO_RECORD, PYTHON_RECORD)
        record = got.tables[got.table[i]].slice(got.row[i], 1).to_pylist()[0]
        assert record == {"a": row, "s": {"x": f"v{f}-{row}"}}


def _typed_table(n: int):
    """``n`` rows of the column types Spark and pyarrow write (nulls every few rows)."""
    def cell(i, v):
        return None if i % 5 == 3 else v

    cols = {
        "i8": pa.array([cell(i, i % 100) for i in range(n)], pa.int8()),
        "u32": pa.array([cell(i, i * 7) for i in range(n)], pa.uint32()),
        "f": pa.array([cell(i, i / 3) for i in range(n)], pa.float64()),
        "dec": pa.array([cell(i, decimal.Decimal(i) / 100) for i in range(n)], pa.decimal128(12, 2)),
        "d": pa.array([cell(i, dt.date(2020, 1, 1) + dt.timedelta(days=i)) for i in range(n)], pa.date32()),
        "ts_ns": pa.array([cell(i, 1_700_000_000_000_000_123 + i) for i in range(n)], pa.timestamp("ns")),
        "ts_utc": pa.array([cell(i, 1_700_000_000_000 + i) for i in range(n)], pa.timestamp("ms", "UTC")),
        "s": pa.array([cell(i, f"ü{i}" * (i % 4)) for i in range(n)], pa.string()),
        "b": pa.array([cell(i, bytes([i % 256]) * 3) for i in range(n)], pa.binary()),
        "l": pa.array([cell(i, list(range(i % 3))) for i in range(n)], pa.list_(pa.int64())),
        "m": pa.array([cell(i, [("k", i)]) for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "st": pa.array([cell(i, {"x": i, "y": [str(i)]}) for i in range(n)],
                       pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])),
    }
    schema = pa.schema([pa.field("req", pa.int64(), nullable=False), *[pa.field(k, v.type) for k, v in cols.items()]])
    return pa.table({"req": pa.array(range(n), pa.int64()), **cols}, schema=schema)


@settings(max_examples=examples(15, 60), deadline=None)
@given(n=st.integers(1, 300), groups=st.integers(1, 64), picks=st.data())
def test_rows_read_back_with_duckdb_equal_pyarrows_with_the_files_types(tmp_path_factory, n, groups, picks):
    """A trace reads a Parquet input's traced rows with DuckDB (capture/tracing/duckdb/locate.py
    ``_rows_of``): the same rows, in the order asked, with the schema pyarrow reads the file
    with (nullability, timestamp units and zones, unsigned ints, decimals, maps, structs) as the
    row groups read with pyarrow and cut down give them."""
    import numpy as np
    import pyarrow.parquet as pq

    from capture.tracing.duckdb.locate import _rows_of

    local = str(tmp_path_factory.mktemp("typed") / "part-0.parquet")
    table = _typed_table(n)
    pq.write_table(table, local, row_group_size=groups)
    hit = np.asarray(sorted(picks.draw(st.sets(st.integers(0, n - 1), min_size=1))), np.int64)
    pf = pq.ParquetFile(local)
    got = _rows_of(local, pf, hit)
    want = pf.read().take(pa.array(hit))
    assert got is not None
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("name, own", [("part-0.parquet", "file_row_number"), ("part-[0].parquet", "n")])
def test_a_file_duckdb_would_misread_is_read_with_pyarrow(tmp_path, name, own):
    """An input file that has a column of the name DuckDB gives its row numbers, or whose path
    DuckDB would take for a pattern of names (here matching another file of the same columns), is
    read back with pyarrow: its own rows, its own columns."""
    import os

    import numpy as np
    import pyarrow.parquet as pq

    from capture.locator import Locator
    from capture.tracing.duckdb.locate import _rows_of, _seed, read_input
    from capture.tracing.places import spark_file_path
    from store.index.xxh import hash_longs

    local = str(tmp_path / name)
    pq.write_table(pa.table({"req": range(50), own: range(50)}), local, row_group_size=7)
    if name != "part-0.parquet":  # the file DuckDB would read for this path
        pq.write_table(pa.table({"req": range(100, 150), own: range(50)}), str(tmp_path / "part-0.parquet"))
    assert _rows_of(local, pq.ParquetFile(local), np.array([3], np.int64)) is None
    st_ = os.stat(local)
    file = (f"file:{local}", st_.st_size, st_.st_mtime_ns // 1_000_000)
    loc = Locator(ids="row_index", format="parquet", files=(file,), paths=(f"file:{tmp_path}",))
    ids = hash_longs(np.arange(50, dtype=np.int64), _seed("ds", spark_file_path(f"file:{local}")))
    got = read_input("ds", loc, ids[[41, 5]], True)
    records = {int(i): got.tables[t].slice(r, 1).to_pylist()[0]
               for i, t, r in zip(got.ids, got.table, got.row, strict=True)}
    assert records == {int(ids[41]): {"req": 41, own: 41}, int(ids[5]): {"req": 5, own: 5}}


_TEXT = st.one_of(st.none(), st.text(alphabet=st.sampled_from(list('ab ,"\n\r\tü')), max_size=6))


@settings(max_examples=examples(60, 400), deadline=None)
@given(st.lists(st.tuples(_TEXT, st.one_of(st.none(), st.integers(-(1 << 63), (1 << 63) - 1)),
                          st.one_of(st.none(), st.lists(st.integers(-9, 99), max_size=3)),
                          st.one_of(st.none(), st.booleans()), _TEXT), max_size=12),
       st.sets(st.integers(0, 4), min_size=1))
def test_csv_written_column_wise_is_the_csv_modules(rows, keep):
    """`strata trace --format csv` writes the TRACE table column-wise with Arrow
    (``iql.result.format_csv_columns``): the same text as the csv module writes of the rows
    (``format_csv``), for every column type TRACE has (dictionary-coded and plain text with
    commas, quotes, newlines and nulls; 64-bit integers; lists of operator ids; booleans), any
    subset of the columns (one alone: an empty field written ""), no rows."""
    from iql.result import format_csv, format_csv_columns

    types = [pa.dictionary(pa.int32(), pa.string()), pa.int64(), pa.list_(pa.int32()), pa.bool_(), pa.string()]
    names = [f"c{i}" for i in sorted(keep)]
    table = pa.table([pa.array([r[i] for r in rows], pa.string()).dictionary_encode() if i == 0
                      else pa.array([r[i] for r in rows], types[i]) for i in sorted(keep)], names=names)
    assert format_csv_columns(table) == format_csv(names, [tuple(r[i] for i in sorted(keep)) for r in rows])


def test_csv_column_wise_leaves_other_types_to_the_rows():
    """A column of another type (a double, a list with a null) is not written column-wise."""
    from iql.result import format_csv_columns

    assert format_csv_columns(pa.table({"x": [1.5]})) is None
    assert format_csv_columns(pa.table({"x": pa.array([[1, None]], pa.list_(pa.int32()))})) is None
