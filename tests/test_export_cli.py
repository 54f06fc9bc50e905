"""`strata export neo4j` and `strata show` through the `strata` command, on a real store."""

from __future__ import annotations

import html
import json
import re

import pytest
from click.testing import CliRunner
from export_helpers import NASTY, lint, problems, shared_store

from strata.cli import App, main


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
        from store.index.build import build_index

        build_index(store)
        res = run(store, "show", "--component", "out_row", "-o", str(out))
    assert res.exit_code == 0, res.output
    drawn = set(re.findall(r'data-id="([^"]*)"', out.read_text(encoding="utf-8")))
    assert {"out_row", NASTY["cell"]} <= {html.unescape(d) for d in drawn}
    assert "lonely" not in drawn  # in no edge: not in this component
