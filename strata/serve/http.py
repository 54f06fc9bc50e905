"""What the routers and the application share: the settings, the JSON error, the API-key check,
and the two ASGI middlewares (the request-size limit, the access log)."""

from __future__ import annotations

import hmac
import logging
import time
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import JSONResponse

from store.errors import StrataError, UserError

access = logging.getLogger("strata.serve.access")
log = logging.getLogger("strata.serve")

MAX_BODY = 10 * 1024 * 1024  # bytes a request may send (after gzip decoding, the same limit)


@dataclass(frozen=True)
class Settings:
    """What `strata serve` was told: the API key (None: open), CORS origins, the size limit."""

    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    max_body: int = MAX_BODY


class ApiError(Exception):
    """An error answered with `status` and `{"error", "hint"}`."""

    def __init__(self, status: int, error: str, hint: str | None = None) -> None:
        super().__init__(error)
        self.status, self.error, self.hint = status, error, hint


def error_response(status: int, error: str, hint: str | None = None, headers: dict[str, str] | None = None):
    return JSONResponse({"error": error, "hint": hint}, status_code=status, headers=headers)


def api_error_response(e: ApiError):
    """The reply to an ApiError: its status and body; a 401 names the scheme to use."""
    return error_response(e.status, e.error, e.hint, {"WWW-Authenticate": "Bearer"} if e.status == 401 else None)


def strata_error_response(e: StrataError):
    """The reply to a StrataError: a user's mistake is 400 (404 for what is not there); any other
    is logged and answered 500."""
    if isinstance(e, UserError):
        return error_response(404 if getattr(e, "not_found", False) else 400, e.message, e.hint)
    log.error("store error", exc_info=e)
    return error_response(500, e.message, e.hint)


def internal_error_response(e: Exception):
    """The reply to an unexpected error, logged with its traceback (never sent to the client)."""
    log.error("internal error", exc_info=e)
    return error_response(500, f"internal error: {type(e).__name__}", "the server's log has the traceback")


async def require_key(request: Request) -> None:
    """A dependency: with an API key set, the request must carry `Authorization: Bearer KEY`."""
    check_key(request.app.state.settings.api_key, request.headers.get("authorization", ""))


def check_key(key: str | None, authorization: str) -> None:
    """ApiError 401 unless `key` is None or the Authorization header is `Bearer KEY` (compared
    in constant time)."""
    if key is None:
        return
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode()):
        raise ApiError(401, "missing or wrong API key", "send the header 'Authorization: Bearer <key>'")


class BodyLimit:
    """ASGI middleware: a request whose body exceeds `limit` bytes gets 413 (by Content-Length
    before reading, else as soon as the stream passes the limit)."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await _too_large(self.limit)(scope, receive, send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise ApiError(413, f"request body over {self.limit} bytes",
                                   "send fewer events per request")
            return message

        await self.app(scope, limited, send)


def _too_large(limit: int):
    return error_response(413, f"request body over {limit} bytes", "send fewer events per request")


class AccessLog:
    """ASGI middleware: one record per request (method, path, status, ms) on the access logger."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        status = 500

        async def sending(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            entry = {"method": scope["method"], "path": scope["path"], "status": status,
                     "ms": round((time.perf_counter() - start) * 1000, 2)}
            # the fields ride on the record (`access`), for strata/serve/run.py's JSON lines to
            # write as they are; the message says the same for any other handler. The record is
            # made here: `access.info` would search the stack for its caller at every request
            if access.isEnabledFor(logging.INFO):
                access.handle(access.makeRecord(access.name, logging.INFO, __file__, 0, "%s %s %s %s ms",
                                                (entry["method"], entry["path"], status, entry["ms"]), None,
                                                "AccessLog.__call__", {"access": entry}))
