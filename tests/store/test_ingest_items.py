"""Items and edges staged column-wise with a small bundle (`StoreTransaction.ingest_items`,
store/duckdb/ingest.py `item_rows`: capture's model of a run on the driver) give the rows the
record-by-record ingest of the same bundles gives, in every core table, one segment a table; and
where a set-wise check fails, nothing is staged and the caller's bundle ingest names the problem."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

from store import BundleError, Store
from store import schema as S

GSETS = {"data": {"contains": [["Item", "Dataset"], ["Dataset", "Area"]]},
         "process": {"contains": [["Operator", "Run"]]}}


def _no_spark():
    raise AssertionError("this test starts no Spark")


def _bundle(elements, edges=()):
    return {"format": "strata-bundle/1", "gsets": GSETS, "types": [], "elements": list(elements),
            "vertices": [], "edges": list(edges)}


def _rows(st: Store) -> dict:
    local = st.local()
    out = {}
    for name in S.CORE_TABLES:
        rel = local.relation(name)
        rows = [] if rel is None else rel.fetchall()
        out[name] = sorted(rows, key=repr)
    return out


@st.composite
def batches(draw):
    """A first commit (an area, some datasets, items of them) and a second one: new datasets and
    operators as a bundle, then items (some already committed) and distinct edges among them."""
    n_old, n_new = draw(st.integers(1, 3)), draw(st.integers(0, 3))
    old_ds = [f"ds{i}" for i in range(n_old)]
    new_ds = [f"nds{i}" for i in range(n_new)]
    old_items = {f"{d}#{k}": d for d in old_ds for k in range(draw(st.integers(0, 3)))}
    pool = {**old_items, **{f"{d}#{k}": d for d in old_ds + new_ds for k in range(3, 3 + draw(st.integers(0, 4)))}}
    items = draw(st.lists(st.sampled_from(sorted(pool)), unique=True)) if pool else []
    ops = [f"run/op{k}" for k in range(draw(st.integers(1, 3)))]
    edges = draw(st.lists(st.tuples(st.sampled_from(items), st.sampled_from(ops), st.sampled_from(items)),
                          unique=True, max_size=20)) if items else []
    return old_ds, new_ds, old_items, {i: pool[i] for i in items}, ops, edges


def _first(st_: Store, old_ds, old_items):
    st_.ingest(_bundle(
        [{"id": "area", "granularity": "Area"}]
        + [{"id": d, "granularity": "Dataset", "parents": ["area"]} for d in old_ds]
        + [{"id": i, "granularity": "Item", "parents": [d]} for i, d in old_items.items()]))


def _second_bundle(new_ds, ops):
    return _bundle([{"id": "run", "granularity": "Run"}]
                   + [{"id": o, "granularity": "Operator", "parents": ["run"]} for o in ops]
                   + [{"id": d, "granularity": "Dataset", "parents": ["area"]} for d in new_ds])


def _parts(table: pa.Table, n: int) -> list[pa.Table]:
    size = -(-table.num_rows // n) if table.num_rows else 1
    return [table.slice(i, size) for i in range(0, table.num_rows, size)] or [table]


@settings(max_examples=examples(12, 30), deadline=None, suppress_health_check=list(HealthCheck))
@given(batches(), st.integers(1, 3))
def test_column_wise_items_equal_the_bundle_ingest(tmp_path_factory, batch, parts):
    """In one call, or as a large run is staged (capture/storing/to_model.py `driver_parts`): the
    items in ``parts`` calls, then the edges in as many, in one transaction; the calls after the
    first take what earlier ones checked from the transaction's record (`CheckedItems`)."""
    old_ds, new_ds, old_items, items, ops, edges = batch
    base = tmp_path_factory.mktemp("items")
    columnar, records = (Store.open(str(base / n), spark=_no_spark, engine="local") for n in ("c", "r"))
    for s in (columnar, records):
        _first(s, old_ds, old_items)
    item_table = pa.table({"id": pa.array(list(items), pa.string()),
                           "parent": pa.array(list(items.values()), pa.string())})
    edge_table = pa.table({c: pa.array([e[k] for e in edges], pa.string())
                           for k, c in enumerate(("src", "process", "dst"))})
    second = _second_bundle(new_ds, ops)
    with columnar.transaction("columnar") as tx:
        if parts == 1:
            calls = [(second, item_table, edge_table)]
        else:
            calls = [(second if n == 0 else _bundle([]), part, edge_table.slice(0, 0))
                     for n, part in enumerate(_parts(item_table, parts))]
            calls += [(_bundle([]), item_table.slice(0, 0), part) for part in _parts(edge_table, parts)]
        counts = [tx.ingest_items(b, i, e, "Item") for b, i, e in calls]
    assert None not in counts
    new = [(i, d) for i, d in items.items() if i not in old_items]
    assert (sum(c.elements for c in counts), sum(c.edges for c in counts)) == (len(second["elements"]) + len(new),
                                                                               len(edges))
    assert all(len(e.segments) == 1 + len(calls) for e in columnar.refresh().manifest.tables.values())
    with records.transaction("records") as tx:
        tx.ingest(_second_bundle(new_ds, ops))
        tx.ingest(_bundle([{"id": i, "granularity": "Item", "parents": [d]} for i, d in new],
                          [{"src": a, "process": p, "dst": b} for a, p, b in edges]))
    assert _rows(columnar.refresh()) == _rows(records.refresh())


