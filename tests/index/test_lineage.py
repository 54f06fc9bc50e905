"""RQ = CC = CS = the reference on random graphs, on both engines; the paper's Tables 4-8 as fixed
cases. The store holds the triples and the index of lineage_reference.shared_index; each test
runs with `--engine local` (DuckDB and pyarrow, no JVM) and `--engine spark`."""

from __future__ import annotations

import random

import pytest
from support.depth import DEEP, SKIP_REASON
from support.lineage_reference import TABLE6, THETA, reference_lineage, shared_index, shared_store

from store.engine import Engine
from store.errors import UserError
from store.lineage import Method, component_members, lineage
from store.spark.frames import local_frame
from store.spark.lineage import IndexView, view_lineage
from store.store import Store

ENGINES = ("local", "spark")


@pytest.fixture(scope="module")
def root(spark, tmp_path_factory):
    return shared_store(spark, tmp_path_factory.mktemp("lineage"))


@pytest.fixture(params=ENGINES)
def store(request, spark, root):
    return Store.open(root, spark=spark, engine=request.param)


@pytest.fixture(scope="module")
def frames(spark):
    return shared_index(spark)


def _random_values(triples) -> list[str]:
    """The values of the random graphs that take part in a triple (the store knows no others)."""
    return sorted({v for s, d, _ in triples for v in (s, d) if v.startswith("g")})


def test_table6_sets_and_set_dependencies(frames):
    _, _, frames, _ = frames
    rows = {r["id"]: (r["ccid"], r["csid"]) for r in frames.nodes.where("id rlike '^[0-9]+$'").collect()}
    assert {v for v, _ in rows.values()} == {"1"}  # one component
    sets = {}
    for v, (_, cs) in rows.items():
        sets.setdefault(cs, set()).add(v)
    assert sorted(map(sorted, sets.values())) == sorted(
        [["1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"], ["10", "11", "12"]])
    deps = {(r["src_csid"], r["dst_csid"]) for r in frames.setdeps.where("ccid = '1'").collect()}
    assert deps == {("1", "4"), ("4", "7"), ("4", "10")}  # Table 8: S1->S2, S2->S3, S2->S4


def test_sets_respect_theta_where_the_split_allows(frames):
    _, _, frames, _ = frames
    leaves = {s.name for top in frames.splits for s in top.walk() if s.leaf}
    rows = frames.sets.collect()
    for r in rows:
        if r["level"] == 0:  # an unsplit component
            assert r["csid"] == r["ccid"] and r["n_nodes"] < THETA
        else:
            assert r["n_nodes"] < THETA or r["split"] in leaves, r
    assert any(r["level"] > 0 for r in rows)


def test_table6_cs_reads_only_the_set_lineage(store):
    cs = lineage(store, "8", method=Method.CS)
    cc = lineage(store, "8", method=Method.CC)
    assert set(cs.nodes) == {"1", "2", "3", "4", "5", "7"} == set(cc.nodes)
    assert cs.edges == cc.edges
    assert (cc.triples_read, cs.triples_read) == (len(TABLE6), 9)  # 3 triples of S4 skipped
    assert cs.engine.engine is cc.engine.engine is Engine(store.engine.value)


def test_table4_components_prune_to_four_triples(store):
    out = lineage(store, "p23", method=Method.CC)
    assert set(out.nodes) == {"p15", "p18", "p3", "p6"}
    assert ("p15", "p23", "R2") in out.edges and len(out.edges) == 4
    assert out.triples_read == 4  # Table 4: component 6 holds 4 triples


def test_rq_cc_cs_agree_with_the_reference_on_random_graphs(store, frames):
    if store.engine.value == "spark" and not DEEP:
        # make test: the local engine here, and test_both_engines_give_the_same_lineage (Spark = local)
        pytest.skip(SKIP_REASON)
    triples = frames[0]
    rng = random.Random(3)
    items = rng.sample(_random_values(triples), 5)
    for item in items:
        depth = rng.choice([None, None, 1, 2])
        forward = rng.random() < 0.5
        want = reference_lineage(triples, item, depth, forward)
        for method in (Method.RQ, Method.CC, Method.CS):
            got = lineage(store, item, depth, forward, method)
            assert (set(got.nodes), set(got.edges)) == want, (item, depth, forward, method)
            assert got.engine.engine is Engine(store.engine.value)


