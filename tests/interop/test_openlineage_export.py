"""`strata export openlineage`: column lineage from structural provenance, round trips, --url."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ol_helpers import contents, pipeline_events, run_event, write
from support.ol_schema import check_published

from capture.storing.to_openlineage import column_lineage, field_name, field_types, schema_facet
from store import Store
from store.interop.ol_commit import ingest_openlineage
from store.interop.openlineage import validate_event
from strata.cli import main


def op(oid, type_, inputs=(), manipulated=(), dataset=None, detail=None):
    return {"oid": oid, "type": type_, "dataset": dataset, "detail": detail,
            "inputs": [{"input": i, "pred": p, "accessed": a} for i, p, a in inputs],
            "manipulated": None if manipulated is None
            else [{"input": i, "src": s, "dst": d} for i, s, d in manipulated]}


# Pebble's running example as capture records it (docs/capture.md; tests/support/running_example.py)
RUNNING_EXAMPLE = [
    op(1, "source", dataset="tweets"),
    op(2, "filter", [(0, 1, ["retweet_cnt"])], []),
    op(3, "select", [(0, 2, ["text", "user.id_str", "user.name"])],
       [(0, "text", "text"), (0, "user.id_str", "id_str"), (0, "user.name", "name")]),
    op(4, "flatten", [(0, 1, ["user_mentions.[pos]", "text"])],
       [(0, "text", "text"), (0, "user_mentions.[pos]", "m_user")]),
    op(5, "select", [(0, 4, ["text", "m_user.id_str", "m_user.name"])],
       [(0, "text", "text"), (0, "m_user.id_str", "id_str"), (0, "m_user.name", "name")]),
    op(6, "union", [(0, 3, []), (1, 5, [])], []),
    op(7, "select", [(0, 6, ["id_str", "name", "text"])],
       [(0, "id_str", "user.id_str"), (0, "name", "user.name"), (0, "text", "text")]),
    op(8, "aggregation", [(0, 7, ["user", "text"])], [(0, "user", "user"), (0, "text", "tweets.[pos].text")]),
]


def test_column_lineage_of_the_running_example():
    direct, indirect = column_lineage(RUNNING_EXAMPLE, 8, ["user", "user.id_str", "tweets", "tweets.[pos].text"])
    assert direct["tweets.text"] == [("tweets", "text", "AGGREGATION")]
    assert direct["user.id_str"] == [("tweets", "user.id_str", "TRANSFORMATION"),
                                     ("tweets", "user_mentions.id_str", "TRANSFORMATION")]
    assert {f for _, f, _ in direct["user"]} == {"user.id_str", "user.name", "user_mentions.id_str",
                                                  "user_mentions.name"}
    assert ("tweets", "retweet_cnt", "FILTER") in indirect
    assert ("tweets", "user.name", "GROUP_BY") in indirect
    assert not any(f == "text" for _, f, _ in indirect)  # text is aggregated, not a grouping key


@pytest.mark.parametrize("ops, out, expected", [
    ([op(1, "source", dataset="d"), op(2, "select", [(0, 1, ["a"])], [(0, "a", "a")])],
     "a", [("d", "a", "IDENTITY")]),
    ([op(1, "source", dataset="d"), op(2, "map", [(0, 1, None)], None)], "x", [("d", "x", "TRANSFORMATION")]),
    ([op(1, "source", dataset="l"), op(2, "source", dataset="r"),
      op(3, "join", [(0, 1, ["k"]), (1, 2, ["k"])], [(0, "a", "a"), (1, "b", "b")])],
     "b", [("r", "b", "IDENTITY")]),
    # both sides have an a: the right one is a~2 past the join (capture/operators.py column_paths)
    ([op(1, "source", dataset="l"), op(2, "source", dataset="r"),
      op(3, "join", [(0, 1, ["a"]), (1, 2, ["a"])], [(0, "a", "a"), (1, "a", "a~2")]),
      op(4, "select", [(0, 3, ["a~2"])], [(0, "a~2", "a")])],
     "a", [("r", "a", "IDENTITY")]),
], ids=["identity", "map", "join-side", "join-same-name"])
def test_column_lineage_cases(ops, out, expected):
    direct, _ = column_lineage(ops, ops[-1]["oid"], [out])
    assert direct[out] == expected


def test_join_keys_are_indirect_join():
    ops = [op(1, "source", dataset="l"), op(2, "source", dataset="r"),
           op(3, "join", [(0, 1, ["id"]), (1, 2, ["rid"])], [(0, "a", "a")])]
    assert column_lineage(ops, 3, ["a"])[1] == [("l", "id", "JOIN"), ("r", "rid", "JOIN")]


def test_grouping_keys_are_not_aggregations():
    """A grouping key's value is its rows' one value (OpenLineage: AGGREGATION is a value made from
    several rows): `groupBy(col("user.id_str").alias("user"))` gives user ← user.id_str
    TRANSFORMATION (a rename), as OpenLineage's Spark listener says; and an aggregate named as its
    input (`max(x) AS x`) is AGGREGATION, not a grouping key. Capture keeps each grouping
    expression as a column named after it; Spark's Aggregate node in `detail` names them."""
    ops = [op(1, "source", dataset="t"),
           op(2, "aggregation", [(0, 1, ["user.id_str", "text", "x"])],
              [(0, "user.id_str", "user.id_str"), (0, "user.id_str", "user"), (0, "text", "texts.[pos]"),
               (0, "x", "x")],
              detail="Aggregate [user#10.id_str], [user#10.id_str AS user.id_str#38, user#10.id_str AS user#12, "
                     "collect_list(text#9, 0, 0, true) AS texts#13, max(x#3L) AS x#14L]")]
    direct, indirect = column_lineage(ops, 2, ["user", "texts", "texts.[pos]", "x"])
    assert direct["user"] == [("t", "user.id_str", "TRANSFORMATION")]
    assert direct["texts"] == [("t", "text", "AGGREGATION")]
    assert direct["x"] == [("t", "x", "AGGREGATION")]
    assert indirect == [("t", "user.id_str", "GROUP_BY")]
    # without Spark's node (distinct): every column is a key, kept as itself
    dedup = [op(1, "source", dataset="t"), op(2, "aggregation", [(0, 1, ["a"])], [(0, "a", "a")], detail="distinct(a)")]
    assert column_lineage(dedup, 2, ["a"]) == ({"a": [("t", "a", "IDENTITY")]}, [("t", "a", "GROUP_BY")])


