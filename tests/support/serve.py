"""A real `strata serve` in a child process, for tests/serve: start it on a free port, wait for
its health endpoint, stop it with SIGTERM (or kill it); OpenLineage events to post; the keys of
the events a store holds, read from its Parquet files."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import httpx
import pyarrow.parquet as pq

from store import Store
from store.interop.ol_commit import EVENTS_TABLE
from store.segments import parquet_files
from support.cli import STRATA
from support.paths import ROOT

PRODUCER = "https://github.com/strata/tests"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STRATA_STORE", "STRATA_ENGINE", "STRATA_API_KEY")}
    env.update(JAVA_HOME="/nonexistent", **extra)
    return env


@dataclass
class Server:
    """A `strata serve` child process over the store at `root` (`command`: the subcommand, whose
    first line names its URL)."""

    command: ClassVar[str] = "serve"
    root: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    url: str = ""
    log_path: str = ""

    def start(self, timeout: float = 30.0) -> Server:
        command = [str(STRATA)] if STRATA.exists() else [sys.executable, "-m", "strata.cli"]
        self.log_path = f"{self.root}.{self.command}-{time.monotonic_ns()}.log"
        log = open(self.log_path, "w")  # noqa: SIM115 - the child writes it until it ends
        self.proc = subprocess.Popen([*command, "--store", self.root, self.command, "--port", "0", *self.args],
                                     env=child_env(**self.env), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(rf"strata {self.command}: (http://\S+)", Path(self.log_path).read_text())
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None:
                raise AssertionError(f"strata {self.command} ended with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.05)
        else:
            raise AssertionError(f"strata {self.command} did not start:\n{self.log()}")
        while time.monotonic() < deadline:
            try:
                # the rest of the time: a loaded machine answers the first request in seconds
                wait = max(2.0, deadline - time.monotonic())
                if httpx.get(f"{self.url}/api/v1/health", timeout=wait).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"strata {self.command} is not healthy:\n{self.log()}")

    def log(self) -> str:
        return Path(self.log_path).read_text() if self.log_path else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def events_stored(self) -> int:
        return httpx.get(f"{self.url}/api/v1/events/lineage", params={"limit": 0}, headers=self.headers(),
                         timeout=10).json()["totalCount"]

    def headers(self) -> dict[str, str]:
        key = self.env.get("STRATA_API_KEY")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def health(self) -> dict:
        return httpx.get(f"{self.url}/api/v1/health", timeout=10).json()

    def settle(self, timeout: float = 30.0) -> dict:
        """Wait until every event the log took is folded into the store; the health then."""
        deadline = time.monotonic() + timeout
        while True:
            h = self.health()
            if h["folder"]["folded"] >= h["log"]["appended"] or time.monotonic() > deadline:
                return h
            time.sleep(0.05)

    def wait_stored(self, n: int, timeout: float = 120.0) -> int:
        """Wait until the newest committed version holds at least `n` events (the bound is for a
        loaded machine: a busy suite starts the server's commits' worker slowly)."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.events_stored()
            if got >= n or time.monotonic() > deadline:
                return got
            time.sleep(0.05)


def run_event(job: str = "job", run: str | None = None, event_type: str = "COMPLETE",
              when: str = "2024-01-01T00:00:00Z", inputs: tuple[str, ...] = (), outputs: tuple[str, ...] = (),
              ns: str = "tests") -> dict:
    """A RunEvent as a dict (datasets in namespace `ns`)."""
    return {"eventTime": when, "eventType": event_type, "producer": PRODUCER, "schemaURL": SCHEMA_URL,
            "run": {"runId": run or str(uuid.uuid4())}, "job": {"namespace": ns, "name": job},
            "inputs": [{"namespace": ns, "name": d} for d in inputs],
            "outputs": [{"namespace": ns, "name": d} for d in outputs]}


def stored_keys(root: str) -> list[str]:
    """The key of every row of the store's newest `openlineage_events` table (duplicates kept)."""
    st = Store.open(root, engine="local")
    entry = st.manifest.tables.get(EVENTS_TABLE)
    keys: list[str] = []
    for seg in entry.segments if entry else ():
        for f in parquet_files(st.storage.file_path(seg)):
            keys += pq.read_table(f, columns=["key"]).column("key").to_pylist()
    return keys


def strata_cli(root: str, *args: str) -> subprocess.CompletedProcess:
    command = [str(STRATA)] if STRATA.exists() else [sys.executable, "-m", "strata.cli"]
    return subprocess.run([*command, "--store", root, *args], env=child_env(), capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def dumps(body: object) -> str:
    return json.dumps(body, separators=(",", ":"))