@pytest.mark.parametrize("case", ["unknown process", "edge end not an item", "parent not coarser", "not data"])
def test_a_failed_check_stages_nothing_and_the_bundle_names_the_problem(tmp_path, case):
    st_ = Store.open(str(tmp_path / "s"), spark=_no_spark, engine="local")
    _first(st_, ["ds0"], {})
    items = {"ds0#1": "ds0", "ds0#2": "ds0"}
    edges = [("ds0#1", "run/op0", "ds0#2")]
    granularity = "Item"
    if case == "unknown process":
        edges = [("ds0#1", "run/op9", "ds0#2")]
    elif case == "edge end not an item":
        edges = [("ds0#1", "run/op0", "ds0#3")]
    elif case == "parent not coarser":
        items = {"ds0#1": "run", "ds0#2": "ds0"}
    else:
        granularity = "Operator"
    item_table = pa.table({"id": list(items), "parent": list(items.values())})
    edge_table = pa.table({c: [e[k] for e in edges] for k, c in enumerate(("src", "process", "dst"))})
    before = _rows(st_)
    with pytest.raises(BundleError):
        with st_.transaction("bad") as tx:
            assert tx.ingest_items(_second_bundle([], ["run/op0"]), item_table, edge_table, granularity) is None
            assert tx.counts.elements == 0  # nothing staged
            tx.ingest(_second_bundle([], ["run/op0"]))
            tx.ingest(_bundle([{"id": i, "granularity": granularity, "parents": [d]} for i, d in items.items()],
                              [{"src": a, "process": p, "dst": b} for a, p, b in edges]))
    assert _rows(st_.refresh()) == before



def _watch_lookups(monkeypatch, seen: list) -> None:
    """Note in ``seen`` (table, sorted ids) for each look in the store's tables for at least one
    id (`TxTables.matching`, under `counts` and `lookup` too)."""
    from store.duckdb.ingest import TxTables

    real = TxTables.matching

    def matching(self, table, ids, *args):
        if not isinstance(ids, (pa.Array, pa.ChunkedArray)):
            ids = list(ids)
        keys = ids.to_pylist() if isinstance(ids, (pa.Array, pa.ChunkedArray)) else ids
        if keys:
            seen.append((table, sorted(keys)))
        return real(self, table, ids, *args)

    monkeypatch.setattr(TxTables, "matching", matching)


@pytest.mark.parametrize("case", ["an end no call staged", "an end that is a process", "an end's segment dropped"])
def test_later_calls_of_a_transaction_check_what_earlier_ones_did_not(tmp_path, monkeypatch, case):
    """A large run's edges come after its items, in calls of their own: their ends are not looked
    up in the store again (the transaction's record of the items staged, `CheckedItems`) — but an
    end no earlier call staged still is, and so is every end once a segment of the vertices is
    dropped: such an edge part fails its check."""
    st_ = Store.open(str(tmp_path / "s"), spark=_no_spark, engine="local")
    _first(st_, ["ds0"], {"ds0#0": "ds0"})
    items = pa.table({"id": ["ds0#0", "ds0#1", "ds0#2"], "parent": ["ds0"] * 3})
    no_items, no_edges = items.slice(0, 0), pa.table({c: pa.array([], pa.string()) for c in ("src", "process", "dst")})
    bad = {"an end no call staged": "ds0#9", "an end that is a process": "run/op0"}.get(case, "ds0#2")
    edges = pa.table({"src": ["ds0#0", "ds0#1"], "process": ["run/op0"] * 2, "dst": ["ds0#1", bad]})
    before = _rows(st_)
    looked_up: list = []
    with pytest.raises(BundleError):
        with st_.transaction("parts") as tx:
            assert tx.ingest_items(_second_bundle([], ["run/op0"]), items.slice(0, 2), no_edges, "Item") is not None
            assert tx.ingest_items(_bundle([]), items.slice(2), no_edges, "Item") is not None
            if case == "an end's segment dropped":
                tx.drop_segments(S.VERTICES, tx.segments(S.VERTICES)[-1:])
            _watch_lookups(monkeypatch, looked_up)
            assert tx.ingest_items(_bundle([]), no_items, edges, "Item") is None  # nothing staged
            assert [ids for table, ids in looked_up if table == S.VERTICES] == (
                [["ds0#0", "ds0#1", "ds0#2"]] if case == "an end's segment dropped" else [[bad]])
            tx.ingest(_bundle([], [{"src": a, "process": p, "dst": b} for a, p, b in zip(*edges.columns, strict=True)]))
    assert _rows(st_.refresh()) == before


def test_edges_after_their_items_look_none_of_their_ends_up(tmp_path, monkeypatch):
    """The good case of the test above: the edge call looks up no end, nor its process."""
    st_ = Store.open(str(tmp_path / "s"), spark=_no_spark, engine="local")
    _first(st_, ["ds0"], {"ds0#0": "ds0"})
    items = pa.table({"id": ["ds0#0", "ds0#1", "ds0#2"], "parent": ["ds0"] * 3})
    no_edges = pa.table({c: pa.array([], pa.string()) for c in ("src", "process", "dst")})
    edges = pa.table({"src": ["ds0#0", "ds0#1"], "process": ["run/op0"] * 2, "dst": ["ds0#1", "ds0#2"]})
    looked_up: list = []
    with st_.transaction("parts") as tx:
        assert tx.ingest_items(_second_bundle([], ["run/op0"]), items, no_edges, "Item") is not None
        _watch_lookups(monkeypatch, looked_up)
        assert tx.ingest_items(_bundle([]), items.slice(0, 0), edges, "Item").edges == 2
    assert looked_up == []
    assert len(st_.refresh().local().relation(S.EDGES).fetchall()) == 2
