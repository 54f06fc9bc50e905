"""Driver-side search (`reach`: the RQ step CC and CS run on collected triples) against the reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.lineage_reference import TABLE4, reference_lineage

from store.errors import UserError
from store.lineage import Direction, Lineage, Method, reach, reach_table

graphs = st.lists(
    st.tuples(st.integers(0, 9).map(str), st.integers(0, 9).map(str), st.sampled_from(["a", "b"])),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(graphs, st.integers(0, 9).map(str), st.one_of(st.none(), st.integers(0, 4)), st.booleans())
def test_reach_matches_reference_on_random_graphs_with_cycles(triples, item, depth, forward):
    assert reach(triples, item, depth, forward) == reference_lineage(triples, item, depth, forward)


@settings(max_examples=150, deadline=None)
@given(graphs, st.integers(0, 9).map(str), st.one_of(st.none(), st.integers(0, 4)), st.booleans())
def test_arrow_reach_matches_reference(triples, item, depth, forward):
    """The vectorized search CC/CS run on a local store's pyarrow scope gives the same answer."""
    import pyarrow as pa

    table = pa.table({c: pa.array([t[i] for t in triples], pa.string()) for i, c in enumerate(("src", "dst", "op"))})
    assert reach_table(table, item, depth, forward) == reference_lineage(triples, item, depth, forward)


@pytest.mark.parametrize(
    ("item", "depth", "forward", "nodes", "n_edges"),
    [
        ("23", None, False, {"15", "18", "3", "6"}, 4),
        ("23", 1, False, {"15", "18"}, 2),
        ("22", None, False, {"14", "17", "2", "5"}, 4),
        ("2", None, True, {"14", "22"}, 2),
        ("10", None, False, set(), 0),  # Mary (age 20) was filtered out by R1
        ("25", None, False, {"21", "9"}, 2),
    ],
    ids=["age-T8", "age-T8-depth1", "city-T8", "forward-NY", "filtered-out", "LA-age"],
)
def test_paper_table4_lineage(item, depth, forward, nodes, n_edges):
    found, edges = reach(TABLE4, item, depth, forward)
    assert found == nodes
    assert len(edges) == n_edges
    if item == "23" and depth is None:
        assert ("15", "23", "R2") in edges and ("3", "15", "R1") in edges


def test_cycle_terminates_and_includes_item():
    found, edges = reach([("a", "b", "x"), ("b", "a", "x"), ("c", "a", "y")], "a")
    assert found == {"a", "b", "c"}
    assert len(edges) == 3


def test_negative_depth_is_a_user_error():
    with pytest.raises(UserError, match="depth"):
        reach(TABLE4, "23", -1)


def test_json_shape_follows_cli_spec():
    out = Lineage("23", Direction.BACKWARD, ("15",), (("15", "23", "R2"),), Method.CS, 12).to_json()
    assert out == {"item": "23", "direction": "backward", "ancestors": ["15"],
                   "edges": [{"src": "15", "dst": "23", "op": "R2"}], "method": "cs",
                   "triples_read": 12}
    fwd = Lineage("15", Direction.FORWARD, ("23",), (), Method.RQ, 1).to_json()
    assert "descendants" in fwd and "ancestors" not in fwd
