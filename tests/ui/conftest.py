"""One Chromium for the session (Debian's, driven by Playwright for Python; .ci/run installs it):
the web UI's tests skip, saying why, when it or Playwright is missing."""

from __future__ import annotations

import pytest
from support.ui import chromium


@pytest.fixture(scope="session")
def browser():
    path = chromium()
    if path is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run does): cannot drive the UI")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture()
def page(browser, request):
    """A fresh page (1400x850); a script error fails the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 850})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(10_000)
    yield pg
    context.close()
    assert not errors, errors
