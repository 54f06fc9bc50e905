"""RQ = CC = CS = the reference on random graphs; the paper's Tables 4-8 as fixed cases."""

from __future__ import annotations

import random

import pytest
from lineage_reference import TABLE6, THETA, reference_lineage, shared_index

from store.errors import UserError
from store.lineage import IndexView, Method, lineage


@pytest.fixture(scope="module")
def index(spark):
    triples, tables, frames, tdf = shared_index(spark)
    nodes = frames.nodes.cache()
    known = spark.createDataFrame([(v,) for v in sorted(tables)], ["id"])  # incl. isolated values
    view = IndexView(tdf.cache(), nodes, frames.triples.cache(), frames.setdeps.cache(), known=known)
    return triples, tables, frames, view


def test_table6_sets_and_set_dependencies(index):
    _, _, frames, _ = index
    rows = {r["id"]: (r["ccid"], r["csid"]) for r in frames.nodes.where("id rlike '^[0-9]+$'").collect()}
    assert {v for v, _ in rows.values()} == {"1"}  # one component
    sets = {}
    for v, (_, cs) in rows.items():
        sets.setdefault(cs, set()).add(v)
    assert sorted(map(sorted, sets.values())) == sorted(
        [["1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"], ["10", "11", "12"]])
    deps = {(r["src_csid"], r["dst_csid"]) for r in frames.setdeps.where("ccid = '1'").collect()}
    assert deps == {("1", "4"), ("4", "7"), ("4", "10")}  # Table 8: S1->S2, S2->S3, S2->S4


def test_table6_cs_reads_only_the_set_lineage(index):
    *_, view = index
    cs = lineage(view, "8", method=Method.CS)
    cc = lineage(view, "8", method=Method.CC)
    assert set(cs.nodes) == {"1", "2", "3", "4", "5", "7"} == set(cc.nodes)
    assert cs.edges == cc.edges
    assert (cc.triples_read, cs.triples_read) == (len(TABLE6), 9)  # 3 triples of S4 skipped


def test_table4_components_prune_to_four_triples(index):
    *_, view = index
    out = lineage(view, "p23", method=Method.CC)
    assert set(out.nodes) == {"p15", "p18", "p3", "p6"}
    assert ("p15", "p23", "R2") in out.edges and len(out.edges) == 4
    assert out.triples_read == 4  # Table 4: component 6 holds 4 triples


def test_rq_cc_cs_agree_with_the_reference_on_random_graphs(index):
    triples, tables, _, view = index
    rng = random.Random(3)
    items = rng.sample(sorted(v for v in tables if v.startswith("g")), 5)
    for item in items:
        depth = rng.choice([None, None, 1, 2])
        forward = rng.random() < 0.5
        want = reference_lineage(triples, item, depth, forward)
        for method in (Method.RQ, Method.CC, Method.CS):
            got = lineage(view, item, depth, forward, method)
            assert (set(got.nodes), set(got.edges)) == want, (item, depth, forward, method)


def test_above_tau_cs_runs_rq_on_spark_with_the_same_answer(index):
    triples, _, _, view = index
    small = lineage(view, "8", method=Method.CS, tau=1)
    assert set(small.nodes) == reference_lineage(triples, "8")[0]
    assert small.triples_read == 9


def test_sets_respect_theta_where_the_split_allows(index):
    _, tables, frames, _ = index
    leaves = {s.name for top in frames.splits for s in top.walk() if s.leaf}
    rows = frames.sets.collect()
    for r in rows:
        if r["level"] == 0:  # an unsplit component
            assert r["csid"] == r["ccid"] and r["n_nodes"] < THETA
        else:
            assert r["n_nodes"] < THETA or r["split"] in leaves, r
    assert any(r["level"] > 0 for r in rows)


def test_unknown_item_is_a_user_error(index):
    *_, view = index
    with pytest.raises(UserError, match="unknown item 'nope'"):
        lineage(view, "nope", method=Method.CS)
