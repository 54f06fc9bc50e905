"""`strata serve` as its clients see it: one real server (a child process, API key set) for the
module, OpenLineage's Python client posting to it (gzip, API key), Marquez's Python client and
plain HTTP reading back, the CLI reading the served store; the error bodies exactly."""

from __future__ import annotations

import gzip
import json
import time
import uuid

import httpx
import pytest
from support.serve import Server, dumps, run_event, stored_keys, strata_cli

KEY = "s3cret-key"
NS = "shop"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(str(tmp_path_factory.mktemp("served") / "store"), args=("--max-body", "65536"),
                 env={"STRATA_API_KEY": KEY}).start()
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def pipeline(server):
    """raw -> extract -> stg -> report -> mart, posted by openlineage-python's HTTP transport."""
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.transport.http import ApiKeyTokenProvider, HttpCompression, HttpConfig, HttpTransport

    config = HttpConfig(url=server.url, endpoint="api/v1/lineage", auth=ApiKeyTokenProvider({"apiKey": KEY}),
                        compression=HttpCompression.GZIP)
    client = OpenLineageClient(transport=HttpTransport(config))
    runs = {"extract": str(uuid.uuid4()), "report": str(uuid.uuid4())}
    steps = [("extract", "raw", "stg", "2024-01-01T00:00:00Z", "2024-01-01T00:05:00Z"),
             ("report", "stg", "mart", "2024-01-01T01:00:00Z", "2024-01-01T01:05:00Z")]
    for job, src, dst, start, end in steps:
        for state, when in ((RunState.START, start), (RunState.COMPLETE, end)):
            client.emit(RunEvent(eventType=state, eventTime=when, run=Run(runId=runs[job]),
                                 job=Job(namespace=NS, name=job), producer="https://github.com/strata/tests",
                                 inputs=[InputDataset(namespace=NS, name=src)],
                                 outputs=[OutputDataset(namespace=NS, name=dst)]))
    assert server.wait_stored(4) == 4, (server.health(), server.log()[-3000:])
    return runs


def get(server, path, **params):
    return httpx.get(f"{server.url}{path}", params=params, headers=server.headers(), timeout=30)


def post(server, body: bytes, **headers):
    return httpx.post(f"{server.url}/api/v1/lineage", content=body, timeout=30,
                      headers={"Content-Type": "application/json", **server.headers(), **headers})


def test_marquez_lineage_graph_of_posted_events(server, pipeline):
    graph = get(server, "/api/v1/lineage", nodeId=f"dataset:{NS}:mart").json()["graph"]
    nodes = {n["id"]: n for n in graph}
    assert set(nodes) == {f"dataset:{NS}:raw", f"job:{NS}:extract", f"dataset:{NS}:stg", f"job:{NS}:report",
                          f"dataset:{NS}:mart"}
    assert nodes[f"job:{NS}:report"]["type"] == "JOB"
    assert nodes[f"dataset:{NS}:mart"]["inEdges"] == [{"origin": f"job:{NS}:report",
                                                      "destination": f"dataset:{NS}:mart"}]
    assert nodes[f"dataset:{NS}:stg"]["outEdges"] == [{"origin": f"dataset:{NS}:stg",
                                                      "destination": f"job:{NS}:report"}]
    assert nodes[f"job:{NS}:report"]["data"]["latestRun"]["state"] == "COMPLETED"
    one = get(server, "/api/v1/lineage", nodeId=f"dataset:{NS}:mart", depth=1).json()["graph"]
    assert {n["id"] for n in one} == {f"dataset:{NS}:stg", f"job:{NS}:report", f"dataset:{NS}:mart"}


def test_marquez_python_client_reads_back(server, pipeline):
    from marquez_client import MarquezClient

    client = MarquezClient(url=server.url, api_key=KEY)
    assert [n["name"] for n in client.list_namespaces()["namespaces"]] == [NS]
    assert [d["name"] for d in client.list_datasets(NS)["datasets"]] == ["mart", "raw", "stg"]
    assert client.get_dataset(NS, "stg")["id"] == {"namespace": NS, "name": "stg"}
    job = client.get_job(NS, "report")
    assert job["inputs"] == [{"namespace": NS, "name": "stg"}] and job["outputs"] == [{"namespace": NS, "name": "mart"}]
    runs = client.list_job_runs(NS, "extract")["runs"]
    assert [r["id"] for r in runs] == [pipeline["extract"]] and runs[0]["state"] == "COMPLETED"
    assert client.get_job_run(pipeline["report"])["durationMs"] == 300_000
    versions = client.list_dataset_versions(NS, "stg")["versions"]
    assert len(versions) == 1
    one = client.get_dataset_version(NS, "stg", versions[0]["version"])
    assert one == versions[0] and one["createdByRun"]["id"] == pipeline["extract"]


