"""`strata export neo4j` against a real Neo4j server (the suite's `neo4j_server`, docs/neo4j.md).

Random stores (tests/support/strategies.py bundles) are ingested and indexed on the local engine
(no Spark); for each, the CLI pushes a lineage, a query's vertices and a component over Bolt
with credentials from the environment, and Cypher over the `neo4j` driver reads back what a user
would look at: the data nodes and DERIVED relationships must be `strata lineage`'s ancestors and
edges, the rows of `strata query`, and the weakly connected component a union-find over the
bundle's edges finds. The `.cypher` script, run statement by statement as cypher-shell does,
must build exactly the graph the live push built, and the graph read back must be the exported
`Subgraph` itself. The database is cleared between exports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as hst
from support.lineage_reference import union_find
from support.strategies import bundles

from store import Store
from store.export.neo4j import CONSTRAINT_NAME
from store.export.property_graph import DEFAULT_MAX_NODES
from store.export.selection import Selection
from strata.app import App, subgraph_for
from strata.cli import main

QUERIES = (
    "select d.id from AnyData d",
    "select d.id from AnyData d, AnyProcess p where d feeds p",
    "select d.id from AnyData d, AnyProcess p where p emits d",
)


@pytest.fixture(scope="module")
def driver(neo4j_server):
    from neo4j import GraphDatabase

    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as drv:
        yield drv


@pytest.fixture()
def env(neo4j_server, monkeypatch):
    """The server's credentials in the environment, as a user would export them."""
    monkeypatch.setenv("STRATA_NEO4J_URI", neo4j_server.uri)
    monkeypatch.setenv("STRATA_NEO4J_USER", neo4j_server.user)
    monkeypatch.setenv("STRATA_NEO4J_PASSWORD", neo4j_server.password)


def no_spark():
    raise AssertionError("the live export tests run on the local engine only")


def open_store(root: Path, bundle: dict) -> Store:
    st = Store.open(root, spark=no_spark, engine="local")
    st.ingest(bundle)
    return st


def strata(st: Store, *args: str):
    res = CliRunner().invoke(main, list(args), obj=App.of(st), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


def clear(driver) -> None:
    driver.execute_query("MATCH (n) DETACH DELETE n")


def read_graph(driver) -> tuple[dict, set]:
    """Every node (id -> (sorted labels, properties)) and relationship (type, src, dst, properties)."""
    recs, _, _ = driver.execute_query("MATCH (n) RETURN n.id AS id, labels(n) AS labels, properties(n) AS props")
    nodes = {r["id"]: (tuple(sorted(r["labels"])), _frozen(r["props"])) for r in recs}
    assert len(nodes) == len(recs), "two nodes share an id"
    recs, _, _ = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN type(r) AS type, a.id AS src, b.id AS dst, properties(r) AS props")
    rels = [(r["type"], r["src"], r["dst"], _frozen(r["props"])) for r in recs]
    assert len(rels) == len(set(rels)), "a relationship was created twice"
    return nodes, set(rels)


def _frozen(props: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in props.items()))


def data_ids(nodes: dict) -> set[str]:
    return {i for i, (labels, _) in nodes.items() if "Data" in labels}


def derived(rels: set) -> set[tuple[str, str, str]]:
    return {(s, dict(p)["via"], d) for t, s, d, p in rels if t == "DERIVED"}


def flow(rels: set) -> set[tuple[str, str, str]]:
    return {(t, s, d) for t, s, d, _ in rels if t in ("FEEDS", "EMITS")}


def reference_flow(edges, selected: set[str], exported: set[str]) -> set[tuple[str, str, str]]:
    """FEEDS and EMITS as docs/neo4j.md defines them: the edges of the store with both data ends
    selected, or with the process and one end selected, link each exported end to their
    process when that was exported."""
    out = set()
    for s, p, d in edges:
        if (s in selected and d in selected) or (p in selected and (s in selected or d in selected)):
            if p in exported and s in exported:
                out.add(("FEEDS", s, p))
            if p in exported and d in exported:
                out.add(("EMITS", p, d))
    return out


