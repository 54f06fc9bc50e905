"""docs/iql.md stays true: every IQL example compiles, every error example is what IQL prints."""

from __future__ import annotations

import json

import pytest
from support.iql_docs import BLOCKS
from support.paths import ROOT

from iql import compile_query
from iql.errors import IqlError
from store.model import Catalog

IQL_BLOCKS = [b for info, b in BLOCKS if info == "iql"]
ERROR_BLOCKS = [b for info, b in BLOCKS if info == "" and b.startswith("iql: ")]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    bundle = json.loads((ROOT / "examples" / "movies.json").read_text())
    return Catalog.empty().merge_gsets(bundle["gsets"]).merge_types(bundle["types"])


def test_docs_have_examples():
    assert len(IQL_BLOCKS) >= 10 and len(ERROR_BLOCKS) >= 2


@pytest.mark.parametrize("block", IQL_BLOCKS, ids=[f"iql{i}" for i in range(len(IQL_BLOCKS))])
def test_iql_examples_compile(catalog, block):
    bound, plan = compile_query(block, catalog)
    assert plan.columns


@pytest.mark.parametrize("block", ERROR_BLOCKS, ids=[f"error{i}" for i in range(len(ERROR_BLOCKS))])
def test_error_examples_are_current(catalog, block):
    query = block.splitlines()[1].strip()
    with pytest.raises(IqlError) as info:
        compile_query(query, catalog)
    assert info.value.render() == block


def test_reserved_words_in_docs_match_the_grammar():
    from iql.parser import keywords

    doc = (ROOT / "docs" / "iql.md").read_text(encoding="utf-8")
    listed = doc.split("- Reserved words: `", 1)[1].split("`", 1)[0].split()
    assert sorted(w.upper() for w in listed) == keywords()