def test_search_and_events(server, pipeline):
    found = get(server, "/api/v1/search", q="ma").json()
    assert [r["nodeId"] for r in found["results"]] == [f"dataset:{NS}:mart"]
    assert get(server, "/api/v1/search", q="r", filter="JOB").json()["results"][0]["nodeId"] == f"job:{NS}:report"
    events = get(server, "/api/v1/events/lineage").json()
    assert events["totalCount"] >= 4 and events["events"][0]["eventTime"] >= events["events"][-1]["eventTime"]


def test_strata_query_and_lineage_over_http_and_in_the_cli(server, pipeline):
    text = "select v.name, v.version from DatasetVersion v where v.namespace = 'shop' order by v.name"
    over_http = httpx.post(f"{server.url}/api/strata/v1/query", json={"query": text}, headers=server.headers(),
                           timeout=30).json()
    assert over_http == {"columns": ["name", "version"], "rows": [["mart", 1], ["raw", 1], ["stg", 1]],
                         "warnings": []}
    cli = strata_cli(server.root, "query", text, "--format", "json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["rows"] == over_http["rows"]
    item = f"dataset:{NS}:mart@{pipeline['report']}"
    lin = get(server, "/api/strata/v1/lineage", item=item).json()
    assert set(lin["ancestors"]) == {f"dataset:{NS}:stg@{pipeline['extract']}", f"dataset:{NS}:raw@initial"}
    cli = strata_cli(server.root, "lineage", item, "--format", "json")
    assert cli.returncode == 0, cli.stderr
    assert set(json.loads(cli.stdout)["ancestors"]) == set(lin["ancestors"])


def test_the_server_keeps_the_component_index_current(server, pipeline):
    deadline = time.monotonic() + 60
    while (h := server.health())["index"]["version"] != h["version"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert h["index"]["kept"] and h["index"]["error"] is None
    assert h["index"]["version"] == h["version"], h
    item = f"dataset:{NS}:mart@{pipeline['report']}"
    lin = get(server, "/api/strata/v1/lineage", item=item, method="cs").json()  # refused without a current index
    assert set(lin["ancestors"]) == {f"dataset:{NS}:stg@{pipeline['extract']}", f"dataset:{NS}:raw@initial"}
    info = strata_cli(server.root, "info")
    assert info.returncode == 0 and "index        built" in info.stdout, info.stdout


def test_as_of_reads_one_version(server, pipeline):
    versions = get(server, "/api/strata/v1/versions").json()["versions"]
    first = versions[0]["version"]
    early = get(server, "/api/v1/events/lineage", as_of=first).json()["totalCount"]
    assert 0 < early <= get(server, "/api/v1/events/lineage").json()["totalCount"]
    bad = get(server, "/api/v1/namespaces", as_of=10_000)
    assert bad.status_code == 400 and "no version 10000" in bad.json()["error"]
    assert get(server, "/api/strata/v1/verify").json()["ok"] is True


def test_the_same_event_twice_is_kept_once(server, pipeline):
    event = run_event(job="twice", outputs=("twice_out",), ns=NS)
    server.settle()
    before = server.events_stored()
    for _ in range(2):
        assert post(server, dumps(event).encode()).status_code == 201
    assert post(server, gzip.compress(dumps(event).encode()), **{"Content-Encoding": "gzip"}).status_code == 201
    server.settle()
    assert server.events_stored() == before + 1
    keys = stored_keys(server.root)
    assert len(keys) == len(set(keys))


def test_a_batch_and_an_event_without_schema_url(server, pipeline):
    lenient = run_event(job="lenient", ns=NS)
    del lenient["schemaURL"]
    r = post(server, dumps([run_event(job="batch", ns=NS), lenient]).encode())
    assert r.status_code == 201
    assert r.json() == {"accepted": 2, "warnings": ["OpenLineage event 1 has no 'schemaURL'; read as "
                                                    "OpenLineage 2-0-2"]}


def test_no_key_is_401(server):
    r = httpx.post(f"{server.url}/api/v1/lineage", json=run_event(), timeout=10)
    assert r.status_code == 401
    assert r.json() == {"error": "missing or wrong API key", "hint": "send the header 'Authorization: Bearer <key>'"}
    wrong = httpx.get(f"{server.url}/api/v1/namespaces", headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401
    assert httpx.get(f"{server.url}/api/v1/health", timeout=10).status_code == 200  # health stays open
    assert httpx.get(f"{server.url}/openapi.json", timeout=10).json()["paths"]["/api/v1/lineage"]["post"]


@pytest.mark.parametrize("body, error", [
    (dumps(run_event(run="not-a-uuid")),
     "invalid OpenLineage event 0: field 'run.runId': 'not-a-uuid' is not a 'uuid'. Nothing was stored."),
    (dumps([run_event(), {"eventTime": "2024-01-01T00:00:00Z"}]),
     "invalid OpenLineage event 1: not a RunEvent, DatasetEvent or JobEvent (an object with 'run', 'dataset' "
     "or 'job')"),
    ("{not json", "the body is not JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
                  "(char 1)"),
], ids=["bad-field", "second-of-batch", "not-json"])
def test_a_bad_event_is_400_and_nothing_is_stored(server, pipeline, body, error):
    appended = server.settle()["log"]["appended"]
    before = server.events_stored()
    r = post(server, body.encode())
    assert r.status_code == 400
    hint = "send one OpenLineage event as a JSON object" if error.startswith("the body") else \
        "fix the event and send it again"
    assert r.json() == {"error": error, "hint": hint}
    assert server.health()["log"]["appended"] == appended  # nothing of the request reached the log
    assert server.events_stored() == before


def test_too_large_is_413(server):
    big = dumps([run_event() for _ in range(300)]).encode()  # over the 64 KiB this server takes
    r = post(server, big)
    assert r.status_code == 413
    assert r.json() == {"error": "request body over 65536 bytes", "hint": "send fewer events per request"}
    r = post(server, gzip.compress(big), **{"Content-Encoding": "gzip"})  # small compressed, too big inflated
    assert r.status_code == 413
    assert r.json() == {"error": "request body over 65536 bytes once decompressed",
                        "hint": "send fewer events per request"}


def test_unknown_path_and_node_are_json(server):
    r = get(server, "/api/v1/nope")
    assert r.status_code == 404 and r.json() == {"error": "Not Found", "hint": "GET /openapi.json lists the endpoints"}
    r = get(server, "/api/v1/lineage", nodeId="dataset:nowhere:nothing")
    assert r.status_code == 404 and r.json()["error"] == "node 'dataset:nowhere:nothing' not found"
    r = get(server, "/api/v1/lineage", nodeId="table:x")
    assert r.status_code == 400 and "is not 'dataset:<namespace>:<name>'" in r.json()["error"]


def test_access_log_is_json_lines(server, pipeline):
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    posts = [e for e in lines if e.get("path") == "/api/v1/lineage" and e.get("method") == "POST"]
    assert posts and {"status", "ms", "time"} <= set(posts[0])


@pytest.mark.parametrize("command", ["ingest-openlineage", "ingest-bundle", "index", "capture"])
def test_a_cli_write_to_a_served_store_exits_2(server, pipeline, tmp_path, command):
    from support.paths import EXAMPLES

    events = tmp_path / "new.json"
    events.write_text(dumps(run_event(job="from-cli", ns=NS)))
    script = tmp_path / "job.py"
    script.write_text("raise SystemExit('never run')\n")
    args = {"capture": ["capture", "--", str(script)],
            "ingest-openlineage": ["ingest", "--format", "openlineage", str(events)],
            "ingest-bundle": ["ingest", str(EXAMPLES / "movies.json")], "index": ["index"]}[command]
    r = strata_cli(server.root, *args)
    assert r.returncode == 2
    assert f"is served by {server.url}: the server is its only writer" in r.stderr
    assert f"send events to {server.url}/api/v1/lineage or stop the server" in r.stderr

def test_column_lineage_of_the_orders_example(server):
    from support.paths import EXAMPLES

    events = [json.loads(line) for line in (EXAMPLES / "openlineage" / "orders.jsonl").read_text().splitlines()]
    server.settle()
    before = server.events_stored()
    assert post(server, dumps(events).encode()).status_code == 201
    server.settle()
    assert server.events_stored() == before + len(events)
    graph = get(server, "/api/v1/column-lineage", nodeId="datasetField:warehouse:mart:total").json()["graph"]
    assert {n["id"] for n in graph} == {"datasetField:warehouse:mart:total", "datasetField:warehouse:stg:amount",
                                        "datasetField:warehouse:raw:amount",
                                        "datasetField:warehouse:raw:status"}  # INDIRECT: a filter
    total = next(n for n in graph if n["id"] == "datasetField:warehouse:mart:total")
    assert total["inEdges"] == [{"origin": "datasetField:warehouse:stg:amount",
                                 "destination": "datasetField:warehouse:mart:total"}]
    down = get(server, "/api/v1/column-lineage", nodeId="datasetField:warehouse:raw:amount", withDownstream="true")
    assert "datasetField:warehouse:mart:total" in {n["id"] for n in down.json()["graph"]}
    versions = get(server, "/api/v1/namespaces/warehouse/datasets/stg/versions").json()
    assert versions["totalCount"] == 2  # two extracts completed; the third failed


def test_a_second_server_on_the_store_exits_2(server):
    r = strata_cli(server.root, "serve", "--port", "0")
    assert r.returncode == 2
    assert f"is already served by the server at {server.url} (pid {server.proc.pid})" in r.stderr


def test_diff_over_http_is_the_cli_diff(server, pipeline):
    a, b = pipeline["extract"], pipeline["report"]
    over_http = get(server, "/api/strata/v1/diff", a=a, b=b)
    assert over_http.status_code == 200, over_http.text
    cli = strata_cli(server.root, "diff", a, b, "--format", "json")
    assert cli.returncode == 0, cli.stderr
    assert over_http.json() == json.loads(cli.stdout)
    assert over_http.json()["a"] == f"run:{a}"
