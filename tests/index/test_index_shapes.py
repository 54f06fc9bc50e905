"""The in-process index build on shapes other than the CSProv trace, with no Spark: a store whose
values have no table (every value is its own table in the workflow graph) must index in time that
grows near-linearly with its triples, not quadratically in its tables."""

from __future__ import annotations

import random
import time

from hypothesis import given, settings
from hypothesis import strategies as st
from support.lineage_reference import union_find

from store.index import IndexParams
from store.index.splits import PLAN_META_TABLES, plan_meta, plan_splits, split_levels, split_rows
from store.indexing import build_index
from store.store import Store

TABLES = [f"t{i}" for i in range(12)]


@settings(max_examples=60, deadline=None)
@given(edges=st.lists(st.tuples(st.sampled_from(TABLES), st.sampled_from(TABLES)), max_size=30),
       bands=st.integers(1, 4))
def test_split_levels_say_what_split_rows_say(edges, bands):
    splits = plan_splits(TABLES, edges, bands=bands)
    depth, levels = split_levels(splits)
    want = {(r.table, r.level): (r.split, r.leaf) for r in split_rows(splits)}
    got = {}
    for s, lv in levels:
        for t in s.tables:
            for deeper in range(lv, depth + 1) if s.leaf else (lv,):
                got[(t, deeper)] = (s.name, s.leaf)
    assert got == want


def test_a_plan_of_many_tables_is_summarised_in_the_meta():
    tables = [f"v{i}" for i in range(PLAN_META_TABLES + 1)]
    splits = plan_splits(tables, list(zip(tables, tables[1:], strict=False)))
    meta = plan_meta(splits, [])
    assert "splits" not in meta and meta["plan_tables"] == len(tables)
    assert "splits" in plan_meta(plan_splits(TABLES, []), [])


def test_a_random_50k_triple_store_without_tables_indexes_in_seconds(tmp_path):
    """1.27 values per triple, no table columns: 50,000 tables in the workflow graph. The split
    planner was quadratic in them (over 200 s here); now about 3 s of CPU."""
    rng = random.Random(7)
    n = 50_000
    values = int(n * 1.27)
    edges = [(f"v{rng.randrange(values)}", f"v{rng.randrange(values)}", f"op{rng.randrange(20)}") for _ in range(n)]
    csv = tmp_path / "random.csv"
    csv.write_text("src,dst,op\n" + "".join(f"{a},{b},{o}\n" for a, b, o in edges))
    st_ = Store.open(str(tmp_path / "store"), engine="local")
    st_.ingest(str(csv))
    t0 = time.process_time()  # CPU seconds (every thread's): a busy machine does not stretch them
    meta = build_index(st_, IndexParams())
    cpu = time.process_time() - t0
    assert cpu < 30, f"index build took {cpu:.1f} s of CPU"
    want = union_find((), [(a, b) for a, b, _o in edges])
    assert meta["components"] == len(set(want.values()))
    assert meta["sets"] > meta["components"]  # the giant component was split into sets
    nodes = st_.local().relation("index_nodes").project("id, ccid").fetchall()
    assert dict(nodes) == want
