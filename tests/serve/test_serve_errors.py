"""The application's error handling in this process (no server): an internal error is a JSON 500
without its traceback, which goes to the server's log instead."""

from __future__ import annotations

import asyncio
import logging

import httpx

from strata.serve.app import create_app
from strata.serve.http import Settings


class Broken:
    """A service whose health check fails."""

    def health(self):
        raise RuntimeError("the disk caught fire")


def test_an_internal_error_is_a_json_500_and_a_logged_traceback(caplog):
    app = create_app(Broken(), Settings())

    async def call():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/api/v1/health")

    with caplog.at_level(logging.ERROR, logger="strata.serve"):
        r = asyncio.run(call())
    assert r.status_code == 500
    assert r.json() == {"error": "internal error: RuntimeError", "hint": "the server's log has the traceback"}
    assert "the disk caught fire" not in r.text
    assert any("the disk caught fire" in str(rec.exc_info[1]) for rec in caplog.records if rec.exc_info)
