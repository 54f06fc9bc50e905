"""`strata diff A B` (store/diff.py, docs/verify.md "Diffing runs") on cases with known answers:
a pipeline captured three times (the same input, then the input edited), and OpenLineage-shaped
runs and dataset versions (Job ⊇ Run, Dataset ⊇ DatasetVersion) ingested as a bundle."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from store import Store
from strata.cli import main


def diff(root: str, a: str, b: str) -> dict:
    r = CliRunner().invoke(main, ["--store", root, "diff", a, b, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _ids(entries, role=None):
    return sorted(e["id"] for e in entries if role is None or e["role"] == role)


@pytest.fixture(scope="module")
def captured(spark, tmp_path_factory):
    """Runs 1 and 2 read the same file; before run 3 one tweet's text is edited (same length, so
    the other lines keep their offsets) and the last tweet is deleted."""
    from support.capture_helpers import TWEETS
    from support.running_example import running_example

    from capture import Tracker

    base = tmp_path_factory.mktemp("diff")
    lines = open(TWEETS, encoding="utf-8").read().splitlines()
    src = base / "tweets.json"
    st = Store.open(str(base / "store"), spark=spark)
    tracker = Tracker(spark, st, pipeline="running-example")
    runs = []
    for i in range(3):
        if i != 1:
            if i == 2:
                lines[3] = lines[3].replace("This is me", "This is Me")
                lines = lines[:-1]
            src.write_text("\n".join(lines) + "\n", encoding="utf-8")
        info = tracker.write(running_example(tracker.read.json(str(src), name="tweets")), str(base / f"out{i}"),
                             format="parquet")
        runs.append(info.run)
    return st.root, runs


def test_two_runs_over_the_same_input_do_not_differ(captured):
    root, (r1, r2, _) = captured
    d = diff(root, r1, r2)
    assert (d["a"], d["b"]) == (r1, r2)
    assert d["only_a"] == d["only_b"] == d["changed"] == [] and d["warnings"] == []
    assert d["shared"] == {"upstream": 1, "operator": 8, "input": 5, "output": 3}


def test_an_edited_input_explains_the_changed_outputs(captured):
    root, (r1, _, r3) = captured
    d = diff(root, r1, r3)
    assert d["shared"]["operator"] == 8 and d["shared"]["output"] == 1  # Lauren Smith's group
    # the file was rewritten: every input item has a new id (file, modification time, offset)
    assert len(_ids(d["only_a"], "input")) == 5 and len(_ids(d["only_b"], "input")) == 4
    assert "share no input item" in d["warnings"][0]
    changed = {c["paths"][0].split("[")[0]: c for c in d["changed"]}
    assert all(c["role"] == "output" and c["type"] == "Item" for c in d["changed"])
    by_user = {}
    for c in d["changed"]:
        by_user[tuple(sorted(c["values"]))] = c
    assert sorted(by_user) == [("tweets[0].text", "tweets[2].text"), ("tweets[3].text",)]
    jm = by_user[("tweets[0].text", "tweets[2].text")]
    assert jm["values"]["tweets[0].text"] == ["This is me @jm", "This is Me @jm"]
    assert jm["input_paths"] == ["tweets:text"]  # the source path the changed texts were made from
    lp = by_user[("tweets[3].text",)]
    assert lp["values"]["tweets[3].text"] == ["Hello @lp", None]  # the deleted tweet mentioned lp
    assert len(lp["inputs_only_a"]) == 4 and len(lp["inputs_only_b"]) == 3
    assert all(c["id"].startswith(r1) and c["id_b"].startswith(r3) for c in changed.values())


def test_a_clean_captured_store_verifies(captured):
    root, _ = captured
    r = CliRunner().invoke(main, ["--store", root, "verify", "--format", "json"])
    rep = json.loads(r.stdout)
    assert r.exit_code == 0 and rep["ok"] and rep["versions"] == 3 and rep["checked"]["files"] > 10


def _dv(name, v):
    return {"id": f"db.{name}@{v}", "granularity": "DatasetVersion", "parents": [f"db.{name}"],
            "attrs": {"namespace": "db", "name": name, "version": v}}


@pytest.fixture(scope="module")
def openlineage(tmp_path_factory):
    """Job etl's run r-1 reads raw v1 and writes orders v1; r-2 reads raw v2 and customers v1 and
    writes orders v2; r-3 (job other) writes orders v3 from raw v2."""
    st = Store.open(str(tmp_path_factory.mktemp("ol") / "store"), spark=lambda: 1 / 0)
    st.ingest({
        "format": "strata-bundle/1",
        "gsets": {"data": {"contains": [["DatasetVersion", "Dataset"]]}, "process": {"contains": [["Run", "Job"]]}},
        "elements": [
            *({"id": f"db.{n}", "granularity": "Dataset", "attrs": {"namespace": "db", "name": n}}
              for n in ("raw", "customers", "orders")),
            _dv("raw", 1), _dv("raw", 2), _dv("customers", 1), _dv("orders", 1), _dv("orders", 2), _dv("orders", 3),
            {"id": "job:etl", "granularity": "Job", "attrs": {"namespace": "db", "name": "etl"}},
            {"id": "job:other", "granularity": "Job", "attrs": {"namespace": "db", "name": "other"}},
            {"id": "run-1", "granularity": "Run", "parents": ["job:etl"], "attrs": {"runId": "r-1"}},
            {"id": "run-2", "granularity": "Run", "parents": ["job:etl"], "attrs": {"runId": "r-2"}},
            {"id": "run-3", "granularity": "Run", "parents": ["job:other"], "attrs": {"runId": "r-3"}}],
        "edges": [{"src": "db.raw@1", "process": "run-1", "dst": "db.orders@1"},
                  {"src": "db.raw@2", "process": "run-2", "dst": "db.orders@2"},
                  {"src": "db.customers@1", "process": "run-2", "dst": "db.orders@2"},
                  {"src": "db.raw@2", "process": "run-3", "dst": "db.orders@3"}]})
    return st.root


def test_two_runs_of_a_job_by_run_id(openlineage):
    d = diff(openlineage, "r-1", "r-2")
    assert (d["a"], d["b"]) == ("run-1", "run-2") and d["only_a"] == [] and d["warnings"] == []
    assert [(e["role"], e["type"], e["id"], e.get("version")) for e in d["only_b"]] == [
        ("upstream", "Dataset", "db.customers", None), ("input", "DatasetVersion", "db.customers@1", 1)]
    assert {e["role"]: (e["namespace"], e["name"], e["version"], e["version_b"]) for e in d["changed"]} == {
        "input": ("db", "raw", 1, 2), "output": ("db", "orders", 1, 2)}
    out = next(e for e in d["changed"] if e["role"] == "output")
    assert (out["inputs_only_a"], out["inputs_only_b"]) == (["db.raw@1"], ["db.customers@1", "db.raw@2"])


def test_a_dataset_at_two_versions(openlineage):
    d = diff(openlineage, "orders@1", "orders@2")
    assert (d["a"], d["b"]) == ("db.orders@1", "db.orders@2")
    assert d["shared"]["operator"] == 1  # a run of job etl on both sides
    assert _ids(d["only_b"]) == ["db.customers", "db.customers@1"]
    d = diff(openlineage, "orders@2", "db/orders@3")
    assert _ids(d["only_a"], "operator") == ["run-2"] and _ids(d["only_b"], "operator") == ["run-3"]
    assert _ids(d["only_a"], "input") == ["db.customers@1"] and d["shared"]["input"] == 1


def test_runs_of_different_jobs_warn_and_bad_names_exit_2(openlineage):
    d = diff(openlineage, "r-1", "r-3")
    assert "different pipelines or jobs" in d["warnings"][0]
    for a, b, says in (("r-1", "nope", "unknown run or dataset version 'nope'"),
                       ("r-1", "orders@1", "a process element and orders@1 a data element"),
                       ("orders@9", "orders@1", "unknown run or dataset version 'orders@9'")):
        r = CliRunner().invoke(main, ["--store", openlineage, "diff", a, b])
        assert r.exit_code == 2 and says in r.stderr and "Traceback" not in r.output, r.output
    table = CliRunner().invoke(main, ["--store", openlineage, "diff", "r-1", "r-2"])
    assert table.exit_code == 0 and "version 1 → 2" in table.stdout


def test_verify_and_diff_start_no_jvm(openlineage):
    """In a new process that cannot start a JVM (as tests/cli/test_cli_no_jvm.py does)."""
    from support.cli import strata

    r = strata(openlineage, "verify")
    assert r.returncode == 0 and r.stdout.startswith("ok:"), r.stderr
    r = strata(openlineage, "diff", "r-1", "r-2", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["b"] == "run-2", r.stderr


def test_source_paths_follow_the_manipulations_back(captured):
    """user.name of the result is made from the tweet's user.name (upper branch) and a mentioned
    user's name (lower branch, through the flatten); the collected texts from text."""
    from capture.storing.runs import read_head, source_paths

    root, (r1, _, _) = captured
    head = read_head(Store.open(root, spark=lambda: 1 / 0), r1)
    assert source_paths(head, "user.name") == ["tweets:user.name", "tweets:user_mentions.[pos].name"]
    assert source_paths(head, "user") == ["tweets:user.id_str", "tweets:user.name",
                                          "tweets:user_mentions.[pos].id_str", "tweets:user_mentions.[pos].name"]
    assert source_paths(head, "tweets[1].text") == ["tweets:text"]
    assert source_paths(head, "nothing") == []


