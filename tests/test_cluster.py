"""No code path may rely on local mode: ingest and semantics under local-cluster[2,1,1024]
(two real executor JVMs). Spark allows one SparkContext per process, so this runs in a child."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.cluster

SCRIPT = textwrap.dedent("""
    import json, sys
    from strata.spark import get_session
    from store import Store
    from store import semantics as sem
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
    print("RESULT " + json.dumps(out))
    spark.stop()
""")


def test_ingest_and_semantics_on_a_local_cluster(tmp_path, examples_dir):
    from reference import Reference

    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "store"),
                           str(examples_dir / "movies.json")],
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[0][len("RESULT "):])
    ref = Reference([json.loads((examples_dir / "movies.json").read_text())])
    assert out["executors"] == 2
    assert out["version"] == 1
    assert out["influences2"] == sorted(d for d in ref.vertices("data")
                                        if ref.influences(d, "avatar_lead_actor_v1", 2))
    assert out["star"] == sorted(d for d in ref.vertices("data") if ref.influences("ymovies_page", d, None))
    assert out["under"] == sorted(v for v in ref.vertices() if ref.under(v, "combined_table"))