def test_a_grouping_key_that_keeps_its_name_is_identity():
    """`groupBy("user").agg(max("x").alias("top"))`: the key user ← user is DIRECT/IDENTITY (taken
    as is: OpenLineage's IDENTITY, not AGGREGATION) and GROUP_BY for the whole output; the
    aggregate top ← x is AGGREGATION."""
    ops = [op(1, "source", dataset="t"),
           op(2, "aggregation", [(0, 1, ["user", "x"])], [(0, "user", "user"), (0, "x", "top")],
              detail="Aggregate [user#1], [user#1, max(x#2L) AS top#5L]")]
    direct, indirect = column_lineage(ops, 2, ["user", "top"])
    assert direct == {"user": [("t", "user", "IDENTITY")], "top": [("t", "x", "AGGREGATION")]}
    assert indirect == [("t", "user", "GROUP_BY")]


def test_an_aggregate_named_as_a_key_is_its_own_column():
    """`SELECT l.a, max(r.a) AS a … GROUP BY l.a` over a join whose sides both have an a: the
    aggregate's output is path a~2 (capture/operators.py column_paths), an AGGREGATION of the
    right side's a; the key a keeps the left side's."""
    ops = [op(1, "source", dataset="l"), op(2, "source", dataset="r"),
           op(3, "join", [(0, 1, ["k"]), (1, 2, ["k"])], [(0, "a", "a"), (1, "a", "a~2")]),
           op(4, "aggregation", [(0, 3, ["a", "a~2"])], [(0, "a", "a"), (0, "a~2", "a~2")],
              detail="Aggregate [a#1L], [a#1L, max(a#5L) AS a#9L, collect_list(struct(x)) AS __strata_agg_4#10]"),
           op(5, "select", [(0, 4, ["a", "a~2"])], [(0, "a", "key"), (0, "a~2", "top")])]
    direct, indirect = column_lineage(ops, 5, ["key", "top"])
    assert direct == {"key": [("l", "a", "TRANSFORMATION")], "top": [("r", "a", "AGGREGATION")]}
    assert ("l", "a", "GROUP_BY") in indirect and ("r", "a", "GROUP_BY") not in indirect


