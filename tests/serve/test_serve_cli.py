"""`strata serve` on the command line: `strata --help` lists it without importing the server's
stack; `serve --help` says the defaults; a taken port is a user error (exit 2)."""

from __future__ import annotations

import socket
import subprocess
import sys

from support.paths import ROOT
from support.serve import child_env, strata_cli

STACK = ("fastapi", "starlette", "uvicorn", "pydantic")
PROBE = f"""\
import sys
from strata.cli import main
try:
    main(["--help"], prog_name="strata", standalone_mode=False)
finally:
    print("LOADED", sorted({{m.split(".")[0] for m in sys.modules}} & {set(STACK)!r}))
"""


def test_help_lists_serve_without_importing_the_server():
    r = subprocess.run([sys.executable, "-c", PROBE], env=child_env(), capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "serve " in r.stdout and "Serve the store as a lineage service" in r.stdout
    assert "LOADED []" in r.stdout


def test_serve_help_says_the_defaults(tmp_path):
    r = strata_cli(str(tmp_path / "store"), "serve", "--help")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "[default: 127.0.0.1]" in text and "[default: 5000;" in text and "$STRATA_API_KEY" in text


def test_a_taken_port_exits_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = strata_cli(str(tmp_path / "store"), "serve", "--port", str(port))
    assert r.returncode == 2
    assert f"strata: cannot listen on 127.0.0.1:{port}: Address already in use" in r.stderr
