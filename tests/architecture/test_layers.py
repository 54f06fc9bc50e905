"""Imports point one way (docs/architecture.md): the contracts in pyproject.toml hold.

store imports nothing of the other packages; capture imports store and grammar (the tree-pattern
grammar); iql imports store, grammar and capture.tracing's public names; strata may import
anything. import-linter (a dev dependency, installed by `make test`) checks them all in one run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter import api
from support.paths import ROOT

CONFIG = api.read_configuration(str(ROOT / "pyproject.toml"))
CONTRACTS = sorted(c["id"] for c in CONFIG["contracts_options"])
# Contracts that must stay configured (a test fails if one is dropped from pyproject.toml).
REQUIRED = {"store", "grammar", "capture", "iql", "tracing-public", "acyclic", "store-wings", "duckdb-no-spark",
            "store-floor",
            "tracing-wings", "tracing-duckdb-no-spark", "tracing-local-path-no-spark", "iql-duckdb-no-spark",
            "iql-wings"}


@pytest.fixture(scope="module")
def lint_report() -> str:
    """The output of one `lint-imports` run over every contract."""
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return proc.stdout + proc.stderr


def test_the_contracts_are_configured():
    assert CONFIG["session_options"]["root_packages"] == ["store", "iql", "capture", "grammar", "strata"]
    assert REQUIRED <= set(CONTRACTS)


@pytest.mark.parametrize("contract", CONTRACTS)
def test_imports_keep_the_layer_contract(lint_report, contract):
    name = next(c["name"] for c in CONFIG["contracts_options"] if c["id"] == contract)
    status = re.search(rf"^{re.escape(name)} (KEPT|BROKEN)\b", lint_report, re.M)
    assert status is not None, f"lint-imports did not check {name!r}:\n{lint_report}"
    if status.group(1) != "KEPT":
        broken = lint_report[lint_report.find("Broken contracts"):]
        pytest.fail(f"an import breaks the contract {contract!r} of pyproject.toml "
                    f"([tool.importlinter]):\n{broken}", pytrace=False)


def test_importing_the_store_loads_no_other_package():
    code = ("import sys, store, store.store, store.spark.session, store.spark.semantics, store.lineage; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'iql', 'capture', 'grammar', 'strata'}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True)
    assert proc.stdout.strip() == "[]"
