"""Connected components on DataFrames (large-star/small-star) against union-find."""

from __future__ import annotations

import pytest
from support.lineage_reference import random_graphs, union_find

from store.spark.frames import local_frame
from store.spark.index.components import COMPONENT, CCEngine, connected_components
from store.spark.session import graphframes_available


@pytest.fixture(scope="module")
def batch(spark):
    triples, tables = random_graphs(seed=7, count=40)
    ids = sorted(tables) + ["lonely"]  # a vertex without any edge
    vdf = local_frame(spark, [(v,) for v in ids], "id string")
    edf = local_frame(spark, [(s, d) for s, d, _ in triples], "src string, dst string")
    return ids, [(s, d) for s, d, _ in triples], vdf, edf


def test_stars_label_every_vertex_with_its_components_smallest_id(batch):
    ids, edges, vdf, edf = batch
    got = {r["id"]: r[COMPONENT] for r in connected_components(vdf, edf, CCEngine.STARS).collect()}
    assert got == union_find(ids, edges)
    assert got["lonely"] == "lonely"


def test_graphframes_and_stars_agree(batch, spark):
    if not graphframes_available(spark):
        pytest.skip("GraphFrames' JVM package is not on the classpath: io.graphframes:graphframes-spark4_2.13 "
                    "is not served by this machine's Maven mirror; start Spark with spark.jars.packages to run it")
    ids, edges, vdf, edf = batch
    gf = {r["id"]: r[COMPONENT] for r in connected_components(vdf, edf, CCEngine.GRAPHFRAMES).collect()}
    st = {r["id"]: r[COMPONENT] for r in connected_components(vdf, edf, CCEngine.STARS).collect()}
    assert gf == st


def test_asking_for_graphframes_without_its_jar_is_a_clear_error(batch, spark):
    from store.errors import UserError

    if graphframes_available(spark):
        pytest.skip("GraphFrames is available here")
    _, _, vdf, edf = batch
    with pytest.raises(UserError, match="GraphFrames"):
        connected_components(vdf, edf, CCEngine.GRAPHFRAMES)