def test_row_group_reads_of_a_large_component_give_the_same_lineage(root, frames, monkeypatch):
    """The local engine's row-group reads for large components (store/duckdb/index_reads.py
    `read_sorted`, taken above `_SORTED_READ_ROWS` rows), forced here on the small graph: the
    same answers and triples read as reading each component at once."""
    import store.duckdb.index_reads as loc

    triples = frames[0]
    st_ = Store.open(root, engine="local")
    rng = random.Random(5)
    items = ["8", "p23", *rng.sample(_random_values(triples), 6)]
    plain = [lineage(st_, item, None, n % 2 == 1, Method.CS) for n, item in enumerate(items)]
    monkeypatch.setattr(loc, "_SORTED_READ_ROWS", 0)
    loc.CACHE.clear()
    for n, (item, want) in enumerate(zip(items, plain, strict=True)):
        got = lineage(st_, item, None, n % 2 == 1, Method.CS)
        assert (set(got.nodes), set(got.edges), got.triples_read) == (set(want.nodes), set(want.edges),
                                                                       want.triples_read), item
        assert (set(got.nodes), set(got.edges)) == reference_lineage(triples, item, None, n % 2 == 1)


def test_above_tau_the_scope_is_searched_by_the_engine_with_the_same_answer(store, frames):
    """τ = 1: the 9-triple set-lineage runs RQ restricted to those triples (Spark, or DuckDB)."""
    triples = frames[0]
    small = lineage(store, "8", method=Method.CS, tau=1)
    assert set(small.nodes) == reference_lineage(triples, "8")[0]
    assert small.triples_read == 9
    assert small == lineage(store, "8", method=Method.CS)


def test_both_engines_give_the_same_lineage(spark, root, frames):
    """Nodes, edges, method, triples_read and warnings, item by item (`engine` is not compared)."""
    local, on_spark = (Store.open(root, spark=spark, engine=e) for e in ENGINES)
    rng = random.Random(8)
    items = ["8", "4", "p23", "Ta", *rng.sample(_random_values(frames[0]), 3)]
    for n, item in enumerate(items):
        for method in Method:
            forward = (n + list(Method).index(method)) % 2 == 1
            a = lineage(local, item, forward=forward, method=method)
            b = lineage(on_spark, item, forward=forward, method=method)
            assert a == b, (item, method, forward)
            assert (a.engine.engine, b.engine.engine) == (Engine.LOCAL, Engine.SPARK)


def test_an_index_view_of_dataframes_answers_like_the_store(spark, root, frames):
    """The in-memory IndexView (unbucketed DataFrames) takes the Spark path."""
    triples, tables, fr, tdf = frames
    known = local_frame(spark, [(v,) for v in sorted(tables)], "id string")
    view = IndexView(tdf, fr.nodes, fr.triples, fr.setdeps, known=known)
    st = Store.open(root, spark=spark, engine="local")
    for item, method in (("8", Method.CS), ("p23", Method.CC), ("4", Method.RQ)):
        a, b = view_lineage(view, item, method=method), lineage(st, item, method=method)
        assert (a.nodes, a.edges, a.method) == (b.nodes, b.edges, b.method)
        assert a.engine.engine is Engine.SPARK
    with pytest.raises(UserError, match="unknown item 'nope'"):
        view_lineage(view, "nope", method=Method.CS)


