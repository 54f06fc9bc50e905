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
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from support.cli import STRATA
from support.paths import ROOT
from support.serve import PRODUCER, SCHEMA_URL, child_env

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
class UiServer:
    """`strata ui --no-browser --port 0` over `root`, in a child process."""

    root: str
    proc: subprocess.Popen | None = None
    url: str = ""
    log_path: str = ""

    def start(self, timeout: float = 60.0) -> UiServer:
        command = [str(STRATA)] if STRATA.exists() else [sys.executable, "-m", "strata.cli"]
        self.log_path = f"{self.root}.ui-{time.monotonic_ns()}.log"
        log = open(self.log_path, "w")  # noqa: SIM115 - the child writes it until it ends
        self.proc = subprocess.Popen([*command, "--store", self.root, "ui", "--port", "0", "--no-browser"],
                                     env=child_env(), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"strata ui: (http://\S+)", Path(self.log_path).read_text())
            if m:
                self.url = m.group(1)
                try:
                    if httpx.get(f"{self.url}/api/v1/health", timeout=2).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
            if self.proc.poll() is not None:
                raise AssertionError(f"strata ui ended with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.05)
        raise AssertionError(f"strata ui did not start:\n{self.log()}")

    def log(self) -> str:
        return Path(self.log_path).read_text() if self.log_path else ""

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(60)


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
