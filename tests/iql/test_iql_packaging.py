"""The grammars ship inside the installed package: build a wheel, install it elsewhere, parse
IQL and a tree pattern."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest


def test_grammar_loads_as_package_data():
    import grammar

    text = grammar.load("iql")
    assert "INFLUENCES" in text and text.startswith("//")
    text = grammar.load("pattern")
    assert "_DSLASH" in text and text.startswith("//")


@pytest.mark.slow
def test_grammar_is_in_the_wheel_and_parses_when_installed(installed_wheel, tmp_path):
    wheel, target = installed_wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "grammar/iql.lark" in names and "grammar/pattern.lark" in names
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"  # noqa: S608 - a Python probe script, not SQL
        f"sys.path.insert(0, {str(target)!r})\n"
        "import grammar, iql.parser, capture.tracing.pattern as tp\n"
        f"assert grammar.__file__.startswith({str(target)!r}), grammar.__file__\n"
        "stmt = iql.parser.parse('select p.id from WebPage p')\n"
        "print(stmt.query.from_[0].alias)\n"
        "print(tp.parse_pattern('//id_str = 1').branches[0].steps[0].name)\n"
    )
    run = subprocess.run([sys.executable, "-I", str(probe)], capture_output=True, text=True,
                         cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["p", "id_str"]
