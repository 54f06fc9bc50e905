"""Incremental maintenance: merging new triples into an index equals rebuilding it."""

from __future__ import annotations

import random

from lineage_reference import THETA, batch_triples, shared_index

from store.index import CCEngine, IndexParams, compute_index
from store.index.maintenance import merge_frames

PARAMS = IndexParams(theta=THETA, engine=CCEngine.STARS)


def _snapshot(frames):
    nodes = {(r["id"], r["ccid"], r["csid"]) for r in frames.nodes.collect()}
    deps = {tuple(r) for r in frames.setdeps.select("ccid", "src_csid", "dst_csid").collect()}
    triples = {tuple(r) for r in frames.triples.collect()}
    sets = {(r["csid"], r["n_nodes"], r["n_triples"]) for r in frames.sets.collect()}
    return nodes, deps, triples, sets


def test_merging_new_triples_equals_a_full_rebuild(spark):
    """Old = a random 60% of the batch (minus a whole table's triples); new = the rest.

    The new triples merge components, add values, add a table to the workflow graph (so the
    split plan changes) and re-split components; the merged index must equal the full build.
    """
    triples, tables = batch_triples()
    rng = random.Random(5)
    shuffled = triples[:]
    rng.shuffle(shuffled)
    cut = int(len(shuffled) * 0.6)
    old = [t for t in shuffled[:cut] if tables.get(t[1]) != "Td"]
    tab = spark.createDataFrame(sorted(tables.items()), ["id", "table"])
    cols = ["src", "dst", "op"]
    before = compute_index(spark.createDataFrame(old, cols), tab, PARAMS)
    merged, affected = merge_frames(
        before.nodes, before.triples, before.sets, spark.createDataFrame(triples, cols), tab,
        PARAMS, before.workflow)
    *_, full, _ = shared_index(spark)
    assert merged.splits == full.splits
    assert _snapshot(merged) == _snapshot(full)
    assert affected > 0
