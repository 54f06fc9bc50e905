"""Neo4j export: subgraph extraction from a real store, the three targets, Neo4j's own linter."""

from __future__ import annotations

import csv
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.export_helpers import NASTY, decode_cypher_string, lint, problems, shared_store

from store.errors import UserError
from store.export import RelType, extract
from store.export.neo4j import (
    Credentials,
    cypher_literal,
    cypher_string,
    push,
    script_text,
    statements,
    write_csv,
)
from store.export.property_graph import BROWSER_INITIAL_NODE_DISPLAY, Node, Rel, Subgraph, browser_warnings


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    return shared_store(spark, tmp_path_factory)


@pytest.fixture(scope="module")
def whole(store):
    return extract(store, store.table("vertices").select("id"))


def rels(sg, rel_type):
    return {(r.src, r.dst) for r in sg.rels if r.type is rel_type}


def test_labels_and_relationships_follow_the_model(whole):
    labels = {n.id: n.labels for n in whole.nodes}
    assert labels[NASTY["cell"]] == ("Strata", "Data", "Cell")
    assert labels[NASTY["job"]] == ("Strata", "Process", "Job")
    assert labels[NASTY["row"]] == ("Strata", "Data", "Row")
    derived = {(r.src, r.dst, r.props["via"]) for r in whole.rels if r.type is RelType.DERIVED}
    assert derived == {(NASTY["cell"], "out_row", NASTY["job"]), (NASTY["table"], "out_table", NASTY["job"])}
    assert rels(whole, RelType.FEEDS) == {(NASTY["cell"], NASTY["job"]), (NASTY["table"], NASTY["job"])}
    assert rels(whole, RelType.EMITS) == {(NASTY["job"], "out_row"), (NASTY["job"], "out_table")}
    # containment: parents (nearest only) and the cell under its row and its column
    assert rels(whole, RelType.UNDER) == {
        (NASTY["row"], NASTY["table"]), (NASTY["col"], NASTY["table"]), ("out_row", "out_table"),
        (NASTY["job"], "script"), (NASTY["cell"], NASTY["row"]), (NASTY["cell"], NASTY["col"]),
    }
    job = next(n for n in whole.nodes if n.id == NASTY["job"])
    assert job.props["version"] == 3  # typed from the catalog's attribute schema
    assert job.props["note"] == "says \"hi\"\\n 'there'"


def test_lineage_subgraph_adds_its_processes_and_only_touches_given_ids(store, spark):
    ids = spark.createDataFrame([(NASTY["cell"],), ("out_row",)], "id string")
    sg = extract(store, ids)
    assert {n.id for n in sg.nodes} == {NASTY["cell"], "out_row", NASTY["job"]}
    assert rels(sg, RelType.FEEDS) == {(NASTY["cell"], NASTY["job"])}
    assert rels(sg, RelType.UNDER) == set()  # row/column/table were not asked for


def test_node_budget_truncates_and_warns(store, spark):
    ids = store.table("vertices").select("id")
    sg = extract(store, ids, max_nodes=3)
    assert len(sg.nodes) == 3 and sg.truncated
    assert any("first 3" in w and "--max-nodes" in w for w in sg.warnings)


def test_unknown_ids_are_reported_not_invented(store, spark):
    ids = spark.createDataFrame([("nope",), ("out_row",)], "x string")
    sg = extract(store, ids)
    assert [n.id for n in sg.nodes] == ["out_row"]
    assert any("'nope'" in w for w in sg.warnings)


def test_every_string_column_of_a_result_counts_as_ids(store, spark):
    ids = spark.createDataFrame([("out_row", "lonely", 1)], "a string, b string, n int")
    assert {n.id for n in extract(store, ids).nodes} == {"out_row", "lonely"}
    with pytest.raises(UserError, match=r"columns are \['n', 'm'\]"):
        extract(store, spark.createDataFrame([(1, 2)], "n int, m int"))


