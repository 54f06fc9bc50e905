"""The `strata` command's contract (docs/cli.md): exit codes, messages, JSON shapes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iql.errors import IqlSemanticError
from store.errors import StoreError, UserError
from strata.app import App
from strata.cli import main


@pytest.fixture()
def run(spark, store_path):
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, ["--store", str(store_path), *args], catch_exceptions=False)

    return invoke


def test_ingest_then_info_json(run, examples_dir):
    r = run("ingest", str(examples_dir / "movies.json"))
    assert r.exit_code == 0, r.output
    assert "committed version 1" in r.stderr
    r = run("info", "--format", "json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["version"] == 1 and info["commits"] == 1
    assert info["types"]["Cell"]["granularities"] == ["Column", "Row"]
    assert info["types"]["WebPage"]["attributes"] == {"authScore": "int", "license": "string"}
    assert info["vertices"]["data"]["Version"] == 2
    assert "MaxData" in info["granularities"]["data"]


def test_info_table_is_readable(run, examples_dir):
    run("ingest", str(examples_dir / "movies.json"))
    r = run("info")
    assert r.exit_code == 0
    assert "vertices per type" in r.stdout and "WebPage" in r.stdout


def test_invalid_bundle_exits_2_with_a_message_and_no_traceback(run, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "strata-bundle/1",
                               "elements": [{"id": "x", "granularity": "Nope"}]}))
    r = run("ingest", str(bad))
    assert r.exit_code == 2
    assert "section 'elements', record 0 (id 'x'): unknown granularity 'Nope'" in r.stderr
    assert "Traceback" not in r.output and r.stdout == ""


def test_malformed_json_names_line_and_column(run, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "strata-bundle/1",\n "elements": [}')
    r = run("ingest", str(bad))
    assert r.exit_code == 2
    assert "not valid JSON at line 2, column" in r.stderr


def test_missing_file_and_bad_conf_are_user_errors(run, spark, store_path):
    r = run("ingest", "does-not-exist.json")
    assert r.exit_code == 2 and "no such file: does-not-exist.json" in r.stderr
    r = CliRunner().invoke(main, ["--store", str(store_path), "--conf", "oops", "info"])
    assert r.exit_code == 2 and "--conf expects KEY=VALUE" in r.stderr


def test_help_lists_every_command_of_the_contract():
    r = CliRunner().invoke(main, ["--help"])
    for command in ("ingest", "info", "index", "query", "lineage", "repl", "export", "demo"):
        assert command in r.stdout


@pytest.mark.parametrize(
    "error, code, shown",
    [
        (UserError("bad input", hint="fix it"), 2, "strata: bad input\n  hint: fix it\n"),
        (IqlSemanticError("unknown type 'WebPag'"), 2, "iql: unknown type 'WebPag'\n"),
        (StoreError("cannot read the manifest"), 1, "strata: cannot read the manifest\n"),
        (RuntimeError("boom"), 1, "strata: internal error: RuntimeError: boom\n"
                                  "  (run with --debug for the traceback)\n"),
    ],
    ids=["user", "iql", "store", "internal"],
)
def test_errors_become_exit_codes_in_one_place(monkeypatch, store_path, error, code, shown):
    def broken(self):
        raise error

    monkeypatch.setattr(App, "store", broken)
    r = CliRunner().invoke(main, ["--store", str(store_path), "info"])
    assert (r.exit_code, r.stderr, r.stdout) == (code, shown, "")
    r = CliRunner().invoke(main, ["--store", str(store_path), "--debug", "info"])
    assert r.exit_code == code and "Traceback" in r.stderr and "in broken" in r.stderr


def test_the_help_lists_every_command_with_its_own_short_help_without_importing_it():
    """`strata --help` lists the lazy commands from LAZY_COMMANDS (no import): each line is the
    command's own short help."""
    import click

    from strata.cli import LAZY_COMMANDS

    ctx = click.Context(main)
    for name, (_, short) in LAZY_COMMANDS.items():
        assert short == main.get_command(ctx, name).get_short_help_str(limit=1000), name
    out = CliRunner().invoke(main, ["--help"]).output
    assert all(name in out for name in LAZY_COMMANDS)
