"""What a trace prints per node, checked against plain references (no Spark): the backtrace's
shared work (one step back per tree shape, positions only where the operator's paths use them)
against stepping back every association on its own, and the JSON text of values and operator
lists against ``json.dumps``."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from capture.operators import Manipulation as M
from capture.operators import OperatorProv, OpInput, OpType
from capture.tracing.backtrace import backtrace
from capture.tracing.places import json_text
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
    op = OperatorProv(2, kind, "op", (OpInput(1, tuple(draw(st.lists(PATHS, max_size=2)))),),
                      tuple(M(0, s, d) for s, d in pairs))
    outs = draw(st.lists(st.integers(100, 103), min_size=1, max_size=3, unique=True))
    rows = [(o, 0, draw(st.integers(1, 30)), draw(st.integers(1, 4))) for o in outs
            for _ in range(draw(st.integers(1, 12)))]
    positions = st.sampled_from(["[1]", "[2]", "[pos]"])
    matched = {o: [d.replace("[pos]", draw(positions)) for d in draw(st.lists(st.sampled_from([d for _, d in pairs]),
                                                                              min_size=1, max_size=2))]
               for o in outs}
    return [OperatorProv(1, OpType.SOURCE, "read", (), (), dataset="d"), op], matched, rows


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_shared_steps_back_equal_stepping_back_every_association(case):
    ops, matched, rows = case
    got = backtrace(ops, 2, matched, lambda oid, ids: [r for r in rows if r[0] in ids])
    assert {(i.dataset, i.item_id): {n.path: (n.contributing, n.accessed, n.manipulated) for n in i.nodes}
            for i in got.items} == _reference(ops, 2, matched, rows)


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