def test_ids_as_a_list_or_a_dataframe_on_either_engine_give_the_same_subgraph(store, spark):
    from store import Store

    ids = [NASTY["cell"], "out_row", "nope", None, NASTY["job"]]
    frame = spark.createDataFrame([(i,) for i in ids], "id string")
    want = extract(store, frame)
    for engine in ("local", "spark"):
        st = Store.open(store.root, spark=spark, engine=engine)
        assert extract(st, ids) == want == extract(st, frame, max_nodes=1000)
        assert extract(st, ids, max_nodes=2, max_rels=1) == extract(store, frame, max_nodes=2, max_rels=1)


def test_rows_of_a_local_result_count_as_ids_like_a_dataframe():
    from store.export.subgraph import row_ids

    assert row_ids(("a", "b", "n"), [("out_row", "lonely", 1), (None, "x", 2)]) == ["out_row", "lonely", "x"]
    assert row_ids(("n",), [(1,), (None,), (True,)]) == ["1", "true"]
    assert row_ids(("id", "b"), [("a", "b")]) == ["a"]
    with pytest.raises(UserError, match=r"columns are \['n', 'm'\]"):
        row_ids(("n", "m"), [(1, 2)])


def test_browser_limits_warn():
    nodes = tuple(Node(f"n{i}", "data", "Row", "Row", (("id", f"n{i}"),))
                  for i in range(BROWSER_INITIAL_NODE_DISPLAY + 1))
    hub = tuple(Rel(RelType.UNDER, f"n{i}", "n0") for i in range(1, 102))
    text = " ".join(browser_warnings(Subgraph(nodes, hub)))
    assert "initialNodeDisplay" in text and "maxNeighbours" in text and "'n0' with 101" in text
    assert browser_warnings(Subgraph(nodes[:5], ())) == []


def test_every_statement_passes_neo4j_linter_and_script_round_trips(whole):
    items = [{"text": s.text, "parameters": ["rows"] if s.rows else []} for s in statements(whole)]
    script = script_text(whole, batch_size=2)
    items.append({"text": script, "parameters": []})
    results = lint(items)
    for item, res in zip(items, results, strict=True):
        assert problems(res) == [], item["text"][:200]
    # Neo4j's lexer finds string literals in the script; decoded they are exactly our values
    decoded = {decode_cypher_string(t) for t in results[-1]["strings"]}
    assert set(NASTY.values()) <= decoded
    assert "says \"hi\"\\n 'there'" in decoded
    # parameter values are never in statement text
    for s in statements(whole):
        assert not any(v in s.text for v in NASTY.values())


def test_awkward_strings_round_trip_through_neo4j_lexer():
    rng = random.Random(7)
    pool = "ab'\"\\`\n\r\t\b\f\x00\x1f\x7f\u0085\u2028\u2029é北🚀‮ {}$;:/*-"
    values = ["", "'", "\\", "\\'", "\\u0041", "a\\nb", "😀" * 3, "\ufeffbom"]
    values += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 12))) for _ in range(60)]
    # one value per statement: the highlighter's token positions count code points, so many
    # astral characters in one line could make tokens collide
    items = [{"text": f":param rows => {cypher_literal([v])};\nUNWIND $rows AS v RETURN v;"} for v in values]
    results = lint(items)
    for value, res in zip(values, results, strict=True):
        assert problems(res) == [], repr(value)
        assert [decode_cypher_string(t) for t in res["strings"]] == [value]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_cypher_string_decodes_back(text):
    lit = cypher_string(text)
    assert decode_cypher_string(lit) == text
    assert "\n" not in lit and "\r" not in lit  # one value never spans lines of the script