def test_flattening_a_computed_array_transforms():
    """explode(lines) keeps each element as it is (IDENTITY); explode(split(lower(value))) makes
    words out of the value (TRANSFORMATION, as OpenLineage's Spark listener says); a column renamed
    beside the explode is a rename, TRANSFORMATION like any other (word_count, explode_outer_struct)."""
    ops = [op(1, "source", dataset="o"),
           op(2, "flatten", [(0, 1, ["lines.[pos]", "value", "customer.id"])],
              [(0, "lines.[pos]", "l"), (0, "value", "word"), (0, "customer.id", "cid")])]
    direct, _ = column_lineage(ops, 2, ["l.sku", "word", "cid"])
    assert direct == {"l.sku": [("o", "lines.sku", "IDENTITY")], "word": [("o", "value", "TRANSFORMATION")],
                      "cid": [("o", "customer.id", "TRANSFORMATION")]}


def test_window_keys_are_indirect_window():
    """A window is recorded as an aggregation of the partition joined to each row (docs/capture.md,
    "Window"): its partition and order keys are OpenLineage's INDIRECT/WINDOW, not JOIN or GROUP_BY."""
    ops = [op(1, "source", dataset="e"),
           op(2, "aggregation", [(0, 1, ["user", "ts"])], [(0, "user", "_strata_w0"), (0, "ts", "_strata_w1")]),
           op(3, "join", [(0, 1, ["user"]), (1, 2, ["_strata_w0"])], [(0, "user", "user"), (0, "ts", "ts")]),
           op(4, "select", [(0, 3, ["user", "ts", "_strata_w0", "_strata_w1"])],
              [(0, "user", "user"), (0, "ts", "ts"), (0, "user", "rn"), (0, "ts", "rn")])]
    ops[1]["method"], ops[2]["method"], ops[3]["method"] = "window.partition", "window.join", "window"
    direct, indirect = column_lineage(ops, 4, ["user", "rn"])
    assert indirect == [("e", "ts", "WINDOW"), ("e", "user", "WINDOW")]
    assert direct["rn"] == [("e", "ts", "TRANSFORMATION"), ("e", "user", "TRANSFORMATION")]


def test_the_published_schemas_name_what_is_wrong():
    """The check every exported event passes (tests/support/ol_schema.py) finds a facet that
    breaks its published schema, one under another key than its schema's, and one whose schema
    is not shipped."""
    from support.ol_schema import published_errors

    from capture.storing.to_openlineage import facet

    symlinks = facet("SymlinksDatasetFacet", "1-0-1", identifiers=[{"namespace": "file:/wh", "name": "d.t"}])
    event = run_event(0, "COMPLETE", "00000000-0000-0000-0000-000000000001", "j", outputs=[
        {"namespace": "file", "name": "/wh/d.db/t", "facets": {
            "symlinks": symlinks, "schema2": schema_facet(["a"]),
            "owners": facet("OwnershipDatasetFacet", "1-0-1", owners=[])}}])
    errors = published_errors(event)
    assert any(e.startswith("outputs/0/symlinks/") and "'type' is a required property" in e for e in errors)
    assert any(e.startswith("outputs/0/schema2: ") and "not 'schema2'" in e for e in errors)
    assert any(e.startswith("outputs/0/owners: no published schema") for e in errors)
    symlinks["identifiers"][0]["type"] = "TABLE"
    event["outputs"][0]["facets"] = {"symlinks": symlinks, "schema": schema_facet(["a"])}
    assert published_errors(event) == []


def test_nested_names_and_schema_facet():
    assert field_name("tweets.[pos].text") == "tweets.text" and field_name("a.[3].b") == "a.b"
    assert schema_facet(["user.id", "user.name", "x"])["fields"] == [
        {"name": "user", "fields": [{"name": "id"}, {"name": "name"}]}, {"name": "x"}]


