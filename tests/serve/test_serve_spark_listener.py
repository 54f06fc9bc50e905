"""OpenLineage's Spark listener posting to a real `strata serve`: an unchanged PySpark job
(examples/capture/tweets_job.py) run in a new process with the listener's HTTP transport and
API key pointed at the server (the jar from `make openlineage-jar`), then its lineage read back
over Marquez's API and Strata's own. Spark runs in the child process only: the test is marked
`spark` for its JVM."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest
from support.ol_listener import LISTENER, listener_jar, submit_args
from support.paths import EXAMPLES, ROOT
from support.serve import Server

from store.spark.session import session_conf

pytestmark = pytest.mark.spark

KEY = "listener-key"


def test_the_spark_listener_posts_to_strata_serve(tmp_path):
    jar = listener_jar()
    if jar is None:
        pytest.skip("OpenLineage's listener jar is not fetched: make openlineage-jar")
    srv = Server(str(tmp_path / "store"), env={"STRATA_API_KEY": KEY}).start()
    try:
        out = tmp_path / "by_user"
        conf = {**session_conf("local[1]"), "spark.sql.shuffle.partitions": "1",
                "spark.jars": str(jar), "spark.extraListeners": LISTENER,
                "spark.openlineage.transport.type": "http", "spark.openlineage.transport.url": srv.url,
                "spark.openlineage.transport.auth.type": "api_key", "spark.openlineage.transport.auth.apiKey": KEY,
                "spark.openlineage.namespace": "tweets"}
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_SUBMIT_ARGS": submit_args(conf),
               "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        job = subprocess.run([sys.executable, str(EXAMPLES / "capture" / "tweets_job.py"),
                              str(EXAMPLES / "capture" / "tweets.json"), str(out)],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert job.returncode == 0, job.stdout + job.stderr
        h = srv.settle(120)
        assert h["log"]["appended"] > 0 and h["folder"]["error"] is None, srv.log()
        headers = {"Authorization": f"Bearer {KEY}"}
        # the listener names a file dataset by namespace `file` and its path
        node = f"dataset:file:{out}"
        graph = httpx.get(f"{srv.url}/api/v1/lineage", params={"nodeId": node, "depth": 5},
                          headers=headers, timeout=60).json()["graph"]
        ids = {n["id"] for n in graph}
        assert f"dataset:file:{EXAMPLES / 'capture' / 'tweets.json'}" in ids, sorted(ids)
        jobs = [n for n in graph if n["type"] == "JOB"]
        assert jobs and all(n["data"]["namespace"] == "tweets" for n in jobs), jobs
        runs = httpx.get(f"{srv.url}/api/v1/namespaces/tweets/jobs/{jobs[0]['data']['name']}/runs",
                         headers=headers, timeout=60).json()["runs"]
        assert runs and runs[0]["state"] == "COMPLETED", runs
    finally:
        assert srv.stop() == 0, srv.log()
