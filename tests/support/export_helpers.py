"""Shared by tests/test_export_*.py: a small bundle with awkward ids, Neo4j's Cypher linter
(tests/js, npm package @neo4j-cypher/language-support) and a reference Cypher string decoder."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import TESTS

JS_DIR = TESTS / "js"

# Ids and values that must survive every target unchanged.
NASTY = {
    "table": "tab\"le 'one'",
    "row": "row\\1\nsecond line",
    "col": "Zürich ✓ 北京 🚀 — ‮rtl",
    "cell": "cell`with`backticks;--//",
    "job": "job\t$rows {x} \u0007bell",
}

BUNDLE = {
    "format": "strata-bundle/1",
    "gsets": {
        "data": {"contains": [["Row", "Table"], ["Column", "Table"]]},
        "process": {"contains": [["Job", "Script"]]},
    },
    "types": [
        {"name": "Cell", "granularities": ["Row", "Column"]},
        {"name": "Job", "granularities": ["Job"], "attributes": {"version": "int", "note": "string"}},
    ],
    "elements": [
        {"id": NASTY["table"], "granularity": "Table"},
        {"id": NASTY["row"], "granularity": "Row", "parents": [NASTY["table"]]},
        {"id": NASTY["col"], "granularity": "Column", "parents": [NASTY["table"]]},
        {"id": "out_table", "granularity": "Table"},
        {"id": "out_row", "granularity": "Row", "parents": ["out_table"]},
        {"id": "script", "granularity": "Script"},
        {"id": NASTY["job"], "granularity": "Job", "parents": ["script"],
         "attrs": {"version": 3, "note": "says \"hi\"\\n 'there'"}},
        {"id": "lonely", "granularity": "Table"},
    ],
    "vertices": [
        {"id": NASTY["cell"], "type": "Cell", "elements": [{"Row": NASTY["row"], "Column": NASTY["col"]}]},
    ],
    "edges": [
        {"src": NASTY["cell"], "process": NASTY["job"], "dst": "out_row"},
        {"src": NASTY["table"], "process": NASTY["job"], "dst": "out_table"},
    ],
}


_STORES: dict[int, object] = {}


def shared_store(spark, tmp_path_factory):
    """One store with BUNDLE for all export test modules (ingest once per session: it is slow)."""
    key = id(spark)
    if key not in _STORES:
        from store import Store

        st = Store.open(tmp_path_factory.mktemp("export") / "store", spark=spark)
        st.ingest(BUNDLE)
        _STORES[key] = st
    return _STORES[key]


def ensure_js() -> Path:
    """tests/js with node_modules installed (npm ci on first use); skip without node."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not installed: Neo4j's Cypher linter (npm) cannot run")
    if not (JS_DIR / "node_modules" / "@neo4j-cypher" / "language-support").is_dir():
        cmd = "ci" if (JS_DIR / "package-lock.json").exists() else "install"
        subprocess.run(
            [npm, cmd, "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=JS_DIR, check=True, capture_output=True, timeout=300,
        )
    return JS_DIR


def lint(items: list[dict]) -> list[dict]:
    """Run Neo4j's linter on [{"text", "parameters"}]; returns [{"diagnostics", "strings"}]."""
    js = ensure_js()
    proc = subprocess.run(
        ["node", "lint_cypher.mjs"], cwd=js, input=json.dumps({"items": items}),
        capture_output=True, text=True, encoding="utf-8", timeout=300, check=True,
    )
    return json.loads(proc.stdout)["results"]


_ESC = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def decode_cypher_string(token: str) -> str:
    """Reference decoder for a Cypher string literal token (Cypher manual, 'String literals')."""
    assert token[0] in "'\"" and token[-1] == token[0], token
    body, out, i = token[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESC:
            out.append(_ESC[nxt])
            i += 2
        elif nxt == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "U":
            out.append(chr(int(body[i + 2 : i + 10], 16)))
            i += 10
        else:
            raise ValueError(f"invalid escape {body[i:i + 2]!r} in {token!r}")
    # \uD83D\uDE80 style pairs combine into one character, as in Java strings
    text = "".join(out)
    return text.encode("utf-16", "surrogatepass").decode("utf-16")


def problems(result: dict) -> list[str]:
    return [f"{d['message']} at {d['start']}" for d in result["diagnostics"]]

