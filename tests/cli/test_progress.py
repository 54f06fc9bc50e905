"""Progress of long commands (store/progress.py, strata/progress.py): steps reach the reporter
the application installed; the CLI draws them as a rich bar on a terminal and prints nothing
when its output is not a terminal."""

from __future__ import annotations

import io
import os
import sys

import pexpect
import pytest
from support.cli import STRATA, strata
from support.paths import EXAMPLES

from store import progress
from strata.progress import RichReporter


class Recorder:
    """A reporter that keeps what it is told (the protocol an application implements)."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def start(self, name, total):
        self.events.append(("start", name, total))
        return self

    def finish(self, step):
        self.events.append(("finish",))

    def advance(self, n=1):
        self.events.append(("advance", n))

    def total(self, n):
        self.events.append(("total", n))


def test_steps_reach_the_installed_reporter_only_inside_the_block():
    rec = Recorder()
    with progress.step("outside", 3) as s:
        s.advance(3)  # no reporter installed: nothing happens, nothing fails
    with progress.reporting(rec):
        with progress.step("components", total=10) as s:
            s.advance(4)
            s.advance(6)
        with pytest.raises(ValueError), progress.step("failing"):
            raise ValueError("boom")
    with progress.step("after") as s:
        s.advance()
    assert rec.events == [("start", "components", 10), ("advance", 4), ("advance", 6), ("finish",),
                          ("start", "failing", None), ("finish",)]


def test_the_rich_bar_shows_each_step_with_its_count():
    out = io.StringIO()
    from rich.console import Console

    reporter = RichReporter(Console(file=out, force_terminal=True, width=100))
    with reporter.bar, progress.reporting(reporter):
        with progress.step("read edges", total=5) as s:
            s.advance(5)
        with progress.step("components") as s:  # size unknown: ends at what it counted
            s.advance(7)
    text = out.getvalue()
    assert "read edges" in text and "5/5" in text
    assert "components" in text and "7/7" in text


def _in_a_terminal(*args: str) -> tuple[int, str]:
    """`strata ARGS` in a pseudo-terminal with no Java: (exit status, what it drew)."""
    command = str(STRATA) if STRATA.exists() else sys.executable
    args = ([] if STRATA.exists() else ["-m", "strata.cli"]) + list(args)
    env = {**os.environ, "JAVA_HOME": "/nonexistent", "COLUMNS": "120"}
    child = pexpect.spawn(command, args, env=env, encoding="utf-8", timeout=120, dimensions=(40, 120))
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


def test_ingest_and_index_draw_their_steps_on_a_terminal(tmp_path):
    root = str(tmp_path / "store")
    bundle = str(EXAMPLES / "movies.json")
    status, drawn = _in_a_terminal("--store", root, "ingest", bundle)
    assert status == 0, drawn
    assert "movies.json" in drawn and "committed version 1" in drawn
    status, drawn = _in_a_terminal("--store", root, "index")
    assert status == 0, drawn
    assert "encode ids" in drawn and "components" in drawn and "write index_nodes" in drawn
    piped = strata(root, "index", "--rebuild")
    assert piped.returncode == 0 and "encode ids" not in piped.stderr, piped.stderr


def test_show_draws_progress_on_a_terminal_and_nothing_when_piped(movies_root, tmp_path):
    html = tmp_path / "lineage.html"
    piped = strata(movies_root, "show", "avatar_lead_actor_v1", "-o", str(html))
    assert piped.returncode == 0, piped.stderr
    assert "select ids" not in piped.stderr and "━" not in piped.stderr
    status, drawn = _in_a_terminal("--store", movies_root, "show", "avatar_lead_actor_v1",
                                   "-o", str(tmp_path / "tty.html"))
    assert status == 0, drawn
    assert "select ids" in drawn and "read their rows" in drawn
    assert (tmp_path / "tty.html").exists()
