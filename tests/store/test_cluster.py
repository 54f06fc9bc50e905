"""No code path may rely on local mode: ingest, semantics and a captured run under
local-cluster[2,1,1024] (two real executor JVMs, each with its own Python workers: the one-pass
commit writes the store copy from there). Spark allows one SparkContext per process, so this runs
in a child, started in the background once the suite's SparkSession is up (conftest.py) and
checked last."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from support.paths import EXAMPLES, TESTS

pytestmark = [pytest.mark.cluster, pytest.mark.spark]  # Spark in a child process

SCRIPT = textwrap.dedent("""
    import json, sys
    from strata.spark import get_session
    from store import Store
    from store.spark import semantics as sem
    spark = get_session("local-cluster[2,1,1024]", {"spark.sql.shuffle.partitions": "4"})
    assert spark.sparkContext.master.startswith("local-cluster")
    st = Store.open(sys.argv[1], spark=spark)
    st.ingest(sys.argv[2])
    ids = lambda *xs: spark.createDataFrame([(x,) for x in xs], "id string")
    back = sem.influences(st, 2, dst=ids("avatar_lead_actor_v1"))
    star = sem.influences(st, None, src=ids("ymovies_page"))
    out = {
        "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1,
        "version": st.version,
        "influences2": sorted(r.src for r in back.collect()),
        "star": sorted(r.dst for r in star.collect()),
        "under": sorted(r.lower for r in sem.under(st, upper=ids("combined_table")).collect()),
    }
    sys.path.insert(0, sys.argv[5])  # the tests folder
    from support.running_example import running_example
    from capture import Tracker
    from capture.storing.stored import load_run
    tracker = Tracker(spark, st, pipeline="running-example", model=False)
    result = running_example(tracker.read.json(sys.argv[3], name="tweets"))
    info = tracker.write(result, sys.argv[4], format="json")
    written = spark.read.json(sys.argv[4]).collect()
    out["capture"] = {
        "one_pass": info.one_pass, "items": info.items,
        "users": sorted([r.user.id_str, sorted(x.text for x in r.tweets)] for r in written),
        "stored": load_run(st, info.run).result.count(),
    }
    # Parquet output: the split copy (hidden columns from the executors' Python workers, the
    # output's files linked), read back through the row-key join and TRACE's pyarrow fetch
    from capture.tracing import parse_pattern, trace
    split = tracker.write(running_example(tracker.read.json(sys.argv[3], name="tweets")), sys.argv[4] + "-pq")
    stored = load_run(st, split.run)
    agg = [c for c in stored.hidden.columns if c.startswith("__strata_agg_")]
    out["split"] = {
        "split": split.split, "items": split.items,
        "stored": sorted([r.user.id_str, sorted(x.text for x in r.tweets), [len(r[c]) for c in agg]]
                         for r in stored.result.collect()),
        "traced": len(trace(st, split.run, parse_pattern("//text")).rows()),
    }
    print("RESULT " + json.dumps(out))
    spark.stop()
""")


_CHILD: dict[str, object] = {}


def start_in_background() -> None:
    """Start the child (once); its files live in a temporary folder removed at exit."""
    if _CHILD:
        return
    from support.capture_helpers import TWEETS

    work = Path(tempfile.mkdtemp(prefix="strata-cluster-"))
    atexit.register(shutil.rmtree, work, True)
    # output to files, not pipes: nobody reads a pipe until the end, and a full one would stall the child
    _CHILD["out"], _CHILD["err"] = work / "stdout", work / "stderr"
    with open(_CHILD["out"], "w") as out, open(_CHILD["err"], "w") as err:
        _CHILD["proc"] = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(work / "store"), str(EXAMPLES / "movies.json"), TWEETS,
             str(work / "out"), str(TESTS)], stdout=out, stderr=err)


def test_ingest_and_semantics_on_a_local_cluster():
    from support.reference import Reference
    from support.running_example import TABLE_2

    start_in_background()
    proc = _CHILD["proc"]
    try:
        proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    stdout, stderr = _CHILD["out"].read_text(), _CHILD["err"].read_text()
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, stderr[-3000:]
    out = json.loads(lines[0][len("RESULT "):])
    ref = Reference([json.loads((EXAMPLES / "movies.json").read_text())])
    assert out["executors"] == 2
    assert out["version"] == 1
    assert out["influences2"] == sorted(d for d in ref.vertices("data")
                                        if ref.influences(d, "avatar_lead_actor_v1", 2))
    assert out["star"] == sorted(d for d in ref.vertices("data") if ref.influences("ymovies_page", d, None))
    assert out["under"] == sorted(v for v in ref.vertices() if ref.under(v, "combined_table"))
    # the captured run: Table 2 written by the executors, and the store copy they wrote complete
    cap = out["capture"]
    assert (cap["one_pass"], cap["items"], cap["stored"]) == (True, 3, 3)
    assert cap["users"] == sorted([uid, sorted(v)] for (uid, _), v in TABLE_2.items())
    # the split copy: the same rows, each paired with its own hidden columns (the aggregation
    # collected one member per tweet of the row), and TRACE reaches the inputs
    split = out["split"]
    assert (split["split"], split["items"]) == (True, 3)
    assert [row[:2] for row in split["stored"]] == cap["users"]
    assert all(row[2] == [len(row[1])] for row in split["stored"])
    assert split["traced"] > 0
