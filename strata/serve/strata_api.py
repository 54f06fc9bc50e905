"""Strata's own read endpoints, under /api/strata/v1 (docs/serve.md): IQL, lineage of any item,
verify, diff, versions. Each reads ONE committed version (`as_of`, default the newest), through
the library functions the CLI calls, with the same JSON shapes as `strata ... --format json`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

import iql
from iql.result import format_json
from store import verify as checks
from store.lineage import Method
from store.lineage import lineage as item_lineage
from strata.app import diff_sides
from strata.serve.service import Snapshot

router = APIRouter(prefix="/api/strata/v1", tags=["strata"])

AsOf = Annotated[int | None, Query(ge=1, description="a store version (default: the newest committed)")]


class QueryRequest(BaseModel):
    """An IQL statement (docs/iql.md), TRACE included, and the version to answer from."""

    query: str = Field(min_length=1, max_length=100_000)
    as_of: int | None = Field(default=None, ge=1)


def snapshot(request: Request, as_of: int | None) -> Snapshot:
    return request.app.state.service.snapshot(as_of)


def json_text(text: str) -> Response:
    return Response(content=text, media_type="application/json")


@router.post("/query")
def query(request: Request, body: QueryRequest) -> Response:
    """Run one IQL statement: `{"columns", "rows", "warnings"}`, as `strata query --format json`."""
    snap = snapshot(request, body.as_of)
    with snap.lock:  # one DuckDB connection per version: its users take turns
        result = iql.run(snap.store, body.query)
        rows = result.rows()
    return json_text(format_json(result.columns, rows, result.warnings))


@router.get("/lineage")
def lineage(request: Request, item: str, as_of: AsOf = None,
            depth: Annotated[int | None, Query(ge=0)] = None,
            direction: Annotated[str, Query(pattern="^(backward|forward)$")] = "backward",
            method: Annotated[str, Query(pattern="^(auto|rq|cc|cs)$")] = "auto") -> Response:
    """Lineage of any item (a dataset, a field, a captured row: an element or vertex id), as
    `strata lineage --format json`, plus the warnings and the version read. (Serialized with
    `json.dumps`: FastAPI's encoder took 150 ms for a lineage of 8,000 ancestors, json 20 ms.)"""
    snap = snapshot(request, as_of)
    with snap.lock:
        result = item_lineage(snap.store, item, depth, direction == "forward", Method(method))
    return json_text(json.dumps({**result.to_json(), "warnings": list(result.warnings), "version": snap.version}))


@router.get("/verify")
def verify(request: Request, as_of: AsOf = None, item: str | None = None,
           direction: Annotated[str, Query(pattern="^(backward|forward)$")] = "backward") -> dict[str, Any]:
    """The store's hash chain and committed files checked up to the version (`strata verify
    --format json`); with `item`, only what its lineage rests on."""
    snap = snapshot(request, as_of)
    with snap.lock:
        if item is None:
            rep = checks.verify(snap.store.storage, upto=snap.version)
        else:
            rep, _ = checks.verify_lineage(snap.store, item, forward=direction == "forward")
    return rep.to_json()


@router.get("/diff")
def diff(request: Request, a: str, b: str, as_of: AsOf = None) -> Response:
    """Two runs, or a dataset at two versions (`NAME@1`, `NAME@2`), compared (`strata diff
    --format json`)."""
    snap = snapshot(request, as_of)
    with snap.lock:
        out = diff_sides(snap.store, a, b)
    return json_text(json.dumps(out, default=str))


@router.get("/versions")
def versions(request: Request) -> dict[str, Any]:
    """The committed versions: version, time, message, whether hashed (`strata info`'s)."""
    snap = snapshot(request, None)
    return {"version": snap.version, "versions": snap.store.history()}
