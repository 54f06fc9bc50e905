"""Triples ingest, the persisted index and the `strata index` / `strata lineage` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.lineage_reference import TABLE4

from store.errors import BundleError
from store.index import IndexParams
from store.index import layout as L
from store.indexing import build_index
from store.lineage import Method, lineage
from store.spark.index.layout import bucket_filter
from store.store import Store
from strata.cli import main

TABLE_OF = {**{str(i): "Person1" for i in range(1, 13)}, **{str(i): "Person2" for i in range(13, 22)},
            **{str(i): "AvgAge" for i in range(22, 26)}}


def _csv(path: Path, rows, header="src,dst,op,src_table,dst_table") -> Path:
    path.write_text(header + "\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return path


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("triples")
    f = _csv(root / "t4.csv", [(s, d, o, TABLE_OF[s], TABLE_OF[d]) for s, d, o in TABLE4])
    st = Store.open(str(root / "store"), spark=spark)
    st.ingest(str(f))
    build_index(st, IndexParams(theta=3, buckets=4))
    return st, root


def test_values_tables_and_ops_become_elements_and_edges(store):
    st, _ = store
    kinds = {(r["granularity"], r["kind"]): r["n"] for r in
             st.table("elements").groupBy("granularity", "kind").count().withColumnRenamed("count", "n").collect()}
    assert kinds == {("Value", "data"): 22, ("Table", "data"): 3, ("Transformation", "process"): 2}
    assert st.catalog.leq("Value", "Table")
    parents = {r["id"]: r["parent"] for r in st.table("parents").collect()}
    assert parents["23"] == "AvgAge" and parents["1"] == "Person1"
    edges = {tuple(r) for r in st.table("edges").select("src", "process", "dst").collect()}
    assert ("15", "R2", "23") in edges and len(edges) == 15


def test_index_is_bucketed_and_a_set_lookup_prunes_to_one_bucket(store):
    st, _ = store
    folders = sorted(p.name for p in Path(st.root, "tables", L.TRIPLES).glob("*/bucket=*"))
    assert folders and len(folders) <= 4
    meta = st.meta(L.META_KEY)
    row = st.table(L.NODES).where(bucket_filter("id", "23", 4)).first()
    scope = st.table(L.TRIPLES).where(bucket_filter(L.CCID, row[L.CCID], meta["buckets"]))
    plan = scope._jdf.queryExecution().executedPlan().toString()
    assert "PartitionFilters: [isnotnull(bucket" in plan and "bucket#" in plan
    assert "PushedFilters: [IsNotNull(ccid), EqualTo(ccid," in plan


def test_lineage_from_the_store_prunes_and_agrees(store):
    st, _ = store
    results = {m: lineage(st, "23", method=m) for m in (Method.RQ, Method.CC, Method.CS)}
    assert {r.nodes for r in results.values()} == {("15", "18", "3", "6")}
    assert results[Method.RQ].triples_read == 15
    assert results[Method.CS].triples_read <= results[Method.CC].triples_read == 4


def test_cli_lineage_json_matches_the_spec(store):
    st, _ = store
    out = CliRunner().invoke(main, ["--store", st.root, "lineage", "23", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["item"] == "23" and data["direction"] == "backward" and data["method"] == "cs"
    assert data["ancestors"] == ["15", "18", "3", "6"]
    assert {"src": "15", "dst": "23", "op": "R2"} in data["edges"] and data["triples_read"] == 4
    fwd = CliRunner().invoke(main, ["--store", st.root, "lineage", "3", "--forward", "--format", "json"])
    assert json.loads(fwd.stdout)["descendants"] == ["15", "23"]


def test_cli_unknown_item_exits_2_with_a_message(store):
    st, _ = store
    out = CliRunner().invoke(main, ["--store", st.root, "lineage", "nope"])
    assert out.exit_code == 2
    assert "unknown item 'nope'" in out.stderr


def test_new_triples_make_the_index_stale_until_index_updates_it(store):
    st, root = store
    f = _csv(root / "more.csv", [("23", "30", "R3", "AvgAge", "Report"), ("25", "30", "R3", "AvgAge", "Report")])
    st.ingest(str(f))
    stale = lineage(st, "30")
    assert stale.method is Method.RQ and "strata index" in stale.warnings[0]
    out = CliRunner().invoke(main, ["--store", st.root, "index", "--format", "json"])
    assert out.exit_code == 0, out.output
    meta = json.loads(out.stdout)
    # the in-process builder recomputes the whole index (docs/index.md); Spark merges the new edges
    assert meta["mode"] == ("full" if meta["builder"] == "local" else "incremental")
    st.refresh()
    fresh = lineage(st, "30")
    assert fresh.method is Method.CS and not fresh.warnings
    assert set(fresh.nodes) == {"23", "25", "15", "18", "3", "6", "21", "9"}


@pytest.mark.parametrize(
    ("text", "message"),
    [("src,dst\n1,2\n", "needs the column(s) op"),
     ("src,dst,op\n1,2,R\n3,,R\n", "row 2: src, dst and op must all be non-empty"),
     ("src,dst,op,src_table,dst_table\n1,2,R,A,B\n1,3,R,C,B\n", "value '1' is given two tables"),
     ("src,dst,op\n1,2,R\n2,R,S\n", "'R' is both a value and an op")],
    ids=["missing-column", "empty-cell", "two-tables", "op-is-a-value"],
)
def test_bad_triples_files_are_bundle_errors_and_commit_nothing(spark, tmp_path, text, message):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    st = Store.open(str(tmp_path / "s"), spark=spark)
    with pytest.raises(BundleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        st.ingest(str(f))
    assert st.refresh().version == 0


def test_cli_index_on_an_empty_store_says_what_to_do(spark, tmp_path):
    out = CliRunner().invoke(main, ["--store", str(tmp_path / "empty"), "index"])
    assert out.exit_code == 2
    assert "nothing to index" in out.stderr and "strata ingest" in out.stderr


def test_the_local_engine_answers_like_the_spark_engine(store, spark):
    """CC/CS with pyarrow point reads of the bucketed index (local) and as Spark jobs: the same
    Lineage, triples_read included."""
    st, _ = store
    local, on_spark = (Store.open(st.root, spark=spark, engine=e) for e in ("local", "spark"))
    for item, forward in (("23", False), ("3", True), ("22", False)):
        for method in (Method.CC, Method.CS):
            a = lineage(local, item, forward=forward, method=method)
            b = lineage(on_spark, item, forward=forward, method=method)
            assert a == b and (a.engine.engine.value, b.engine.engine.value) == ("local", "spark")
