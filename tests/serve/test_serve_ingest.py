"""`POST /api/v1/lineage` in this process (no server): `ingest.Receive`, the plain ASGI that
answers it in front of the routers, gives the answers its FastAPI route gives (the route still
describes it in the OpenAPI document)."""

from __future__ import annotations

import asyncio
import gzip
import logging

import httpx
from fastapi import Depends, FastAPI
from support.serve import dumps, run_event

from strata.serve import ingest
from strata.serve.app import create_app
from strata.serve.http import ApiError, Settings, error_response, require_key

KEY = "k"


class Service:
    """Takes the events it is given (or fails, with `fail`)."""

    read_only = False

    def __init__(self, fail: Exception | None = None) -> None:
        self.events: list[dict] = []
        self.fail = fail

    async def append(self, bodies):
        if self.fail is not None:
            raise self.fail
        self.events += bodies


def route_only(service, settings):
    """The FastAPI route alone, as create_app would serve it without `ingest.Receive` in front."""
    app = FastAPI()
    app.state.service, app.state.settings = service, settings
    app.add_exception_handler(ApiError, lambda _r, e: error_response(
        e.status, e.error, e.hint, {"WWW-Authenticate": "Bearer"} if e.status == 401 else None))
    app.include_router(ingest.router, dependencies=[Depends(require_key)])
    return app


def posts(app, requests):
    async def call():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.post("/api/v1/lineage", content=body, headers=headers) for body, headers in requests]
    return asyncio.run(call())


def requests():
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    no_schema = run_event(job="a")
    del no_schema["schemaURL"]
    return [
        (dumps(run_event(job="a")).encode(), auth),
        (gzip.compress(dumps([run_event(job="b"), no_schema]).encode()), {**auth, "Content-Encoding": "gzip"}),
        (dumps(run_event(job="c", run="not-a-uuid")).encode(), auth),
        (b"{not json", auth),
        (dumps(run_event(job="d")).encode(), {"Content-Type": "application/json"}),
        (dumps(run_event(job="e")).encode(), {"Authorization": "Bearer nope"}),
        (b"x", {**auth, "Content-Encoding": "br"}),
        (gzip.compress(dumps([run_event(job="f")] * 50).encode()), {**auth, "Content-Encoding": "gzip"}),
    ]


def test_receive_answers_as_the_route_does():
    settings = Settings(api_key=KEY, max_body=4096)
    fast, slow = Service(), Service()
    reqs = requests()
    got = posts(create_app(fast, settings), reqs)
    want = posts(route_only(slow, settings), reqs)
    assert [r.status_code for r in got] == [201, 201, 400, 400, 401, 401, 415, 413]
    assert [(r.status_code, r.json(), r.headers.get("www-authenticate")) for r in got] == \
        [(r.status_code, r.json(), r.headers.get("www-authenticate")) for r in want]
    assert got[1].json()["warnings"] == ["OpenLineage event 1 has no 'schemaURL'; read as OpenLineage 2-0-2"]
    assert fast.events == slow.events and [e["job"]["name"] for e in fast.events] == ["a", "b", "a"]


def test_receive_answers_an_internal_error_with_a_json_500_and_logs_it(caplog):
    with caplog.at_level(logging.ERROR, logger="strata.serve"):
        (r,) = posts(create_app(Service(fail=OSError("no space left on device")), Settings()),
                     [(dumps(run_event()).encode(), {})])
    assert r.status_code == 500
    assert r.json() == {"error": "internal error: OSError", "hint": "the server's log has the traceback"}
    assert "no space left" not in r.text
    assert any("no space left" in str(rec.exc_info[1]) for rec in caplog.records if rec.exc_info)


