"""What an acknowledgement promises: several client processes posting at once, a server killed
with SIGKILL in the middle, a restart; every acknowledged event is in the store exactly once and
the store verifies. And the writer lock: a stale one does not block."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.paths import ROOT
from support.serve import Server, child_env, stored_keys, strata_cli

CLIENTS = 4
EACH = 200


def clients(url: str, n: int, out: Path, count: int = CLIENTS) -> list[subprocess.Popen]:
    env = child_env(PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return [subprocess.Popen([sys.executable, "-m", "support.serve_client", url, str(n), str(out / f"acked-{c}"),
                              str(c)], env=env, cwd=ROOT) for c in range(count)]


def acked(out: Path) -> list[str]:
    return [k for f in sorted(out.glob("acked-*")) for k in f.read_text().split()]


def test_concurrent_clients_every_acknowledged_event_once(tmp_path):
    srv = Server(str(tmp_path / "store")).start()
    try:
        start = time.perf_counter()
        procs = clients(srv.url, EACH, tmp_path)
        assert [p.wait(120) for p in procs] == [0] * CLIENTS
        took = time.perf_counter() - start
        keys = acked(tmp_path)
        assert len(keys) == CLIENTS * EACH
        assert srv.wait_stored(len(keys), timeout=60) == len(keys)
        print(f"{len(keys)} events from {CLIENTS} clients acknowledged in {took:.2f} s "
              f"({len(keys) / took:.0f} events/s)")
    finally:
        assert srv.stop() == 0, srv.log()
    stored = stored_keys(srv.root)
    assert sorted(stored) == sorted(keys)  # each acknowledged event, once


def test_sigkill_mid_stream_loses_no_acknowledged_event(tmp_path):
    root = str(tmp_path / "store")
    srv = Server(root).start()
    procs = clients(srv.url, 150, tmp_path, count=2)
    deadline = time.monotonic() + 60
    while len(acked(tmp_path)) < 60 and time.monotonic() < deadline:
        time.sleep(0.02)
    srv.stop(signal.SIGKILL)
    for p in procs:
        p.wait(60)
    keys = acked(tmp_path)
    assert 60 <= len(keys) < 300
    # the killed server's lock is stale: it does not block the restart
    again = Server(root).start()
    try:
        assert again.wait_stored(len(keys), timeout=60) >= len(keys)
    finally:
        assert again.stop() == 0, again.log()
    stored = stored_keys(root)
    assert len(stored) == len(set(stored))
    assert set(keys) <= set(stored)
    check = strata_cli(root, "verify")
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_stale_lock_does_not_block_a_cli_write(tmp_path):
    root = tmp_path / "store"
    (root / "_strata").mkdir(parents=True)
    (root / "_strata" / "serve.lock").write_text('{"url": "http://127.0.0.1:1", "pid": 999999}')
    r = strata_cli(str(root), "ingest", "--format", "openlineage", str(ROOT / "examples/openlineage/orders.jsonl"))
    assert r.returncode == 0, r.stderr
