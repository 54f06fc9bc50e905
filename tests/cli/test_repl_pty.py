"""`strata repl` driven through a real pseudo-terminal (pexpect), as a user would type.

One session does everything: a multi-line query, Tab completion of an attribute, a wrong one
(caret message, the loop goes on), `\\timing`, `\\d WebPage`, `\\export`, Ctrl-C at the prompt
(clears the input), Ctrl-C during a long query on the local engine (interrupts DuckDB, the REPL
lives on) -- all of it without a JVM (no child process) --, then `\\engine spark` and Ctrl-C
during a long query on Spark (cancels its jobs), `\\q` (exit 0).

Most of the session's time is waiting (for a long query to be under way, for completion to
draw), so it runs in a background thread started once the suite's SparkSession is up
(conftest.py), and the test collects its outcome last: the waits overlap the rest of the suite.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from support.paths import ROOT

pexpect = pytest.importorskip("pexpect")

STRATA = Path(sys.executable).parent / "strata"
START = 60  # seconds: the REPL starts no JVM, but the machine may be loaded
STEP = 180  # a step that starts Spark may take minutes on a loaded machine


def _children(pid: int) -> list[int]:
    """Processes below ``pid`` (Linux /proc), e.g. the JVM that Spark's start launches."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, parent in parents.items() if parent == p]
        out += kids
        todo += kids
    return out


_RUN: dict[str, object] = {}


def start_in_background() -> None:
    """Ingest the movies store (`strata ingest`: in-process, no JVM) and run the session in a
    thread (once); its files live in a temporary folder removed at exit."""
    if _RUN or not STRATA.exists():
        return
    tmp = Path(tempfile.mkdtemp(prefix="strata-repl-"))
    atexit.register(shutil.rmtree, tmp, True)
    _RUN["tmp"] = tmp

    def run() -> None:
        try:
            store = tmp / "store"
            subprocess.run([str(STRATA), "--store", str(store), "ingest", str(ROOT / "examples" / "movies.json")],
                           check=True, capture_output=True, timeout=START)
            _RUN["status"] = _session(store, tmp)
        except BaseException as e:  # noqa: BLE001 - re-raised by the test
            _RUN["error"] = e

    _RUN["thread"] = threading.Thread(target=run, name="repl-pty", daemon=True)
    _RUN["thread"].start()


def _spawn(store: Path, tmp_path: Path):
    env = dict(os.environ, STRATA_HISTORY=str(tmp_path / "history"), PAGER="cat", TERM="xterm",
               PROMPT_TOOLKIT_NO_CPR="1")
    env.pop("STRATA_STORE", None)
    child = pexpect.spawn(
        str(STRATA),
        ["--store", str(store), "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2",
         "--conf", "spark.ui.enabled=false", "repl"],
        env=env, encoding="utf-8", timeout=STEP, dimensions=(60, 160),
    )
    child.logfile_read = open(tmp_path / "pty.log", "w")  # noqa: SIM115 - closed with the child
    return child


def _prompt(child, timeout=STEP) -> None:
    child.expect("iql>", timeout=timeout)


@pytest.mark.spark  # the session's `\engine spark` starts Spark in the child
@pytest.mark.skipif(not STRATA.exists(), reason="the strata script is not installed in this venv")
def test_repl_session_in_a_terminal():
    start_in_background()
    _RUN["thread"].join(timeout=2 * START + 8 * STEP)
    assert not _RUN["thread"].is_alive(), "the REPL session did not finish"
    if "error" in _RUN:
        raise _RUN["error"]
    status = _RUN["status"]
    assert status == 0, (_RUN["tmp"] / "pty.log").read_text()


def _session(movies_path: Path, tmp_path: Path) -> int | None:
    """The whole session (module docstring); returns the REPL's exit status."""
    child = _spawn(movies_path, tmp_path)
    try:
        child.expect("strata repl on", timeout=START)
        _prompt(child, START)

        # A statement over three lines: Enter without ';' continues it.
        child.send("select p.id, p.authScore\r")
        child.expect(r"\.\.\.>")
        child.send("from WebPage p\r")
        child.expect(r"\.\.\.>")
        child.send("order by p.authScore desc;\r")
        child.expect(r"ymovies_page\s*│\s*5.*imdb_page\s*│\s*3")
        child.expect(r"\(2 rows\)")
        _prompt(child)

        # A wrong query: the message with a caret under the bad name, then the prompt again.
        child.send("select p.idd from WebPage p;\r")
        child.expect("has no attribute 'idd'")
        child.expect(r"select p\.idd from WebPage p\r\n\s+\^\^\^\^\^")
        child.expect("did you mean 'id'")
        _prompt(child)

        child.send("\\timing on\r")
        child.expect("Timing is on.")
        _prompt(child)

        child.send("\\d WebPage\r")
        child.expect("type WebPage")
        child.expect(r"attributes.{0,40}id: string, authScore: int, license: string")
        child.expect(r"elements.{0,40}2")
        child.expect(r"Time: \d+\.\d+ s")
        _prompt(child)

        # \export without a selection exports the last query's result.
        script = tmp_path / "pages.cypher"
        child.send(f"\\export {script}\r")
        child.expect("exported 2 nodes")
        _prompt(child)
        assert "imdb_page" in script.read_text() and "ymovies_page" in script.read_text()

        # Tab completes an attribute of the alias `p` from the catalog: p.auth -> p.authScore.
        child.send("select p.id from WebPage p where p.auth")
        time.sleep(1)
        child.send("\t")
        time.sleep(3)
        child.send(" > 4;\r")
        child.expect(r"ymovies_page\s*│")
        child.expect(r"\(1 row\)")
        _prompt(child)

        # Ctrl-C at the prompt throws the typed text away.
        child.send("select garbage")
        time.sleep(1)
        child.send("\x03")
        time.sleep(1)
        child.send("\\timing off\r")
        child.expect("Timing is off.")
        _prompt(child)

        # Ctrl-C while a long query runs cancels it, not the REPL. An 8-way cross join (~1.4e12
        # rows) runs for minutes even on a quiet machine. It reads a few hundred rows: the local
        # engine runs it, and Ctrl-C interrupts DuckDB.
        cross = "select count(*) from Any a, Any b, Any c, Any d, Any e, Any f, Any g, Any h;\r"
        child.send(cross)
        time.sleep(6)
        child.send("\x03")
        child.expect("cancelled")
        _prompt(child)
        child.send("select count(*) as n from Version v;\r")
        child.expect(r"\(1 row\)")
        _prompt(child)
        if Path("/proc").is_dir():
            assert _children(child.pid) == [], "the REPL started a process (a JVM) for local work"

        # On Spark (started by this statement) Ctrl-C cancels the statement's jobs.
        child.send("\\engine spark\r")
        child.expect(r"Engine is spark")
        _prompt(child)
        child.send(cross)
        time.sleep(6)
        child.send("\x03")
        child.expect("cancelled", timeout=STEP)
        _prompt(child)
        child.send("\\timing on\r")
        child.expect("Timing is on.")
        _prompt(child)
        child.send("select count(*) as n from Version v;\r")
        child.expect(r"\(1 row\)")
        child.expect(r"Time: \d+\.\d+ s \(spark engine\)")
        _prompt(child)
        child.send("\\engine auto\r")
        child.expect(r"Engine is auto")
        _prompt(child)

        child.send("\\q\r")
        child.expect(pexpect.EOF, timeout=STEP)
    finally:
        child.close(force=True)
    return child.exitstatus
