"""schemathesis against the served OpenAPI document (a short run: the coverage and fuzzing
phases, 4 examples an operation, a fixed seed): whatever it sends, the server answers without a
5xx. schemathesis runs as its command line does: its pytest plugin does not load under this
suite's pytest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from support.serve import Server, dumps, run_event

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


@pytest.mark.skipif(not SCHEMATHESIS.exists() and not shutil.which("schemathesis"), reason="schemathesis missing")
def test_no_generated_request_gets_a_server_error(tmp_path):
    srv = Server(str(tmp_path / "store")).start()
    try:
        httpx.post(f"{srv.url}/api/v1/lineage", content=dumps(run_event(job="j", inputs=("a",), outputs=("b",))),
                   headers={"Content-Type": "application/json"}, timeout=30)
        srv.wait_stored(1)
        r = subprocess.run([str(SCHEMATHESIS) if SCHEMATHESIS.exists() else "schemathesis", "run",
                            f"{srv.url}/openapi.json", "--checks", "not_a_server_error", "--max-examples", "4",
                            "--seed", "1", "--phases", "coverage,fuzzing", "--no-color"],
                           capture_output=True, text=True, timeout=240,
                           cwd=tmp_path)  # its cache folder, .schemathesis, goes there
    finally:
        assert srv.stop() == 0, srv.log()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "failed" not in r.stdout.split("Test cases:")[-1]