def expected(sg) -> tuple[dict, set]:
    """A `Subgraph` in the shape `read_graph` returns."""
    nodes = {n.id: (tuple(sorted(n.labels)), _frozen(n.props)) for n in sg.nodes}
    return nodes, {(r.type.value, r.src, r.dst, _frozen(r.props)) for r in sg.rels}


def data_vertices(bundle: dict) -> list[str]:
    """Ids that are data vertices of the bundle's store: edge ends, explicit vertices, data elements."""
    ids = {e[k] for e in bundle.get("edges", []) for k in ("src", "dst")}
    process_grans = set()
    for pair in bundle["gsets"].get("process", {}).get("contains", []):
        process_grans |= set(pair)
    process_grans |= set(bundle["gsets"].get("process", {}).get("granularities", []))
    ids |= {e["id"] for e in bundle.get("elements", []) if e["granularity"] not in process_grans}
    return sorted(ids)


# No shrinking (each step would ingest and export again): a failing example is printed as drawn.
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(bundle=bundles(), data=hst.data())
def test_live_export_matches_lineage_query_and_component(tmp_path_factory, driver, env, bundle, data):
    st = open_store(tmp_path_factory.mktemp("live") / "store", bundle)
    strata(st, "index")
    edges = [(e["src"], e["process"], e["dst"]) for e in bundle.get("edges", [])]
    item = data.draw(hst.sampled_from(sorted({d for _, _, d in edges}) or data_vertices(bundle)), label="item")

    # the lineage: `strata lineage` says which ancestors and edges; Neo4j holds exactly those
    lineage = json.loads(strata(st, "lineage", item, "--format", "json").stdout)
    clear(driver)
    out = strata(st, "export", "neo4j", item)
    assert "exported" in out.stdout and "bolt://" in out.stdout
    nodes, rels = read_graph(driver)
    assert data_ids(nodes) == {item, *lineage["ancestors"]}
    assert derived(rels) == {(e["src"], e["op"], e["dst"]) for e in lineage["edges"]}
    ops = {e["op"] for e in lineage["edges"]}
    assert set(nodes) - data_ids(nodes) == ops
    # the selection is the item, its ancestors and the processes of its lineage's edges
    assert flow(rels) == reference_flow(edges, {item, *lineage["ancestors"], *ops}, set(nodes))

    # a query: the rows of `strata query` are the data nodes
    query = data.draw(hst.sampled_from(QUERIES), label="query")
    rows = json.loads(strata(st, "query", query, "--format", "json").stdout)["rows"]
    clear(driver)
    strata(st, "export", "neo4j", "--query", query)
    nodes, rels = read_graph(driver)
    assert data_ids(nodes) == {r[0] for r in rows}
    selected = {r[0] for r in rows}
    assert derived(rels) == {(s, p, d) for s, p, d in edges if s in selected and d in selected}
    assert flow(rels) == reference_flow(edges, selected, set(nodes))

    # the component of the item: what a union-find over the bundle's edges puts with it
    root = union_find([item], [(s, d) for s, _, d in edges])
    component = {v for v, r in root.items() if r == root[item]}
    clear(driver)
    strata(st, "export", "neo4j", "--component", item)
    nodes, rels = read_graph(driver)
    assert data_ids(nodes) == component
    assert derived(rels) == {(s, p, d) for s, p, d in edges if s in component}
    ops = {p for s, p, _ in edges if s in component}
    assert set(nodes) - component == ops
    assert flow(rels) == reference_flow(edges, component | ops, set(nodes))


# ------------------------------------------------------------------------ the script vs the push

PARAM = re.compile(r":param\s+(\w+)\s*=>\s*(.*);\s*$")


def run_script(driver, text: str) -> int:
    """Run a `.cypher` script as cypher-shell does: `:param NAME => EXPR;` evaluates EXPR on the
    server and keeps the value as parameter NAME; other lines, up to a line that ends with `;`,
    are one statement. Comments (`//`) and blank lines are skipped. Returns the statements run."""
    params: dict = {}
    pending: list[str] = []
    ran = 0
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("//")):
            continue
        if not pending and line.startswith(":"):
            m = PARAM.fullmatch(line)
            assert m, f"not a :param line: {line[:80]}"
            recs, _, _ = driver.execute_query(f"RETURN {m.group(2)} AS value")
            params[m.group(1)] = recs[0]["value"]
            continue
        pending.append(line)
        if line.rstrip().endswith(";"):
            statement = "\n".join(pending).rstrip().removesuffix(";")
            driver.execute_query(statement, parameters_=params)
            pending, ran = [], ran + 1
    assert not pending, "the script ends inside a statement"
    return ran


