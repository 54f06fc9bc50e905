"""Imports point one way (docs/architecture.md): the contracts in pyproject.toml hold.

store imports nothing of the other packages; capture imports store; iql imports store, grammar
and capture.tracing's public names; strata may import anything.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = {"store", "grammar", "capture", "iql", "tracing-public"}


def test_the_contracts_are_configured():
    api = pytest.importorskip("importlinter.api")
    config = api.read_configuration(str(ROOT / "pyproject.toml"))
    assert config["session_options"]["root_packages"] == ["store", "iql", "capture", "grammar", "strata"]
    assert {c["id"] for c in config["contracts_options"]} == CONTRACTS


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_imports_keep_the_layer_contract(contract):
    pytest.importorskip("importlinter")
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache", "--contract", contract], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        broken = out[out.find("Broken contracts"):] if "Broken contracts" in out else out
        pytest.fail(f"an import breaks the contract {contract!r} of pyproject.toml "
                    f"([tool.importlinter]):\n{broken}", pytrace=False)


def test_importing_the_store_loads_no_other_package():
    code = ("import sys, store, store.store, store.session, store.semantics, store.lineage; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'iql', 'capture', 'grammar', 'strata'}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True)
    assert proc.stdout.strip() == "[]"