@pytest.mark.parametrize("method", [Method.RQ, Method.CC, Method.CS])
def test_unknown_item_is_a_user_error_and_a_vertex_in_no_triple_has_no_lineage(store, method):
    with pytest.raises(UserError, match="unknown item 'nope'") as e:
        lineage(store, "nope", method=method)
    assert "case-sensitive" in e.value.render()
    alone = lineage(store, "Ta", method=method)  # a Table element: a vertex, in no triple
    assert (alone.nodes, alone.edges) == ((), ())
    assert alone.triples_read == (0 if method is not Method.RQ else lineage(store, "8", method=method).triples_read)


def test_component_members_are_the_values_and_ops_of_the_component(store):
    assert component_members(store, "p23") == ["R1", "R2", "p15", "p18", "p23", "p3", "p6"]
    assert component_members(store, "p23", limit=3) == ["R1", "R2", "p15"]
    assert component_members(store, "8") == ["-", *sorted(str(i) for i in range(1, 13))]
    with pytest.raises(UserError, match="'nope' is in no component"):
        component_members(store, "nope")


def test_a_component_selection_exports_the_whole_component(store):
    from store.export.selection import Selection, subgraph

    sg = subgraph(store, Selection(component="p23"), 1000)
    assert {n.id for n in sg.nodes} == {"R1", "R2", "p15", "p18", "p23", "p3", "p6"}
    assert len([r for r in sg.rels if r.type.value == "DERIVED"]) == 4
    small = subgraph(store, Selection(component="p23"), 3)
    assert [n.id for n in small.nodes] == ["R1", "R2", "p15"] and small.truncated


def test_auto_on_a_local_store_starts_no_spark(root):
    """Opened with a session factory that fails: lineage, unknown items and components must not
    ask for Spark."""

    def no_spark():
        raise AssertionError("lineage on a local store started Spark")

    st = Store.open(root, spark=no_spark, engine="auto")
    for method in Method:
        out = lineage(st, "8", method=method)
        assert out.engine.engine is Engine.LOCAL and set(out.nodes) == {"1", "2", "3", "4", "5", "7"}
        with pytest.raises(UserError, match="unknown item"):
            lineage(st, "nope", method=method)
    assert component_members(st, "p3")[-1] == "p6"
    assert not st.spark_started


def test_auto_counts_what_the_method_reads(spark, root):
    """The threshold applies to what the method reads: every edge for RQ, the set-lineage for CS."""
    st = Store.open(root, spark=spark, engine="auto", local_rows=8)
    rq = lineage(st, "8", method=Method.RQ)
    assert rq.engine.engine is Engine.SPARK and "more than the local limit of 8" in rq.engine.reason
    cs = lineage(st, "p23", method=Method.CS)
    assert cs.engine.engine is Engine.LOCAL and "reads 4 rows" in cs.engine.reason
    assert lineage(st, "8", method=Method.CS).engine.engine is Engine.SPARK  # 9 triples > 8


def test_index_files_are_sorted_by_their_lookup_key(root):
    """Each bucket file is ordered by its table's sort key (layout.LAYOUT), which is what lets a
    point read skip the row groups of other keys."""
    import glob
    import os

    import pyarrow.parquet as pq

    from store.index import layout as L

    st = Store.open(root, engine="local")
    checked = 0
    for table, (_, sort_by) in L.LAYOUT.items():
        entry = st.manifest.tables.get(table)
        if entry is None:
            continue
        folder = st.storage.file_path(entry.segments[0])
        for path in glob.glob(os.path.join(folder, "bucket=*", "*.parquet")):
            rows = pq.read_table(path, columns=list(sort_by)).to_pylist()
            keys = [tuple("" if r[c] is None else str(r[c]) for c in sort_by) for r in rows]
            assert keys == sorted(keys), (table, path)
            checked += len(keys) > 1
    assert checked >= 3  # the test read files with rows to order


