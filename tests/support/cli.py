"""`strata` in a new process that cannot start a JVM (JAVA_HOME points nowhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.paths import ROOT

STRATA = Path(sys.executable).parent / "strata"  # the console script, as a user runs it


def strata(root: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`strata --store root args...` in a new process that cannot start a JVM."""
    child = {k: v for k, v in os.environ.items() if k not in ("STRATA_STORE", "STRATA_ENGINE", "STRATA_LOCAL_ROWS")}
    child.update(JAVA_HOME="/nonexistent", **(env or {}))
    command = [str(STRATA)] if STRATA.exists() else [sys.executable, "-m", "strata.cli"]
    return subprocess.run([*command, "--store", root, *args], env=child, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
