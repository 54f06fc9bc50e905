"""OpenLineage's Spark listener beside `strata capture`: one store, linked through the datasets.

The job of examples/capture runs twice: in a new process with OpenLineage's listener (its file
transport; the jar from `make openlineage-jar`), and captured in the suite's session. The
listener's events are ingested with `strata ingest --format openlineage` into the store that
holds the captured run; from both runs' outputs the lineage reaches the one `Dataset` of the
input file (docs/openlineage.md, "Beside OpenLineage's Spark listener").
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys

import pytest
from click.testing import CliRunner
from support.ol_listener import column_lineage, compare, listener_conf, listener_jar, read_events, submit_args
from support.paths import EXAMPLES, ROOT

import iql
from capture import capturing
from capture.storing.to_openlineage import captured_events
from store import Store
from store.spark.session import session_conf
from strata.cli import main

JOB = EXAMPLES / "capture" / "tweets_job.py"
TWEETS = EXAMPLES / "capture" / "tweets.json"

pytestmark = pytest.mark.spark


def _with_listener(out, events, cwd) -> subprocess.Popen:
    """`python tweets_job.py` with the listener, Spark configured as `strata` configures it."""
    conf = {**session_conf("local[1]"), "spark.sql.shuffle.partitions": "1", **listener_conf(listener_jar(), events)}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_SUBMIT_ARGS": submit_args(conf),
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.Popen([sys.executable, str(JOB), str(TWEETS), str(out)], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_listener_and_captured_runs_reach_the_same_input_dataset(spark, tmp_path):
    if listener_jar() is None:
        pytest.skip("OpenLineage's listener jar is not fetched: make openlineage-jar")
    events, out_l, out_c = tmp_path / "events.jsonl", tmp_path / "by_user_listener", tmp_path / "by_user_captured"
    job = _with_listener(out_l, events, tmp_path)  # its JVM starts while the capture runs here
    store = Store.open(str(tmp_path / "store"), spark=spark)
    argv = sys.argv
    sys.argv = [str(JOB), str(TWEETS), str(out_c)]
    try:
        with capturing(spark, store, pipeline="tweets_job") as cap:
            runpy.run_path(str(JOB), run_name="__main__")
    finally:
        sys.argv = argv
    log, _ = job.communicate(timeout=180)
    assert job.returncode == 0, log[-3000:]
    assert len(cap.runs) == 1

    r = CliRunner().invoke(main, ["--store", store.root, "ingest", "--format", "openlineage", str(events)])
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
    mine = column_lineage(next(iter(captured_events(st).values())), lambda n: rename(n, n))
    theirs = column_lineage(read_events(events), lambda n: rename(n, n))
    verdicts = {row["field"]: row["verdict"] for row in compare(mine, theirs)}
    assert verdicts["texts"] == "same"
    assert verdicts["user"].startswith("same top-level inputs")
