"""Commits are atomic: readers see whole commits, a killed writer leaves the previous version,
and a second concurrent writer gets a clear error instead of a lost update."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from store import Store
from store.errors import ConcurrentWriteError
from store.storage import _HadoopFS

SMALL = {
    "format": "strata-bundle/1",
    "gsets": {"data": {"contains": [["Row", "Table"]]}},
    "elements": [{"id": "t", "granularity": "Table"}, {"id": "r", "granularity": "Row", "parents": ["t"]}],
}


def more(prefix: str, n: int = 3) -> dict:
    return {"format": "strata-bundle/1",
            "elements": [{"id": f"{prefix}{i}", "granularity": "Row", "parents": ["t"]} for i in range(n)]}


def ids(st: Store) -> set[str]:
    return {r.id for r in st.table("elements").collect()}


def test_readers_see_their_snapshot_until_refresh(spark, store_path):
    writer = Store.open(store_path, spark=spark)
    writer.ingest(SMALL)
    reader = Store.open(store_path, spark=spark)
    writer.ingest(more("a"))
    assert reader.version == 1 and ids(reader) == {"t", "r"}
    assert reader.refresh().version == 2 and ids(reader) == {"t", "r", "a0", "a1", "a2"}


def test_second_concurrent_writer_gets_a_clear_error_and_no_lost_update(spark, store_path):
    st = Store.open(store_path, spark=spark)
    st.ingest(SMALL)
    other = Store.open(store_path, spark=spark)
    with pytest.raises(ConcurrentWriteError, match="another writer committed version 2") as e:
        with other.transaction("slow writer") as slow:
            slow.ingest(more("slow"))  # staged, not yet published...
            st.ingest(more("fast"))  # ...when another writer publishes version 2 first
    assert "re-run" in e.value.hint
    st.refresh()
    assert st.version == 2
    assert ids(st) == {"t", "r", "fast0", "fast1", "fast2"}  # the winner's rows, intact
    segments = os.listdir(os.path.join(st.root, "tables", "elements"))
    assert len(segments) == 2  # the loser's staged segment was removed


def test_failed_transaction_publishes_nothing(spark, store_path):
    st = Store.open(store_path, spark=spark)
    st.ingest(SMALL)
    with pytest.raises(RuntimeError):
        with st.transaction("boom") as tx:
            tx.ingest(more("x"))
            raise RuntimeError("crash after staging")
    assert st.refresh().version == 1 and ids(st) == {"t", "r"}


KILL_SCRIPT = textwrap.dedent("""
    import sys
    from store.spark.session import get_session
    from store import Store
    spark = get_session("local[1]", {"spark.sql.shuffle.partitions": "1", "spark.ui.enabled": "false"})
    Store.open(sys.argv[1], spark=spark, engine="spark").ingest(sys.argv[2])
""")

# The local path writes its six segments within milliseconds, too fast to catch from outside: the
# writer kills itself once its first segment is written (from the progress step that counts them).
KILL_SCRIPT_LOCAL = textwrap.dedent("""
    import os, signal, sys
    from store import Store, progress

    class KillAfterFirstSegment:
        def start(self, name, total):
            self.writing = name.startswith("write ")
            return self
        def finish(self, step):
            pass
        def total(self, n):
            pass
        def advance(self, n=1):
            if self.writing:
                os.kill(os.getpid(), signal.SIGKILL)

    with progress.reporting(KillAfterFirstSegment()):
        Store.open(sys.argv[1], engine="local").ingest(sys.argv[2])