def test_csv_for_neo4j_admin_round_trips(whole, tmp_path):
    args = write_csv(whole, tmp_path)
    assert args[:6] == ["neo4j-admin", "database", "import", "full", "neo4j", "--multiline-fields=true"]
    node_files = [a.split("=", 1)[1] for a in args if a.startswith("--nodes=")]
    rel_files = [a.split("=", 1)[1] for a in args if a.startswith("--relationships=")]
    seen, labels = {}, {}
    for name in node_files:
        with (tmp_path / name).open(encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
        assert rows[0][:2] == ["id:ID", ":LABEL"]
        for row in rows[1:]:
            seen[row[0]] = dict(zip(rows[0], row, strict=True))
            labels[row[0]] = row[1]
    assert set(NASTY.values()) <= set(seen)
    assert labels[NASTY["cell"]] == "Strata;Data;Cell"
    assert seen[NASTY["job"]]["version:long"] == "3"
    edges = set()
    for name in rel_files:
        with (tmp_path / name).open(encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
        assert rows[0][:3] == [":START_ID", ":END_ID", ":TYPE"]
        edges |= {(r[0], r[1], r[2]) for r in rows[1:]}
    assert (NASTY["cell"], NASTY["job"], "FEEDS") in edges
    assert (NASTY["row"], NASTY["table"], "UNDER") in edges
    assert "neo4j-admin database import full" in (tmp_path / "IMPORT.txt").read_text()


def test_credentials_come_from_env_and_are_never_shown(monkeypatch):
    env = {"STRATA_NEO4J_URI": "neo4j://h:7687", "STRATA_NEO4J_USER": "u", "STRATA_NEO4J_PASSWORD": "pw-secret"}
    creds = Credentials.resolve(env=env)
    assert (creds.uri, creds.user, creds.password) == ("neo4j://h:7687", "u", "pw-secret")
    assert "pw-secret" not in repr(creds)
    assert Credentials.resolve(uri="bolt://x:1", password="p", env=env).uri == "bolt://x:1"
    with pytest.raises(UserError, match="no Neo4j server given"):
        Credentials.resolve(env={})
    with pytest.raises(UserError, match="not a Bolt URI"):
        Credentials.resolve(uri="http://localhost:7474", env={})


def test_push_to_a_closed_port_is_a_clear_error_without_the_password(whole, caplog):
    creds = Credentials("bolt://127.0.0.1:9", "neo4j", "pw-secret-123")
    with pytest.raises(UserError) as err:
        push(whole, creds)
    assert "cannot reach Neo4j at bolt://127.0.0.1:9" in str(err.value)
    assert "pw-secret-123" not in str(err.value) and "pw-secret-123" not in caplog.text


def test_live_push_is_idempotent_and_round_trips(whole, neo4j_server):
    from neo4j import GraphDatabase

    creds = Credentials(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    with GraphDatabase.driver(creds.uri, auth=(creds.user, creds.password)) as driver:
        driver.execute_query("MATCH (n) DETACH DELETE n")
        push(whole, creds)
        push(whole, creds)  # MERGE: a second export changes nothing
        ids = [i for i in NASTY.values()]
        recs, _, _ = driver.execute_query(
            "MATCH (n:Strata) WHERE n.id IN $ids RETURN n.id AS id, count(*) AS c", ids=ids)
        assert {r["id"]: r["c"] for r in recs} == {i: 1 for i in ids}
        recs, _, _ = driver.execute_query(
            "MATCH (:Strata {id: $s})-[r:FEEDS]->(:Strata {id: $p}) RETURN count(r) AS c",
            s=NASTY["cell"], p=NASTY["job"])
        assert recs[0]["c"] == 1
        recs, _, _ = driver.execute_query("MATCH (n:Strata) RETURN count(n) AS n")
        assert recs[0]["n"] == len(whole.nodes)
        recs, _, _ = driver.execute_query("MATCH ()-[r]->() RETURN count(r) AS n")
        assert recs[0]["n"] == len(whole.rels)


@pytest.mark.parametrize(
    "value, declared, expected",
    [("3", "int", 3), ("-7", "int", -7), (str(2**63), "int", str(2**63)), ("x", "int", "x"),
     ("1.5e-07", "float", 1.5e-07), ("nan", "float", "nan"), ("TRUE", "bool", True),
     ("false", "bool", False), ("yes", "bool", "yes"), ("3", "string", "3"), ("3", None, "3")],
    ids=lambda v: repr(v),
)
def test_attributes_are_typed_by_the_catalog_or_kept_as_text(value, declared, expected):
    from store.export.property_graph import convert_attr

    assert convert_attr(value, declared) == expected
    assert type(convert_attr(value, declared)) is type(expected)
