"""`strata` in a new process starts no JVM unless a step needs Spark (docs/cli.md, "Engines").

Every command here runs in a child process whose JAVA_HOME points nowhere: starting Spark there
fails at once (the first test shows it does), so a command that succeeds with the right output
started no JVM. The stores are built once, with the session's Spark.
"""

from __future__ import annotations

import json
import re

import pytest
from support.capture_helpers import TWEETS
from support.cli import strata
from support.movies import TABLE1
from support.paths import EXAMPLES
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
    assert all(re.fullmatch(r".*tweets\.json:\d+", row[7]) for row in json.loads(r.stdout)["rows"])
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