def test_field_types_name_sparks_types_nested_ones_under_their_field():
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True},
        {"name": "price", "type": "decimal(10,2)", "nullable": True},
        {"name": "user", "type": {"type": "struct", "fields": [{"name": "name", "type": "string"}]}},
        {"name": "tags", "type": {"type": "array", "elementType": {"type": "struct", "fields": [
            {"name": "t", "type": "string"}]}, "containsNull": True}},
        {"name": "__strata_id_3", "type": "long"}]}
    assert field_types(schema) == {"id": "long", "price": "decimal(10,2)", "user": "struct",
                                   "user.name": "string", "tags": "array", "tags.t": "string"}
    assert schema_facet(["user.name", "id"], field_types(schema))["fields"] == [
        {"name": "id", "type": "long"},
        {"name": "user", "type": "struct", "fields": [{"name": "name", "type": "string"}]}]


def test_rows_the_program_made_are_in_no_event(spark, tmp_path):
    """A join with `createDataFrame` rows: the events name the file input only; the output's
    schema facet has each field's type; every event is valid."""
    from support.capture_helpers import TWEETS

    from capture import capturing
    from capture.storing.to_openlineage import captured_events

    st = Store.open(str(tmp_path / "store"), spark=spark)
    levels = spark.createDataFrame([(0, "none"), (2, "some")], "retweet_cnt long, level string")
    with capturing(spark, st) as cap:
        spark.read.json(TWEETS).join(levels, "retweet_cnt").select("text", "level") \
            .write.parquet(str(tmp_path / "out"))
    events = check_published(captured_events(st)[cap.runs[0].run])
    for i, e in enumerate(events):
        validate_event(e, f"event {i}")
    assert {d["name"] for e in events for d in e["inputs"]} == {TWEETS}
    output = events[1]["outputs"][0]["facets"]
    assert output["schema"]["fields"] == [{"name": "text", "type": "string"}, {"name": "level", "type": "string"}]
    lineage = output["columnLineage"]
    named = [x["name"] for f in lineage["fields"].values() for x in f["inputFields"]] + \
        [x["name"] for x in lineage["dataset"]]
    assert named and set(named) == {TWEETS}


def test_catalog_tables_are_named_by_their_location(spark, tmp_path):
    """saveAsTable at a location (its `path` option), INSERT … VALUES, and INSERT with a column list
    from the first table into a second: each table is named by its location (`file`, the path)
    whether a run writes or reads it, as OpenLineage's Spark listener names it; the written
    table's schema facet and column lineage use the table's columns and types, not the query's
    (`col1`, `col2`); inputs' schema facets carry types; every event is valid by OpenLineage's
    published schemas. A run stored before capture_tables keeps naming a table by its identifier."""
    from support.capture_helpers import TWEETS

    from capture import capturing
    from capture.storing.to_openlineage import captured_events

    st = Store.open(str(tmp_path / "store"), spark=spark)
    db = tmp_path / "db"
    spark.sql(f"CREATE DATABASE ol_tables LOCATION '{db}'")  # not the default warehouse
    try:
        with capturing(spark, st) as cap:
            spark.read.json(TWEETS).select("text", "retweet_cnt").write.option("path", str(tmp_path / "tweets")) \
                .saveAsTable("ol_tables.tweets")
            spark.sql("CREATE TABLE ol_tables.counts (n BIGINT, label STRING) USING parquet")
            spark.sql("INSERT INTO ol_tables.counts VALUES (1, 'one')")
            spark.sql("INSERT INTO ol_tables.counts (label, n) SELECT text, retweet_cnt FROM ol_tables.tweets")
    finally:
        spark.sql("DROP DATABASE ol_tables CASCADE")
    events = {r.run: check_published(captured_events(st)[r.run]) for r in cap.runs}
    for es in events.values():
        for i, e in enumerate(es):
            validate_event(e, f"event {i}")
    saved, values, select = (events[r.run][1] for r in cap.runs)
    tweets = {"namespace": "file", "name": str(tmp_path / "tweets")}
    counts = {"namespace": "file", "name": str(db / "counts")}
    assert {k: saved["outputs"][0][k] for k in tweets} == tweets
    assert [{k: d[k] for k in tweets} for d in select["inputs"]] == [tweets] and not values["inputs"]
    assert "symlinks" not in saved["outputs"][0]["facets"]  # outside the warehouse: no symlink, as the listener
    assert select["inputs"][0]["facets"]["schema"]["fields"] == [{"name": "text", "type": "string"},
                                                                 {"name": "retweet_cnt", "type": "long"}]
    for e in (values, select):
        out = e["outputs"][0]
        assert {k: out[k] for k in counts} == counts
        assert out["facets"]["schema"]["fields"] == [{"name": "n", "type": "long"}, {"name": "label", "type": "string"}]
    lineage = select["outputs"][0]["facets"]["columnLineage"]["fields"]
    assert {k: [(x["name"], x["field"]) for x in v["inputFields"]] for k, v in lineage.items()} == {
        "label": [(tweets["name"], "text")], "n": [(tweets["name"], "retweet_cnt")]}
    assert values["outputs"][0]["facets"]["columnLineage"]["fields"] == {}  # rows the program made
    # a store written before capture_tables: the read table by its identifier, in namespace file
    from capture.storing.to_openlineage import _rows, captured_runs, run_events

    run = cap.runs[2].run
    ops = sorted((o for o in _rows(st, "capture_operators") if o["run"] == run), key=lambda o: o["oid"])
    older = run_events(st, captured_runs(st)[run], ops)[1]
    assert [(d["namespace"], d["name"]) for d in older["inputs"]] == [("file", "spark_catalog.ol_tables.tweets")]