def test_receive_answers_a_store_error_as_the_application_does(caplog):
    """A user's mistake is a 400 (404 for what is not there) with its message and hint; any other
    StrataError a logged 500 that names it."""
    from store.errors import StoreError, UserError

    mistake = UserError("the store is read-only here", hint="post to the server that holds it")
    missing = UserError("no such namespace 'x'", hint="GET /api/v1/namespaces lists them")
    missing.not_found = True
    with caplog.at_level(logging.ERROR, logger="strata.serve"):
        got = [posts(create_app(Service(fail=e), Settings()), [(dumps(run_event()).encode(), {})])[0]
               for e in (mistake, missing, StoreError("a segment is missing"))]
    assert [(r.status_code, r.json()["error"]) for r in got] == [
        (400, "the store is read-only here"), (404, "no such namespace 'x'"), (500, "a segment is missing")]
    assert got[0].json()["hint"] == "post to the server that holds it"
    assert any("a segment is missing" in str(rec.exc_info[1]) for rec in caplog.records if rec.exc_info)


def test_other_requests_go_on_to_the_routers():
    app = create_app(Service(), Settings())

    async def call():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/openapi.json")

    doc = asyncio.run(call()).json()
    assert doc["paths"]["/api/v1/lineage"]["post"]["requestBody"]["required"] is True


def test_the_requests_of_one_loop_turn_reach_the_log_as_one_submission(tmp_path):
    from store.eventlog import EventLog, GroupCommit
    from strata.serve.service import Service as Served

    log = EventLog(str(tmp_path))
    service = Served.__new__(Served)  # only what append uses: the log's writer and the loop's batch
    service.writer, service._waiting = GroupCommit(log), []
    submitted = []
    submit = service.writer.submit
    service.writer.submit = lambda records: submitted.append(len(records)) or submit(records)

    async def posts(n):
        await asyncio.gather(*(service.append([run_event(job=f"j{i}")]) for i in range(n)))

    asyncio.run(posts(10))
    assert submitted == [10] and log.appended == 10 and log.fsyncs == 1

    def full(records):
        raise OSError("no space left on device")

    log.append = full  # an fsync that fails fails every request of the batch, none is acknowledged

    async def failing():
        return await asyncio.gather(*(service.append([run_event()]) for _ in range(3)), return_exceptions=True)

    assert [type(e) for e in asyncio.run(failing())] == [OSError] * 3
    service.writer.stop()


def test_the_ingest_requests_take_the_access_log_and_cors_of_every_other_request(caplog):
    """POST /api/v1/lineage skips FastAPI's layers (app.Front) but not the access log, the size
    limit or CORS: its answers carry the same CORS headers as a route's, and it is logged."""
    origin = "https://ui.example"
    service = Service()
    app = create_app(service, Settings(cors_origins=(origin,), max_body=4096))

    async def call():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            head = {"Origin": origin, "Content-Type": "application/json"}
            return [await client.post("/api/v1/lineage", content=dumps(run_event(job="a")), headers=head),
                    await client.post("/api/v1/lineage", content=b"x" * 5000, headers=head),
                    await client.options("/api/v1/lineage", headers={
                        "Origin": origin, "Access-Control-Request-Method": "POST"}),
                    await client.get("/openapi.json", headers={"Origin": origin})]

    with caplog.at_level(logging.INFO, logger="strata.serve.access"):
        posted, big, preflight, other = asyncio.run(call())
    assert [posted.status_code, big.status_code, preflight.status_code] == [201, 413, 200]
    assert {r.headers.get("access-control-allow-origin") for r in (posted, preflight, other)} == {origin}
    assert "access-control-allow-origin" not in big.headers  # the size limit answers outside CORS
    logged = [rec.access for rec in caplog.records if hasattr(rec, "access")]
    assert [(e["method"], e["path"], e["status"]) for e in logged[:3]] == [
        ("POST", "/api/v1/lineage", 201), ("POST", "/api/v1/lineage", 413), ("OPTIONS", "/api/v1/lineage", 200)]
    assert [e["job"]["name"] for e in service.events] == ["a"]
