"""`strata export neo4j` and `strata show` through the `strata` command, on a real store."""

from __future__ import annotations

import html
import json
import re

import pytest
from click.testing import CliRunner
from support.export_helpers import NASTY, lint, problems, shared_store

from strata.app import App
from strata.cli import main


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    return shared_store(spark, tmp_path_factory)


def run(store, *args):
    """`strata COMMAND ARGS...` around the open store (errors become exit codes in strata.cli)."""
    return CliRunner().invoke(main, list(args), obj=App.of(store), catch_exceptions=False)


def test_show_writes_a_picture_of_a_lineage(store, tmp_path):
    out = tmp_path / "pic.html"
    res = run(store, "show", "out_row", "-o", str(out))
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    drawn = set(re.findall(r'<g class="node \w+" data-id="([^"]*)"', page))
    # out_row's lineage: the cell it was derived from and the job that did it
    assert drawn == {"out_row", "cell`with`backticks;--//", "job\t$rows {x} \u0007bell"}
    assert "file://" in res.output


def test_export_cypher_script_passes_the_linter(store, tmp_path):
    out = tmp_path / "lineage.cypher"
    res = run(store, "export", "neo4j", "--query", "select t.id from Table t", "-o", str(out),
              "--format", "json")
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["target"] == "cypher" and info["labels"] == {"Data:Table": 3, "Process:Job": 1}
    (result,) = lint([{"text": out.read_text(encoding="utf-8"), "parameters": []}])
    assert problems(result) == []


def test_export_csv_by_ids(store, tmp_path):
    res = run(store, "export", "neo4j", "--to", "csv", "-o", str(tmp_path / "csv"),
              "--id", NASTY["row"], "--id", NASTY["table"])
    assert res.exit_code == 0, res.output
    assert "neo4j-admin database import full" in res.output
    assert (tmp_path / "csv" / "rels_UNDER.csv").read_text(encoding="utf-8").count("UNDER") == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["neo4j", "-o", "x.cypher"], "say which subgraph"),
        (["neo4j", "a", "--query", "select t.id from Table t", "-o", "x.cypher"], "say which subgraph"),
        (["neo4j", "--id", "a", "--to", "csv"], "needs --output"),
        (["neo4j", "--id", "a"], "no Neo4j server given"),
        (["neo4j", "--id", "out_row", "--uri", "bolt://127.0.0.1:9", "--password", "pw-xyz-secret"],
         "cannot reach Neo4j"),
    ],
    ids=["nothing-selected", "two-selections", "csv-without-output", "no-server", "closed-port"],
)
def test_user_errors_exit_2_with_a_message(store, args, message, monkeypatch):
    for var in ("STRATA_NEO4J_URI", "STRATA_NEO4J_USER", "STRATA_NEO4J_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    res = run(store, "export", *args)
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert "pw-xyz-secret" not in res.output


def test_show_budget_warns_on_stderr(store, tmp_path):
    res = run(store, "show", "--query", "select t.id from Table t", "--max-nodes", "2",
              "-o", str(tmp_path / "p.html"))
    assert res.exit_code == 0
    assert "warning: more than 2 vertices" in res.stderr
    assert "(2 nodes" in res.stdout


def test_registered_in_the_strata_cli(store, tmp_path):
    out = tmp_path / "via-main.cypher"
    res = CliRunner().invoke(main, ["--store", str(store.root), "export", "neo4j", "--id", "lonely",
                                    "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "'lonely'" in out.read_text(encoding="utf-8")
    res = CliRunner().invoke(main, ["--store", str(store.root), "show", "no-such-item", "-o",
                                    str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "no-such-item" in res.output


def test_component_selection_needs_the_index_then_exports_the_component(store, tmp_path):
    out = tmp_path / "cc.html"
    res = run(store, "show", "--component", "out_row", "-o", str(out))
    if res.exit_code == 2:  # the shared store has no index yet: that is a clear user error
        assert "strata index" in res.output
        from store.indexing import build_index

        build_index(store)
        res = run(store, "show", "--component", "out_row", "-o", str(out))
    assert res.exit_code == 0, res.output
    drawn = set(re.findall(r'data-id="([^"]*)"', out.read_text(encoding="utf-8")))
    assert {"out_row", NASTY["cell"]} <= {html.unescape(d) for d in drawn}
    assert "lonely" not in drawn  # in no edge: not in this component


SELECTIONS = [
    ("item", "out_row"), ("forward", NASTY["cell"]), ("ids", (NASTY["row"], NASTY["table"], "nope")),
    ("query", "select t.id from Table t"), ("query", "select d.id, p.id from AnyData d, Job p where d feeds p"),
]


def _selection(kind, value):
    from store.export.selection import Selection

    if kind == "item":
        return Selection(item=value)
    if kind == "forward":
        return Selection(item=value, forward=True)
    if kind == "ids":
        return Selection(ids=value)
    return Selection(query=value)


def test_both_engines_select_and_extract_the_same_subgraphs(store, spark):
    """`--engine local` (DuckDB, ids as lists) and `--engine spark` (Spark jobs, a Spark query's
    DataFrame): the same nodes, relationships and warnings for every kind of selection."""
    from store import Store
    from store.engine import Engine
    from store.export.selection import select_ids
    from store.export.subgraph import choose_reader
    from strata.app import subgraph_for

    local, on_spark = (Store.open(store.root, spark=spark, engine=e) for e in ("local", "spark"))
    assert choose_reader(local).engine is Engine.LOCAL and choose_reader(on_spark).engine is Engine.SPARK
    for kind, value in SELECTIONS:
        sel = _selection(kind, value)
        for budget in (1000, 2) if kind != "query" else (2,):
            a, b = subgraph_for(local, sel, budget), subgraph_for(on_spark, sel, budget)
            assert a == b, (kind, value, budget)
            assert a.nodes, (kind, value)
    import iql

    query = _selection("query", "select t.id from Table t")
    assert isinstance(select_ids(local, query, lambda text: iql.run(local, text)), list)
    assert hasattr(select_ids(on_spark, query, lambda text: iql.run(on_spark, text)), "sparkSession")
    nasty = subgraph_for(local, _selection("ids", tuple(NASTY.values())), 1000)
    assert {n.id for n in nasty.nodes} == set(NASTY.values())  # awkward ids reach DuckDB as data


def test_export_on_a_local_store_starts_no_spark(store, tmp_path):
    """With engine auto, `show` and `export` of a lineage, ids or a query read with DuckDB only."""
    from store import Store

    def no_spark():
        raise AssertionError("export on a local store started Spark")

    st = Store.open(store.root, spark=no_spark, engine="auto")
    res = run(st, "show", "out_row", "-o", str(tmp_path / "a.html"))
    assert res.exit_code == 0, res.output
    res = run(st, "export", "neo4j", "--query", "select t.id from Table t", "-o", str(tmp_path / "b.cypher"))
    assert res.exit_code == 0, res.output
    res = run(st, "show", "--id", NASTY["cell"], "--id", "nope", "-o", str(tmp_path / "c.html"))
    assert res.exit_code == 0 and "'nope'" in res.stderr
    assert not st.spark_started
