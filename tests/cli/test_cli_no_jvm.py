"""`strata` in a new process starts no JVM unless a step needs Spark (docs/cli.md, "Engines").

Every command here runs in a child process whose JAVA_HOME points nowhere: starting Spark there
fails at once (the first test shows it does), so a command that succeeds with the right output
started no JVM. The stores are built once, with the session's Spark.

The commands a local store answers on the DuckDB engine import no pyspark, py4j or pandas
either (`test_local_commands_import_no_spark_or_pandas`: each in a new process, which reports
the modules it imported).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.capture_helpers import TWEETS
from support.cli import strata
from support.movies import TABLE1
from support.paths import EXAMPLES, ROOT
from support.running_example import running_example

from store import Store

Q3 = next(text for qid, text, _, _ in TABLE1 if qid == "q3")


@pytest.fixture(scope="module")
def traced_root(spark, tmp_path_factory):
    from capture import Tracker

    base = tmp_path_factory.mktemp("no-jvm-trace")
    tracker = Tracker(spark, Store.open(str(base / "store"), spark=spark), pipeline="running-example", model=False)
    tracker.write(running_example(tracker.read.json(TWEETS, name="tweets")), str(base / "out"), format="parquet")
    return str(base / "store")


HEAVY = ("pandas", "py4j", "pyspark")
# `strata ARGS...` run in this child's own process (strata.cli.main, as the console script runs
# it), then the HEAVY modules the process imported written to the file named first.
PROBE = f"""\
import sys
from strata.cli import main
try:
    main(sys.argv[2:], prog_name="strata", standalone_mode=False)
finally:
    with open(sys.argv[1], "w") as f:
        f.write(" ".join(sorted({{m.split(".")[0] for m in sys.modules}} & {set(HEAVY)!r})))
"""


@pytest.fixture(scope="module")
def two_runs_root(spark, tmp_path_factory):
    """The running example captured twice (with its model, so that `strata diff` compares them)."""
    from capture import Tracker

    base = tmp_path_factory.mktemp("no-spark-runs")
    tracker = Tracker(spark, Store.open(str(base / "store"), spark=spark), pipeline="running-example")
    runs = [tracker.write(running_example(tracker.read.json(TWEETS, name="tweets")), str(base / f"out{i}"),
                          format="parquet").run for i in range(2)]
    return str(base / "store"), runs


def _child_env() -> dict[str, str]:
    child = {k: v for k, v in os.environ.items() if k not in ("STRATA_STORE", "STRATA_ENGINE", "STRATA_LOCAL_ROWS")}
    child["JAVA_HOME"] = "/nonexistent"
    return child


def _loaded(out: Path) -> list[str]:
    return out.read_text().split() if out.exists() else ["<the probe wrote nothing>"]


def _probe(tmp_path: Path, args: list[str]) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`strata args...` in a new process (no JVM possible): its result and the heavy modules it imported."""
    out = tmp_path / "loaded.txt"
    r = subprocess.run([sys.executable, "-c", PROBE, str(out), *args], env=_child_env(), capture_output=True,
                       text=True, timeout=300, cwd=ROOT)
    return r, _loaded(out)


