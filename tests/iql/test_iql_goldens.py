"""Golden files for IQL error messages and EXPLAIN plans (pure: no Spark).

Each file in tests/fixtures/iql/ holds cases separated by `=== <id>` lines: the query, a
`---` line, then the expected text. Refresh after an intended change with
`IQL_UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/iql/test_iql_goldens.py` and review the diff.
"""

from __future__ import annotations

import json
import os

import pytest
from support.paths import FIXTURES, ROOT

from iql import compile_query
from iql.errors import IqlError
from iql.explain import explain_lines
from iql.planner import Stats
from store.model import Catalog

GOLDENS = FIXTURES / "iql"
UPDATE = os.environ.get("IQL_UPDATE_GOLDENS") == "1"


def load_goldens(name: str) -> list[tuple[str, str, str]]:
    """(id, query, expected) triples of fixture file `name`."""
    cases = []
    text = (GOLDENS / name).read_text(encoding="utf-8")
    for block in text.split("\n=== ")[0:]:
        block = block.removeprefix("=== ")
        if not block.strip():
            continue
        head, _, body = block.partition("\n")
        query, sep, expected = body.partition("\n---\n")
        assert sep, f"{name}: case {head!r} has no '---' line"
        cases.append((head.strip(), query.rstrip("\n"), expected.rstrip("\n")))
    return cases


def save_goldens(name: str, cases: list[tuple[str, str, str]]) -> None:
    parts = [f"=== {cid}\n{query}\n---\n{expected}\n" for cid, query, expected in cases]
    (GOLDENS / name).write_text("\n".join(parts), encoding="utf-8")


def movies_catalog() -> Catalog:
    bundle = json.loads((ROOT / "examples" / "movies.json").read_text())
    return Catalog.empty().merge_gsets(bundle["gsets"]).merge_types(bundle["types"])


STATS = Stats(
    type_counts={"WebPage": 2, "Version": 2, "Table": 3, "Column+Row": 3, "PigScript": 2,
                 "PigJob": 3, "MRTaskAttempt": 3, "File": 3, "Row": 3},
    kind_counts={"data": 20, "process": 14},
    index=False,
)


def error_text(query: str) -> str:
    try:
        compile_query(query, movies_catalog(), STATS)
    except IqlError as e:
        return f"{type(e).__name__}\n{e.render()}"
    return "(no error)"


def explain_text(query: str) -> str:
    bound, logical = compile_query(query, movies_catalog(), STATS)
    return "\n".join(explain_lines(logical, bound.warnings))


def _run(name: str, produce) -> None:
    cases = load_goldens(name)
    actual = [(cid, q, produce(q)) for cid, q, _ in cases]
    if UPDATE:
        save_goldens(name, actual)
        return
    for (cid, _, expected), (_, _, got) in zip(cases, actual, strict=True):
        assert got == expected, f"{name} case {cid!r} differs:\n{got}"


@pytest.mark.parametrize("name", ["errors.txt"])
def test_error_goldens(name):
    _run(name, error_text)


@pytest.mark.parametrize("name", ["explain.txt"])
def test_explain_goldens(name):
    _run(name, explain_text)


def test_every_error_golden_is_an_error_with_a_position():
    for cid, _query, expected in load_goldens("errors.txt"):
        assert expected.startswith("Iql"), cid
        if "empty" not in cid:
            assert "(line " in expected and "^" in expected, cid