def test_ingested_runs_round_trip(tmp_path):
    st = Store.open(str(tmp_path / "a"))
    ingest_openlineage(st, [write(tmp_path, "events", pipeline_events(), jsonl=False)])
    r = CliRunner().invoke(main, ["--store", st.root, "export", "openlineage", "--out", str(tmp_path / "out.jsonl")])
    assert r.exit_code == 0, r.output
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(lines) == len(pipeline_events())
    again = Store.open(str(tmp_path / "b"))
    ingest_openlineage(again, [tmp_path / "out.jsonl"])
    assert contents(again) == contents(st)


class _Collector(BaseHTTPRequestHandler):
    """An OpenLineage endpoint: validates each POSTed event against the schema, 400 if invalid."""

    received: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        try:
            validate_event(body, f"POST {self.path}")
        except Exception:  # noqa: BLE001 - any failure is a 400 here
            self.send_response(400)
        else:
            self.received.append((self.path, body))
            self.send_response(201)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture()
def endpoint():
    _Collector.received = []
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", _Collector.received
    server.shutdown()


def test_url_posts_valid_events(tmp_path, endpoint):
    url, received = endpoint
    st = Store.open(str(tmp_path / "s"))
    ingest_openlineage(st, [write(tmp_path, "events", pipeline_events(), jsonl=False)])
    r = CliRunner().invoke(main, ["--store", st.root, "export", "openlineage",
                                  "run:00000000-0000-0000-0000-000000000002", "--url", url])
    assert r.exit_code == 0, r.output
    assert [p for p, _ in received] == ["/api/v1/lineage"] * 2
    assert [b["eventType"] for _, b in received] == ["START", "COMPLETE"]


def test_captured_run_exports_and_links_through_its_datasets(spark, tmp_path):
    from support.capture_helpers import TWEETS
    from support.running_example import running_example

    from capture import Tracker

    st = Store.open(str(tmp_path / "store"), spark=spark)
    tracker = Tracker(spark, st, pipeline="mentions")
    out = str(tmp_path / "out")
    info = tracker.write(running_example(tracker.read.json(TWEETS, name=TWEETS)), out, format="parquet")
    r = CliRunner().invoke(main, ["--store", st.root, "export", "openlineage", info.run])
    assert r.exit_code == 0, r.output
    events = check_published([json.loads(x) for x in r.output.splitlines()])
    for i, e in enumerate(events):
        validate_event(e, f"event {i}")
    lineage = events[1]["outputs"][0]["facets"]["columnLineage"]
    assert {"namespace": "file", "name": TWEETS, "field": "retweet_cnt",
            "transformations": [{"type": "INDIRECT", "subtype": "FILTER"}]} in lineage["dataset"]
    # an OpenLineage job that wrote the input, and one that read the output, in the same store
    from support.ol_helpers import dataset, rid

    upstream = [run_event(-10, "START", rid(1), "fetch", [dataset("api/tweets", ns="https://api.example.com")]),
                run_event(-5, "COMPLETE", rid(1), "fetch", [], [dataset(TWEETS, ns="file")]),
                run_event(10_000_000, "START", rid(2), "report", [dataset(out, ns="file")]),
                run_event(10_000_001, "COMPLETE", rid(2), "report", [], [dataset("report")])]
    ingest_openlineage(st.refresh(), [write(tmp_path, "up", upstream, jsonl=False)])
    import time

    import iql

    t0 = time.perf_counter()
    rows = iql.run(st, "select r.id from Job j, DatasetVersion v, Dataset d, Run r "
                       "where j emits v and v under d and d feeds r and j.name = 'fetch'").rows()
    assert [tuple(x) for x in rows] == [(info.run,)], time.perf_counter() - t0
    # the captured output is a Dataset named by its path: OpenLineage runs that read that name
    rows = iql.run(st, "select distinct r.runId from Dataset o, DatasetVersion v, Run r "
                       "where o.name = v.name and o.format = 'parquet' and v feeds r").rows()
    assert [tuple(x) for x in rows] == [(rid(2),)]