def constraint(driver) -> list:
    recs, _, _ = driver.execute_query(
        "SHOW CONSTRAINTS YIELD name, type, labelsOrTypes, properties WHERE name = $name "
        "RETURN type, labelsOrTypes, properties", name=CONSTRAINT_NAME)
    return [dict(r) for r in recs]


@pytest.mark.parametrize("batch", [1, 200])
def test_script_builds_the_graph_the_push_builds_and_both_are_idempotent(tmp_path, driver, env, batch):
    from support.export_helpers import BUNDLE, NASTY

    st = open_store(tmp_path / "store", BUNDLE)
    strata(st, "index")
    sel = Selection(component=NASTY["cell"])
    want = expected(subgraph_for(st, sel, DEFAULT_MAX_NODES))

    clear(driver)
    strata(st, "export", "neo4j", "--component", NASTY["cell"], "--batch-size", str(batch))
    pushed = read_graph(driver)
    assert pushed == want  # every id, label, property and relationship as exported
    strata(st, "export", "neo4j", "--component", NASTY["cell"])
    assert read_graph(driver) == pushed  # MERGE: pushing again adds nothing

    script = tmp_path / "component.cypher"
    strata(st, "export", "neo4j", "--component", NASTY["cell"], "-o", str(script), "--batch-size", str(batch))
    text = script.read_text(encoding="utf-8")
    clear(driver)
    assert run_script(driver, text) > 0
    assert read_graph(driver) == pushed
    run_script(driver, text)
    assert read_graph(driver) == pushed
    assert constraint(driver) == [{"type": "UNIQUENESS", "labelsOrTypes": ["Strata"], "properties": ["id"]}]


def test_wrong_password_is_a_clear_error(tmp_path, neo4j_server, monkeypatch):
    from support.export_helpers import BUNDLE

    st = open_store(tmp_path / "store", BUNDLE)
    monkeypatch.setenv("STRATA_NEO4J_PASSWORD", "not-the-password")
    res = CliRunner().invoke(main, ["export", "neo4j", "--id", "lonely", "--uri", neo4j_server.uri],
                             obj=App.of(st), catch_exceptions=False)
    assert res.exit_code == 2
    assert f"Neo4j at {neo4j_server.uri} refused user 'neo4j'" in res.output
    assert "not-the-password" not in res.output


@pytest.mark.slow  # a second JVM for neo4j-admin, and a second server
def test_csv_files_import_with_neo4j_admin_into_the_graph_the_push_builds(tmp_path, driver, env):
    """The CSV target's printed command, run by neo4j-admin (the server's own jars) into a new
    server folder; the server started on it holds the graph the live push built."""
    from neo4j import GraphDatabase
    from support.export_helpers import BUNDLE, NASTY
    from support.neo4j_server import Server, admin

    st = open_store(tmp_path / "store", BUNDLE)
    strata(st, "index")
    clear(driver)
    strata(st, "export", "neo4j", "--component", NASTY["cell"])
    pushed = read_graph(driver)

    folder = tmp_path / "csv"
    info = json.loads(strata(st, "export", "neo4j", "--component", NASTY["cell"], "-o", str(folder),
                             "--format", "json").stdout)
    command = info["command"].split()
    assert command[:5] == ["neo4j-admin", "database", "import", "full", "neo4j"]
    res = admin(tmp_path / "imported", command[1:], cwd=folder)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"{len(pushed[0])} nodes" in res.stdout and f"{len(pushed[1])} relationships" in res.stdout

    server = Server.start(tmp_path / "imported", "imported-pw-1")
    try:
        with GraphDatabase.driver(server.uri, auth=server.auth) as imported:
            assert read_graph(imported) == pushed
    finally:
        server.stop()