def _probe_repl(tmp_path: Path, root: str) -> tuple[int | None, list[str]]:
    """`strata repl` started in a new process on a terminal and quit with \\q at its first prompt."""
    pexpect = pytest.importorskip("pexpect")
    out = tmp_path / "loaded.txt"
    child = pexpect.spawn(sys.executable, ["-c", PROBE, str(out), "--store", root, "repl"], env=_child_env(),
                          cwd=str(ROOT), encoding="utf-8", timeout=120, dimensions=(40, 120))
    try:
        child.expect("Ctrl-D to quit")
        child.sendline("\\q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return child.exitstatus, _loaded(out)


# name -> (the store's fixture, the arguments after --store STORE, what its output says)
LOCAL_COMMANDS = {
    "help": (None, ["--help"], "Usage: strata"),
    "info": ("movies_root", ["info", "--format", "json"], '"vertices"'),
    "query": ("movies_root", ["query", Q3], "ymovies_table"),
    "lineage": ("movies_root", ["lineage", "imdb_avatar_row", "--format", "json"], "imdb_avatar_row"),
    "trace": ("traced_root", ["trace", "/user/id_str = 'lp'", "--format", "json"], "tweets.json:"),
    "query-trace": ("traced_root", ["query", "TRACE MATCH '/user/id_str = ''lp'''"], "tweets.json:"),
    "verify": ("movies_root", ["verify"], "ok: the store is intact"),
    "diff": ("two_runs_root", ["diff", "RUN-1", "RUN-2", "--format", "json"], '"changed": []'),
    "show": ("movies_root", ["show", "imdb_avatar_row", "-o", "OUT.html"], "wrote "),
    "repl": ("movies_root", ["repl"], "Ctrl-D to quit"),
}


@pytest.mark.parametrize("command", [pytest.param(c, marks=() if f is None else pytest.mark.spark)
                                     for c, (f, _, _) in LOCAL_COMMANDS.items()])  # Spark builds the stores
def test_local_commands_import_no_spark_or_pandas(request, tmp_path, command):
    """Each command a local store answers on the DuckDB engine (and `--help`), in a new process:
    it answers, and neither pyspark, py4j nor pandas was imported in that process."""
    fixture, args, says = LOCAL_COMMANDS[command]
    root = request.getfixturevalue(fixture) if fixture else None
    if fixture == "two_runs_root":
        root, (a, b) = root
        args = [{"RUN-1": a, "RUN-2": b}.get(x, x) for x in args]
    args = [str(tmp_path / x) if x == "OUT.html" else x for x in args]
    if command == "repl":
        status, loaded = _probe_repl(tmp_path, root)
        assert status == 0, status
    else:
        r, loaded = _probe(tmp_path, (["--store", root] if root else []) + args)
        assert r.returncode == 0 and says in r.stdout, r.stdout + r.stderr
    assert loaded == [], f"strata {command} imported {loaded}"


def test_starting_spark_fails_in_these_processes(movies_root):
    """The guard works: where a step needs Spark (forced here), the command fails for want of Java."""
    for args, env in ((("--engine", "spark", "info"), None), (("info",), {"STRATA_ENGINE": "spark"})):
        r = strata(movies_root, *args, env=env)
        assert r.returncode == 1 and "JAVA_GATEWAY_EXITED" in r.stderr, r.stderr


def test_info_starts_no_jvm_and_says_what_spark_says(spark, movies_root):
    r = strata(movies_root, "info", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(json.dumps(Store.open(movies_root, spark=spark, engine="spark").info()))
    r = strata(movies_root, "info")
    assert r.returncode == 0 and "vertices per type" in r.stdout and "WebPage" in r.stdout, r.stderr


@pytest.mark.parametrize(("qid", "text", "expected", "warnings"), TABLE1, ids=[t[0] for t in TABLE1])
def test_table1_queries_start_no_jvm(movies_root, qid, text, expected, warnings):
    r = strata(movies_root, "query", text, "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {tuple(row) for row in out["rows"]} == expected and tuple(out["warnings"]) == warnings


def test_query_table_and_explain_start_no_jvm(movies_root):
    r = strata(movies_root, "query", Q3)
    assert r.returncode == 0 and "ymovies_table" in r.stdout and "(1 row)" in r.stdout, r.stderr
    r = strata(movies_root, "query", "explain " + Q3)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("engine: local (") and "ProvJoin t feeds a" in r.stdout
    r = strata(movies_root, "--engine", "local", "query", "--show-plan", Q3)
    assert r.returncode == 0 and r.stdout.startswith("engine: local (forced by --engine local)"), r.stderr


def test_user_errors_keep_their_exit_code_without_a_jvm(movies_root):
    r = strata(movies_root, "query", "select p.idd from WebPage p")
    assert r.returncode == 2 and "has no attribute 'idd'" in r.stderr and "JAVA" not in r.stderr
    r = strata(movies_root, "--conf", "oops", "info")
    assert r.returncode == 2 and "--conf expects KEY=VALUE" in r.stderr


def test_trace_and_select_from_trace_start_no_jvm(traced_root):
    r = strata(traced_root, "query", "TRACE MATCH '/user/id_str = ''lp'''")
    # each traced input item is headed by where it lives (file:line), read back on the driver
    assert r.returncode == 0 and re.search(r"tweets\.json:\d+  dataset:tweets#", r.stdout), r.stderr
    r = strata(traced_root, "trace", "/user/id_str = 'lp'", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert all(re.fullmatch(r".*tweets\.json:\d+", row[7]) for row in rows)
    # CSV, written column-wise: the same rows, each cell as the JSON gives it
    r = strata(traced_root, "trace", "/user/id_str = 'lp'", "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert list(csv.reader(io.StringIO(r.stdout)))[1:] == [["" if v is None else str(v) for v in row] for row in rows]
    r = strata(traced_root, "query", "SELECT path, count(*) AS n FROM TRACE(MATCH '//text') t GROUP BY path "
                                     "ORDER BY path", "--format", "csv")
    assert r.returncode == 0 and "text,5" in r.stdout.splitlines(), r.stderr
    r = strata(traced_root, "query", "EXPLAIN TRACE MATCH '/user'")
    assert r.returncode == 0 and "on the driver (no Spark job)" in r.stdout, r.stderr


def test_usage_and_audit_reports_start_no_jvm(traced_root):
    r = strata(traced_root, "report", "audit", "/user/id_str = 'lp'", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr
    r = strata(traced_root, "report", "usage", "//text = 'Hello World'", "/user/id_str", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr


def test_ingest_of_a_small_bundle_starts_no_jvm(spark, tmp_path):
    """`strata ingest` of a bundle within the local limit, into a local store, runs on the driver;
    the store it commits reads back the same with Spark."""
    root = str(tmp_path / "store")
    r = strata(root, "ingest", str(EXAMPLES / "movies.json"))
    assert r.returncode == 0, r.stderr
    st = Store.open(root, spark=spark)
    assert st.version == 1 and st.table("vertices").count() == 33
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "strata-bundle/1", "elements": [{"id": "imdb_page", "granularity": "Table"}]}))
    r = strata(root, "ingest", str(bad))
    assert r.returncode == 2 and "already in the store" in r.stderr and "JAVA" not in r.stderr, r.stderr
    assert Store.open(root, spark=spark).version == 1
