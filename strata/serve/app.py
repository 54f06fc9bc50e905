"""The ASGI application: `create_app(service, settings)` (docs/serve.md).

Routers by resource: strata/serve/ingest.py (POST /api/v1/lineage), marquez.py (Marquez's read
endpoints), strata_api.py (/api/strata/v1/...). Around them, as plain ASGI middleware: the
access log (one JSON line per request), the request-size limit (413 before the body is
read past the limit) and CORS when configured. Every error is a JSON body
`{"error": ..., "hint": ...}`; a 500 logs its traceback here and sends none.

POST /api/v1/lineage, the request every event takes, goes to a chain of the same middleware
around `ingest.Receive` instead (`Front`), without passing FastAPI's own (its error, telemetry and
body-limit layers) or its routers: Receive answers it and every error of it itself. Its route
stays in the application, for the OpenAPI document.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware

from store.errors import StrataError
from strata.serve import ingest, marquez, strata_api, ui
from strata.serve.http import (
    AccessLog,
    ApiError,
    BodyLimit,
    Settings,
    api_error_response,
    error_response,
    internal_error_response,
    require_key,
    strata_error_response,
)
from strata.serve.service import Service


def create_app(service: Service, settings: Settings) -> Any:
    """The application over `service` (docs/serve.md lists the endpoints)."""
    app = FastAPI(title="Strata", version="1", description="Strata's lineage service: OpenLineage in, "
                  "Marquez's lineage API and Strata's own out (docs/serve.md).",
                  docs_url=None, redoc_url=None)
    app.state.service = service
    app.state.settings = settings

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, e: ApiError):
        return api_error_response(e)

    @app.exception_handler(StrataError)
    async def strata_error(_request: Request, e: StrataError):
        return strata_error_response(e)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, e: HTTPException):
        hint = "GET /openapi.json lists the endpoints" if e.status_code in (404, 405) else None
        return error_response(e.status_code, str(e.detail), hint)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, e: RequestValidationError):
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error_response(400, f"bad request: {where}: {first.get('msg', 'invalid')}",
                              "GET /openapi.json describes the parameters")

    @app.exception_handler(Exception)
    async def internal(_request: Request, e: Exception):
        return internal_error_response(e)

    @app.get("/api/v1/health", tags=["service"])
    @app.get("/healthz", tags=["service"], include_in_schema=False)
    def health() -> dict[str, Any]:
        """The server is up: its store, the newest committed version, the log's and folder's counts."""
        return service.health()

    secured = [Depends(require_key)]
    app.include_router(ingest.router, dependencies=secured)
    app.include_router(marquez.router, dependencies=secured)
    app.include_router(strata_api.router, dependencies=secured)
    app.include_router(ui.router, dependencies=secured)
    ui.mount(app)  # the page and its assets: public, like health (the page asks for the key)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, **_cors(settings))
    app.add_middleware(BodyLimit, limit=settings.max_body)
    app.add_middleware(AccessLog)
    receive = ingest.Receive(_unrouted, service, settings)
    if settings.cors_origins:
        receive = CORSMiddleware(receive, **_cors(settings))
    return Front(app, AccessLog(BodyLimit(receive, settings.max_body)))


def _cors(settings: Settings) -> dict[str, Any]:
    return {"allow_origins": list(settings.cors_origins), "allow_methods": ["GET", "POST"],
            "allow_headers": ["Authorization", "Content-Type", "Content-Encoding"]}


async def _unrouted(scope, receive, send):  # pragma: no cover - Front sends Receive only its own requests
    raise AssertionError(f"{scope['method']} {scope['path']} reached the ingest chain")


class Front:
    """ASGI: POST /api/v1/lineage to `lineage` (the access log, size limit, CORS and Receive, as
    in `app`), every other request to `app`, the FastAPI application, whose attributes it shows."""

    def __init__(self, app: FastAPI, lineage: Any) -> None:
        self.app, self.lineage = app, lineage

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == ingest.PATH and scope["method"] == "POST":
            return await self.lineage(scope, receive, send)
        return await self.app(scope, receive, send)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)