def test_runs_of_real_openlineage_events(tmp_path, examples_dir):
    """The OpenLineage ingest's own store (examples/openlineage/orders.jsonl): two `extract` runs
    read the same `raw` version and each made a `stg` version; only the first carried a column
    lineage facet (stg.amount from raw.amount DIRECT/IDENTITY and raw.status INDIRECT/FILTER: two
    transformations of one run, which the diff keeps apart)."""
    root = str(tmp_path / "ol")
    res = CliRunner().invoke(main, ["--store", root, "ingest", "--format", "openlineage",
                                    str(examples_dir / "openlineage" / "orders.jsonl")])
    assert res.exit_code == 0, res.output
    run = "00000000-0000-0000-0000-00000000000{}".format
    out = diff(root, run(1), run(3))
    assert (out["a"], out["b"], out["warnings"]) == (f"run:{run(1)}", f"run:{run(3)}", [])
    assert out["shared"] == {"upstream": 1, "operator": 0, "input": 1, "output": 1}
    assert _ids(out["only_a"], "operator") == [f"run:{run(1)}/DIRECT/IDENTITY", f"run:{run(1)}/INDIRECT/FILTER"]
    assert _ids(out["only_a"], "input") == ["dataset:warehouse:raw@initial#amount",
                                            "dataset:warehouse:raw@initial#status"]
    assert (out["only_b"], out["changed"]) == ([], [])
    assert diff(root, run(1), run(2))["warnings"]  # extract vs report: different jobs