""")


def _kill_mid_ingest(store_path: Path, work: Path, script: str) -> tuple[int, bool]:
    """A store at version 1, then a big ingest by ``script`` in a child process, SIGKILLed between
    its first staged segment and its manifest: (the child's return code, whether it had staged)."""
    Store.open(str(store_path), engine="local").ingest(SMALL)
    big = work / "big.json"
    big.write_text(json.dumps(more("k", 20_000)))
    proc = subprocess.Popen([sys.executable, "-c", script, str(store_path), str(big)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tables = store_path / "tables"

    def staged():
        return [d for t in tables.iterdir() for d in t.iterdir() if d.name.startswith("v00000002-")]

    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None:
            if staged():  # the writer is between its first staged segment and its manifest
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return proc.returncode, bool(staged())


_ON_SPARK: dict[str, object] = {}


def start_in_background() -> None:
    """The Spark writer (a child process with a JVM of its own, ~15 s) killed mid-ingest from a
    thread, started once the suite's SparkSession is up (conftest.py) and checked by the test."""
    if _ON_SPARK:
        return
    work = Path(tempfile.mkdtemp(prefix="strata-sigkill-"))
    atexit.register(shutil.rmtree, work, True)
    _ON_SPARK["store"] = work / "store"

    def run() -> None:
        _ON_SPARK["result"] = _kill_mid_ingest(work / "store", work, KILL_SCRIPT)

    _ON_SPARK["thread"] = threading.Thread(target=run, daemon=True)
    _ON_SPARK["thread"].start()


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_sigkill_mid_ingest_leaves_the_previous_commit(spark, store_path, tmp_path, engine):
    if engine == "spark":
        start_in_background()
        _ON_SPARK["thread"].join(timeout=330)
        store_path, result = _ON_SPARK["store"], _ON_SPARK.get("result")
    else:
        result = _kill_mid_ingest(store_path, tmp_path, KILL_SCRIPT_LOCAL)
    assert result is not None, "the writer did not finish in time"
    code, staged = result
    assert code == -signal.SIGKILL, "the ingest finished before it could be killed mid-commit"
    assert staged, "the writer was killed before it staged a segment"
    reopened = Store.open(str(store_path), spark=spark)
    assert reopened.version == 1
    assert ids(reopened) == {"t", "r"}
    assert reopened.table("ancestors").count() == 3
    reopened.ingest(more("after"))  # and the store stays writable
    assert reopened.version == 2 and "after0" in ids(reopened)


def test_hadoop_filesystem_path_reads_and_publishes(spark, tmp_path):
    """The code path for hdfs://, s3a://, … exercised through Hadoop's file: implementation."""
    fs = _HadoopFS("file://" + str(tmp_path), spark)
    assert fs.publish("_strata/manifests/00000001.json", '{"a": 1}\n')
    assert fs.listdir("_strata/manifests") == ["00000001.json"]
    assert json.loads(fs.read_text("_strata/manifests/00000001.json")) == {"a": 1}
    assert fs.exists("_strata") and not fs.exists("nope")


def test_a_few_rows_append_without_spark_and_read_back_the_same(spark, tmp_path):
    """append_rows (capture's run and operator rows) writes one Parquet file with pyarrow on a local
    store and with Spark on a Hadoop path; Spark reads both the same, nested structs and nulls too."""
    import pyarrow as pa

    from store.storage import Storage

    schema = pa.schema([
        pa.field("run", pa.string(), False), pa.field("n", pa.int64()),
        pa.field("inputs", pa.list_(pa.field("element", pa.struct([
            pa.field("input", pa.int32(), False),
            pa.field("accessed", pa.list_(pa.field("element", pa.string(), False)))]), False)), False)])
    rows = [("r1", 7, [(0, ["text", "user.id_str"]), (1, None)]), ("r1", None, [])]
    for root in (str(tmp_path / "local"), "file://" + str(tmp_path / "hadoop")):
        st = Store.open(root, spark=spark)
        with st.transaction("rows") as tx:
            tx.append_rows("capture_test", rows, schema)
        with st.transaction("more rows") as tx:
            tx.append_rows("capture_test", [("r2", 1, [])], schema)
        back = sorted(((r.run, r.n, [(i.input, i.accessed) for i in r.inputs])
                       for r in Store.open(root, spark=spark).table("capture_test").collect()),
                      key=lambda r: (r[0], r[1] or 0))
        assert back == [("r1", None, []), ("r1", 7, [(0, ["text", "user.id_str"]), (1, None)]), ("r2", 1, [])]
    local = Storage(str(tmp_path / "local"), spark)
    seg = local.manifest().tables["capture_test"].segments[0]
    assert os.listdir(local.file_path(seg)) == ["part-00000.zstd.parquet"]  # one file, no Spark job
