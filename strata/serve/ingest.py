"""`POST /api/v1/lineage`: what OpenLineage's HTTP transport sends (docs/serve.md).

One RunEvent, DatasetEvent or JobEvent per request, or a JSON array of them; the body may be
gzip-compressed (`Content-Encoding: gzip`). Every event is checked against the OpenLineage schema
(`store.interop.openlineage.validate_event`) before any is logged: a bad one gets 400 naming the
event and the field, and nothing of the request is stored. The reply (201, as Marquez's) comes
once the events are in the server's event log and fsynced; they reach the store's next commit
about a second later.

Every event a client sends takes this endpoint, so it is answered by plain ASGI, `Receive`, which
create_app puts in front of the routers (inside the access log, the size limit and CORS): FastAPI's
routing, dependencies and request objects would cost more CPU than the rest of the request. The
FastAPI route below describes the endpoint in the OpenAPI document, and answers the same way
(`accept`) where `Receive` is not in front.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from store.errors import BundleError, StrataError
from store.interop.openlineage import validate_event
from strata.serve.http import (
    ApiError,
    Settings,
    api_error_response,
    check_key,
    internal_error_response,
    strata_error_response,
)

PATH = "/api/v1/lineage"

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


def refuse_read_only(service) -> None:
    if service.read_only:
        raise ApiError(405, "this server is read-only (strata ui): it takes no events",
                       "run strata serve on the store to receive OpenLineage events")


async def accept(service, settings: Settings, body: bytes, encoding: str) -> dict[str, Any]:
    """Decode, validate and log a request's events; the 201 reply's body once they are durable."""
    events, warnings = events_of(decode(body, encoding, settings.max_body))
    await service.append(events)
    return {"accepted": len(events), "warnings": warnings}


@router.post(PATH, status_code=201, openapi_extra={
    "requestBody": {"required": True, "content": {"application/json": {"schema": EVENT_SCHEMA}}}},
    responses={400: {"description": "an invalid event (nothing stored)"}, 401: {"description": "no API key"},
               405: {"description": "a read-only server (strata ui)"},
               413: {"description": "body too large"}})
async def post_lineage(request: Request) -> JSONResponse:
    """Receive OpenLineage events; 201 once they are durable in the server's event log."""
    service = request.app.state.service
    refuse_read_only(service)
    body = await request.body()
    reply = await accept(service, request.app.state.settings, body, request.headers.get("content-encoding", ""))
    return JSONResponse(reply, status_code=201)


class Receive:
    """ASGI middleware: answers `POST /api/v1/lineage` itself, as the route above does (API key,
    read-only server, body, events; errors as JSON, a 500 logged with its traceback); every other
    request goes on to `app`."""

    def __init__(self, app, service, settings: Settings) -> None:
        self.app, self.service, self.settings = app, service, settings

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != PATH or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        headers = {}
        for name, value in scope["headers"]:
            headers.setdefault(name, value)  # the first of a repeated header, as Starlette's
        try:
            check_key(self.settings.api_key, headers.get(b"authorization", b"").decode("latin-1"))
            refuse_read_only(self.service)
            chunks, more = [], True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # the client is gone: nothing to answer
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            reply = await accept(self.service, self.settings, b"".join(chunks),
                                 headers.get(b"content-encoding", b"").decode("latin-1"))
        except ApiError as e:  # the application's replies to errors
            return await api_error_response(e)(scope, receive, send)
        except StrataError as e:
            return await strata_error_response(e)(scope, receive, send)
        except Exception as e:  # noqa: BLE001 - as the application's handler of any error
            return await internal_error_response(e)(scope, receive, send)
        data = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        await send({"type": "http.response.start", "status": 201,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})
