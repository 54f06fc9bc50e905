"""OpenLineage's Spark listener beside `strata capture`: one store, linked through the datasets.

The job of examples/capture, then tests/support/tweets_table_job.py (its result saved as a
catalog table and read back by name), run twice: in a new process with OpenLineage's listener
(its file transport; the jar from `make openlineage-jar`), and captured in the suite's session.
The listener's events are ingested with `strata ingest --format openlineage` into the store that
holds the captured runs; from both runs' outputs the lineage reaches the one `Dataset` of the
input file. The captured runs exported (`strata export openlineage`) and ingested into the same
store name the table as the listener does, by its location: the listener's runs and the
captured ones write and read versions of one `Dataset` (docs/openlineage.md, "Beside
OpenLineage's Spark listener").
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys

import pytest
from click.testing import CliRunner
from support.ol_listener import column_lineage, compare, listener_conf, listener_jar, read_events, submit_args
from support.paths import EXAMPLES, ROOT, TESTS

import iql
from capture import capturing
from capture.storing.ol_names import OLName, TableFacts, table_dataset
from capture.storing.to_openlineage import captured_events, run_uuid
from store import Store
from store.spark.session import session_conf
from strata.cli import main

JOB = EXAMPLES / "capture" / "tweets_job.py"
TABLE_JOB = TESTS / "support" / "tweets_table_job.py"
TABLE = "ol_tweets_by_user"  # the table TABLE_JOB saves
TWEETS = EXAMPLES / "capture" / "tweets.json"

pytestmark = pytest.mark.spark

# runs scripts one after the other in one Python process, as `python script args` each would;
# ["wait", file] waits until the file exists
_SCRIPTS = """import os, runpy, sys, time
for sys.argv in {argvs!r}:
    if sys.argv[0] == "wait":
        t0 = time.monotonic()
        while not os.path.exists(sys.argv[1]) and time.monotonic() - t0 < 300:
            time.sleep(0.1)
    else:
        runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _with_listener(argvs: list[list[str]], events, warehouse, cwd) -> subprocess.Popen:
    """The scripts (`argvs`: each script and its arguments, or ["wait", file]) in one process with
    the listener, Spark configured as `strata` configures it, its warehouse at `warehouse`."""
    conf = {**session_conf("local[1]"), "spark.sql.shuffle.partitions": "1", "spark.sql.warehouse.dir": str(warehouse),
            **listener_conf(listener_jar(), events)}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_SUBMIT_ARGS": submit_args(conf),
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.Popen([sys.executable, "-c", _SCRIPTS.format(argvs=argvs)], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run(script, *args) -> None:
    argv = sys.argv
    sys.argv = [str(script), *map(str, args)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv


def _ids(st, query: str) -> set[str]:
    return {x[0] for x in iql.run(st, query).rows()}


def test_listener_and_captured_runs_reach_the_same_input_dataset(spark, tmp_path):
    if listener_jar() is None:
        pytest.skip("OpenLineage's listener jar is not fetched: make openlineage-jar")
    events, out_l, out_c = tmp_path / "events.jsonl", tmp_path / "by_user_listener", tmp_path / "by_user_captured"
    warehouse = tmp_path / "warehouse"  # the listener's; the table lies under it
    location, captured = warehouse / TABLE, tmp_path / "captured.done"
    job = _with_listener([[str(JOB), str(TWEETS), str(out_l)],
                          ["wait", str(captured)],  # both write the table's location: the captured job first
                          [str(TABLE_JOB), str(out_l), str(location), str(tmp_path / "counts_listener")]],
                         events, warehouse, tmp_path)  # its JVM starts while the capture runs here
    store = Store.open(str(tmp_path / "store"), spark=spark)
    try:
        with capturing(spark, store, pipeline="tweets_job") as cap:
            _run(JOB, TWEETS, out_c)
        with capturing(spark, store, pipeline="tweets_table_job") as tab:
            _run(TABLE_JOB, out_c, location, tmp_path / "counts_captured")
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {TABLE}")
        captured.touch()
    log, _ = job.communicate(timeout=180)
    assert job.returncode == 0, log[-3000:]
    assert len(cap.runs) == 1 and len(tab.runs) == 2

    exported = tmp_path / "captured.jsonl"
    r = CliRunner().invoke(main, ["--store", store.root, "export", "openlineage", "--out", str(exported)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["--store", store.root, "ingest", "--format", "openlineage", str(events),
                                  str(exported)])
    assert r.exit_code == 0, r.output
    st = Store.open(store.root, spark=spark)
    source = f"dataset:{TWEETS}"  # OpenLineage's file/<path> and capture's source name: one element
    # the listener's run: from the version of its output back through versions to the input's
    listened = iql.run(st, "select distinct d.id from DatasetVersion v, DatasetVersion x, Dataset d "  # noqa: S608 - IQL
                           f"where x influences(*) v and x under d and v.name = '{out_l}'").rows()
    # the captured run: from its output's items back through items to the input's
    captured = iql.run(st, "select distinct d.id from Dataset o, Item i, Item j, Dataset d "  # noqa: S608 - IQL
                           f"where o.name = '{out_c}' and i under o and j influences(*) i and j under d").rows()
    assert source in {x[0] for x in listened}
    assert source in {x[0] for x in captured}

    # column lineage of the two, field by field: the aggregated texts agree; the grouping key
    # differs (nested input field user.id_str vs the listener's top-level user: docs)
    rename = {str(out_l): "<out>", str(out_c): "<out>"}.get
    run = cap.runs[0].run
    mine = column_lineage(captured_events(st, [run])[run], lambda n: rename(n, n))
    listened_events = read_events(events)
    theirs = column_lineage(listened_events, lambda n: rename(n, n))
    verdicts = {row["field"]: row["verdict"] for row in compare(mine, theirs)}
    assert verdicts["texts"] == "same"
    assert verdicts["user"].startswith("same top-level inputs")

    # the table: the listener names it by its location, with its catalog name as a symlink in
    # the namespace of its warehouse; Strata's rule, given the listener's session, says the same
    table = {(d["namespace"], d["name"]): d.get("facets", {}).get("symlinks") for e in listened_events
             for d in e.get("outputs") or () if d["name"].endswith(TABLE)}
    links = [s["identifiers"] for s in table.values() if s]
    assert set(table) == {("file", str(location))} and links
    assert table_dataset(TableFacts(f"file:{location}", "default", TABLE, f"file:{warehouse}")) == OLName(
        "file", str(location), (links[0][0]["namespace"], links[0][0]["name"]))

    name = str(location)

    def runs_of(side: str) -> set[str]:
        return {e["run"]["runId"] for e in listened_events if any(d["name"] == name for d in e.get(side) or ())}

    # one store: the listener's runs and the captured runs (exported, ingested) write and read
    # versions of the table's one Dataset
    produced = _ids(st, f"select distinct v.producedBy from DatasetVersion v where v.name = '{name}'")  # noqa: S608
    readers = _ids(st, f"select distinct r.runId from DatasetVersion v, Run r where v feeds r and v.name = '{name}'")  # noqa: S608
    assert run_uuid(tab.runs[0].run) in produced and produced & runs_of("outputs")
    assert run_uuid(tab.runs[1].run) in readers and readers & runs_of("inputs")
