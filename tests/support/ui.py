"""The web UI's tests and benchmark (tests/ui, tests/tracing/test_trace_ui.py,
benchmarks/bench_ui.py): a store of OpenLineage events at two versions, a `strata ui` child
process over a store, and the fixtures `browser` (one Debian Chromium a test module, driven by
Playwright for Python, whose own browser download is not used; .ci/run installs it; the tests
skip, saying why, without it or Playwright) and `page` (a fresh page; a script error fails the
test). A test module imports both fixtures. The browser lives for one module, not the session:
Playwright's sync API keeps an event loop running in the thread while it is open, and a later
module's `asyncio.run` would fail beside it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from support.cli import STRATA
from support.paths import ROOT
from support.serve import PRODUCER, SCHEMA_URL, Server, child_env

ORDERS = ROOT / "examples" / "openlineage" / "orders.jsonl"
FANOUT = 40  # jobs that read `events` at version 2: more than the page draws at once (25)


def chromium() -> str | None:
    """Debian's Chromium (.ci/run installs it), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def event(job: str, run: str, when: str, etype: str, inputs=(), outputs=(), ns: str = "warehouse") -> dict:
    return {"eventTime": when, "eventType": etype, "producer": PRODUCER, "schemaURL": SCHEMA_URL,
            "run": {"runId": run}, "job": {"namespace": ns, "name": job},
            "inputs": [{"namespace": ns, "name": d} for d in inputs],
            "outputs": [{"namespace": ns, "name": d} for d in outputs]}


def second_version_events(fanout: int = FANOUT) -> list[dict]:
    """What version 2 adds to examples/openlineage/orders.jsonl: `publish` (mart -> dashboard)
    and `fanout` jobs `load_NN` each reading `events` and writing `table_NN`."""
    out = [event("publish", "00000000-0000-0000-0000-0000000000a1", "2024-01-02T00:00:00Z", "COMPLETE",
                 ("mart",), ("dashboard",))]
    for i in range(fanout):
        out.append(event(f"load_{i:02d}", f"00000000-0000-0000-0001-0000{i:08d}", "2024-01-02T01:00:00Z", "COMPLETE",
                         ("events",), (f"table_{i:02d}",)))
    return out


def focus(page, node_id: str, steps: int = 30) -> None:
    """Move the accessible list's focus to `node_id` with the arrow keys (down, then up, at most
    `steps` presses each way)."""
    for key in ("ArrowDown", "ArrowUp"):
        for _ in range(steps):
            if page.evaluate("document.activeElement.closest('li')?.dataset.id") == node_id:
                return
            page.keyboard.press(key)
    raise AssertionError(f"{node_id} not reached with the arrow keys")


def strata(root: str, *args: str) -> subprocess.CompletedProcess:
    command = [str(STRATA)] if STRATA.exists() else [sys.executable, "-m", "strata.cli"]
    r = subprocess.run([*command, "--store", root, *args], env=child_env(), capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def two_version_store(root: str, work: Path) -> str:
    """Version 1: the orders example (raw -> extract -> stg -> report -> mart, column lineage);
    version 2: that plus second_version_events()."""
    strata(root, "ingest", "--format", "openlineage", str(ORDERS))
    more = work / "v2.jsonl"
    more.write_text("".join(json.dumps(e) + "\n" for e in second_version_events()))
    strata(root, "ingest", "--format", "openlineage", str(more))
    return root


@dataclass
class UiServer(Server):
    """`strata ui --no-browser --port 0` over `root`, in a child process."""

    command: ClassVar[str] = "ui"
    args: tuple[str, ...] = ("--no-browser",)

    def start(self, timeout: float = 60.0) -> UiServer:
        return super().start(timeout)


@pytest.fixture(scope="module")
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