def test_a_component_held_in_memory_answers_like_the_files(root, frames, monkeypatch):
    """The second lineage query on a component loads it into the process's cache (here every
    component, whatever its size); answers, `triples_read` included, stay those of the files.
    With the cache off ($STRATA_LINEAGE_CACHE=0) nothing is held."""
    from store.duckdb import index_reads as LI

    st = Store.open(root, engine="local")
    items = ["8", "4", "p23", *random.Random(5).sample(_random_values(frames[0]), 6)]
    monkeypatch.setattr(LI, "_CACHE_MIN_TRIPLES", 0)
    for budget in ("0", ""):
        monkeypatch.setenv(LI.CACHE_ENV, budget)
        LI.CACHE.clear()
        cold = {(i, f, m): lineage(st, i, forward=f, method=m) for i in items for f in (False, True)
                for m in (Method.CC, Method.CS)}
        for _ in range(2):
            again = {key: lineage(st, key[0], forward=key[1], method=key[2]) for key in cold}
            assert again == cold
        assert (LI.CACHE.triples > 0) is (budget == "")
        for (item, forward, _), got in cold.items():
            assert (set(got.nodes), set(got.edges)) == reference_lineage(frames[0], item, None, forward)
    LI.CACHE.clear()


def test_a_bad_cache_budget_is_a_user_error(root, monkeypatch):
    from store.duckdb import index_reads as LI

    monkeypatch.setenv(LI.CACHE_ENV, "lots")
    monkeypatch.setattr(LI, "_CACHE_MIN_TRIPLES", 0)
    LI.CACHE.clear()
    st = Store.open(root, engine="local")
    with pytest.raises(UserError, match="STRATA_LINEAGE_CACHE must be a number of triples"):
        lineage(st, "8", method=Method.CS)  # the first lineage checks it (skeleton files)
    LI.CACHE.clear()


def test_skeleton_files_answer_like_the_index_files(root, frames, monkeypatch, tmp_path):
    """A large component's skeleton files (store/duckdb/index_reads.py: triples in set order and set
    dependencies as integer codes, memory-mapped), written here for every component of the small
    graph: CC and CS give the answers and `triples_read` of the index files, both directions.
    A second lookup of a large component without files writes them; files of an older index
    are removed; with $STRATA_LINEAGE_CACHE=0 none are used or written."""
    import os
    import shutil

    from store.duckdb import index_reads as LI

    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    st = Store.open(copy, engine="local")
    items = ["8", "4", "p23", *random.Random(7).sample(_random_values(frames[0]), 6)]
    keys = [(i, f, m) for i in items for f in (False, True) for m in (Method.CC, Method.CS)]
    monkeypatch.setenv(LI.CACHE_ENV, "0")
    LI.CACHE.clear()
    want = {key: lineage(st, key[0], forward=key[1], method=key[2]) for key in keys}
    assert LI.write_skeletons(st, threshold=0) == 0
    monkeypatch.delenv(LI.CACHE_ENV)
    index = LI.LocalIndex.of(st)
    stale = os.path.join(index.cache, "an-older-index-segment")
    os.makedirs(stale)
    written = LI.write_skeletons(st, threshold=0)
    assert written == st.meta("index")["components"] and not os.path.exists(stale)
    from store.verify import verify

    assert verify(st.storage).ok  # derived files, outside every commit: the store still verifies
    LI.CACHE.clear()
    got = {key: lineage(st, key[0], forward=key[1], method=key[2]) for key in keys}
    assert got == want
    assert LI.CACHE.triples == 0  # mapped, not held in the process's memory budget
    for (item, forward, _), result in got.items():
        assert (set(result.nodes), set(result.edges)) == reference_lineage(frames[0], item, None, forward)
    # written at a large component's second lookup when missing
    shutil.rmtree(index.cache)
    monkeypatch.setattr(LI, "LARGE_COMPONENT", 0)
    monkeypatch.setattr(LI, "_CACHE_MIN_TRIPLES", 0)
    LI.CACHE.clear()
    for _ in range(2):
        assert lineage(st, "8", method=Method.CS) == want[("8", False, Method.CS)]
    ccid = index.locate("8")[0]
    assert os.path.isdir(index.skeleton(ccid))
    LI.CACHE.clear()
