"""How modules import (docs/architecture.md, "Dependencies"): a function-local import only where
it defers a heavy dependency, and a comment on its line (or the line above) says so; no private
name (`_name`) imported from another module. Read from the source with `ast`, no import."""

from __future__ import annotations

import ast

import pytest
from support.paths import ROOT

PACKAGES = ("store", "iql", "capture", "grammar", "strata")


def _modules():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield path.relative_to(ROOT), path.read_text(encoding="utf-8")


def _local_imports(tree: ast.Module):
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield node


@pytest.mark.parametrize("rel", [rel for rel, _ in _modules()], ids=str)
def test_a_function_local_import_says_what_it_defers(rel):
    source = (ROOT / rel).read_text(encoding="utf-8")
    lines = source.splitlines()
    silent = sorted({f"{rel}:{node.lineno}: {lines[node.lineno - 1].strip()}"
                     for node in _local_imports(ast.parse(source))
                     if "#" not in lines[node.lineno - 1]
                     and not (node.lineno > 1 and lines[node.lineno - 2].strip().startswith("#"))})
    assert not silent, ("import at the top of the module, or say what the import defers (a heavy "
                        "dependency) in a comment:\n  " + "\n  ".join(silent))


def test_no_private_name_is_imported_from_another_module():
    found = []
    for rel, source in _modules():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                found += [f"{rel}:{node.lineno}: from {node.module} import {a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, "make the name public where it is defined, or keep its use there:\n  " + "\n  ".join(found)