@st.composite
def chains(draw):
    """A source with columns c0..c3, then selects (renaming, dropping, duplicating columns) and
    filters, as capture records them; and the reference: where each column came from."""
    cols = {f"c{i}": (f"c{i}", True) for i in range(4)}  # name -> (source column, name kept so far)
    ops, indirect = [op(1, "source", dataset="d")], set()
    for oid in range(2, draw(st.integers(2, 6)) + 2):
        if draw(st.booleans()):
            col = draw(st.sampled_from(sorted(cols)))
            ops.append(op(oid, "filter", [(0, oid - 1, [col])], []))
            indirect.add(("d", cols[col][0], "FILTER"))
        else:
            picks = draw(st.lists(st.sampled_from(sorted(cols)), min_size=1, max_size=4))
            new = {}
            for i, src in enumerate(picks):
                dst = src if draw(st.booleans()) and src not in new else f"x{oid}_{i}"
                new[dst] = (cols[src][0], cols[src][1] and dst == src)
            ops.append(op(oid, "select", [(0, oid - 1, sorted(set(picks)))],
                          [(0, picks[i], dst) for i, dst in enumerate(new)]))
            cols = new
    return ops, cols, indirect


@settings(max_examples=60, deadline=None)
@given(chains())
def test_column_lineage_of_select_filter_chains_matches_the_reference(chain):
    ops, cols, indirect = chain
    direct, found = column_lineage(ops, ops[-1]["oid"], sorted(cols))
    assert direct == {c: [("d", src, "IDENTITY" if kept else "TRANSFORMATION")] for c, (src, kept) in cols.items()}
    assert set(found) == indirect


def _prov_ops(ops):
    """The chain's operators as capture's OperatorProv records (what backtracing reads)."""
    from capture.operators import Manipulation, OperatorProv, OpInput, OpType

    return [OperatorProv(o["oid"], OpType(o["type"]), o["type"],
                         tuple(OpInput(i["pred"], tuple(i["accessed"])) for i in o["inputs"]),
                         tuple(Manipulation(m["input"], m["src"], m["dst"]) for m in o["manipulated"]),
                         dataset=o["dataset"]) for o in ops]


@settings(max_examples=40, deadline=None)
@given(chains())
def test_column_lineage_agrees_with_pebbles_backtrace(chain):
    """Two paths to the same answer: tracing one item with every output column asked for
    (Pebble's backtrace) gives exactly the DIRECT input fields as contributing, and every INDIRECT
    one among the contributing or influencing nodes."""
    from capture.tracing.backtrace import backtrace

    ops, cols, _ = chain
    direct, indirect = column_lineage(ops, ops[-1]["oid"], sorted(cols))
    t = backtrace(_prov_ops(ops), ops[-1]["oid"], {7: sorted(cols)}, lambda oid, ids: [])
    roles = {n.path: n.role for i in t.items for n in i.nodes}
    assert {p for p, r in roles.items() if r == "contributing"} == {f for v in direct.values() for _, f, _ in v}
    assert {f for _, f, _ in indirect} <= set(roles)
