"""`POST /api/v1/lineage`: what OpenLineage's HTTP transport sends (docs/serve.md).

One RunEvent, DatasetEvent or JobEvent per request, or a JSON array of them; the body may be
gzip-compressed (`Content-Encoding: gzip`). Every event is checked against the OpenLineage schema
(`store.interop.openlineage.validate_event`) before any is logged: a bad one gets 400 naming the
event and the field, and nothing of the request is stored. The reply (201, as Marquez's) comes
once the events are in the server's event log and fsynced; they reach the store's next commit
about a second later.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from store.errors import BundleError
from store.interop.openlineage import validate_event
from strata.serve.http import ApiError

router = APIRouter(tags=["openlineage"])

EVENT_SCHEMA = {"type": "object", "description": "An OpenLineage RunEvent, DatasetEvent or JobEvent "
                "(https://openlineage.io/spec/2-0-2/OpenLineage.json), or a JSON array of them"}


def decode(body: bytes, encoding: str, limit: int) -> bytes:
    """The request body, gunzipped when `encoding` says gzip (at most `limit` bytes out)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise ApiError(415, f"unsupported Content-Encoding {encoding!r}", "send gzip or no encoding")
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 32 if encoding != "deflate" else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as e:
        raise ApiError(400, f"the body is not valid {encoding} data: {e}", "compress the body with gzip") from e
    if len(out) > limit:
        raise ApiError(413, f"request body over {limit} bytes once decompressed", "send fewer events per request")
    return out


def events_of(data: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """The events of a decoded body, each validated (ApiError 400 for the first bad one), and
    the warnings of what was accepted leniently (no `schemaURL`)."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ApiError(400, f"the body is not JSON: {e}", "send one OpenLineage event as a JSON object") from e
    events = doc if isinstance(doc, list) else [doc]
    if not events:
        raise ApiError(400, "the body is an empty array", "send at least one event")
    warnings: list[str] = []
    for i, body in enumerate(events):
        try:
            warnings += validate_event(body, f"{i}")
        except BundleError as e:
            raise ApiError(400, e.message.replace(" Nothing was committed.", " Nothing was stored."),
                           "fix the event and send it again") from e
    return events, warnings


@router.post("/api/v1/lineage", status_code=201, openapi_extra={
    "requestBody": {"required": True, "content": {"application/json": {"schema": EVENT_SCHEMA}}}},
    responses={400: {"description": "an invalid event (nothing stored)"}, 401: {"description": "no API key"},
               405: {"description": "a read-only server (strata ui)"},
               413: {"description": "body too large"}})
async def post_lineage(request: Request) -> JSONResponse:
    """Receive OpenLineage events; 201 once they are durable in the server's event log."""
    settings = request.app.state.settings
    if request.app.state.service.read_only:
        raise ApiError(405, "this server is read-only (strata ui): it takes no events",
                       "run strata serve on the store to receive OpenLineage events")
    body = decode(await request.body(), request.headers.get("content-encoding", ""), settings.max_body)
    events, warnings = events_of(body)
    await request.app.state.service.append(events)
    return JSONResponse({"accepted": len(events), "warnings": warnings}, status_code=201)
