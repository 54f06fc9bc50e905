"""TPC-H and TPC-DS queries at scale factor 0.01 under capture: a fixed set that together uses
the operator classes the two suites need beyond plain scans, filters, joins and aggregations
(``USES``: an uncorrelated scalar subquery, EXISTS/NOT EXISTS as semi, anti and existence
joins, INTERSECT, ROLLUP, a rank window, ORDER BY ... LIMIT), at a cost the suite can carry;
correlated scalar subqueries, outer joins, UNION, EXCEPT and window aggregates are in the other
capture tests (test_capture_auto.py's operator table), and ``make test-tpc`` has them all.
``make test-tpc`` runs all 121 the same way in new processes (benchmarks/tpc/run.py).

The data and the query texts come from DuckDB's TPC extensions, turned into Spark SQL by sqlglot
(benchmarks/tpc/run.py ``--prepare``, into build/tpc/; ``make test`` makes them beside the tests
that need no JVM, and this module makes them when they are missing). Each query runs through the
unmodified job of benchmarks/tpc/job.py in the suite's session as `strata capture` runs a script
(``runpy``, ``sys.argv`` set): plainly, then inside ``capture.capturing``. The captured result must
be the plain one (in order where the query orders), TPC-H's must have the row count of the answer
the extension ships, the captured run must hold the operators that the query is here for
(``USES``), and one result item drawn from all of them must pass the replay check
(``capture.tracing.check``: the query run again on exactly the inputs its trace names gives the
item back; an anti join or a LIMIT make it the weaker check, which must hold too).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.paths import ROOT

from capture import capturing, run_script
from capture.storing.runs import read_head
from capture.tracing import check, parse_pattern
from store import Store
from store.errors import UserError

pytestmark = pytest.mark.spark

TPC = ROOT / "build" / "tpc"
JOB = ROOT / "benchmarks" / "tpc" / "job.py"

# query -> what of the captured run it is here for: (operator type, a word of its method or
# Spark's node in its detail), each of which must be in the run
USES = {
    # NOT EXISTS (an anti join), an uncorrelated scalar subquery (avg), substring
    ("tpch", "22"): {("join", "LeftAnti"), ("join", "LeftOuter"), ("select", "substring")},
    # EXISTS AND (EXISTS OR EXISTS): a semi join and existence joins
    ("tpcds", "35"): {("join", "ExistenceJoin"), ("join", "LeftSemi")},
    # INTERSECT of three channels (semi joins + distinct), then a count(*) over it
    ("tpcds", "38"): {("join", "LeftSemi"), ("aggregation", "distinct")},
    # ROLLUP (Expand), grouping(), rank() over a partition, ORDER BY ... LIMIT
    ("tpcds", "86"): {("flatten", "expand"), ("select", "rank"), ("limit", "GlobalLimit")},
}


def _prepared(suite: str) -> Path:
    out = TPC / f"{suite}-sf0.01"
    if not (out / "spark_queries.json").exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "tpc" / "run.py"), "--suite", suite, "--prepare",
                        "--work", str(TPC)], check=True)
    return out


def _job(out: Path, target: Path, n: str) -> dict:
    """job.py's arguments for query ``n`` (its result in ``target/q<n>``) as `strata capture` records them."""
    return {"script": str(JOB), "args": [str(out / "data"), str(target), str(out / "spark_queries.json"), n],
            "cwd": str(out)}


def _run(program: dict) -> None:
    """``program`` run as `strata capture` runs a script (``sys.argv`` set, capture.run_script)."""
    argv = sys.argv
    sys.argv = [program["script"], *program["args"]]
    try:
        run_script(program["script"], UserError)
    finally:
        sys.argv = argv


def _rows(folder: Path, ordered: bool) -> list[str]:
    rows = [json.dumps(r, sort_keys=True, default=str) for r in pq.read_table(folder).to_pylist()]
    return rows if ordered else sorted(rows)


CASES = sorted(USES, key=lambda k: (k[0], int(k[1])))


@pytest.mark.parametrize(("suite", "n"), CASES, ids=[f"{s}-q{n}" for s, n in CASES])
def test_query_is_captured_with_its_result_and_a_trace_that_replays(spark, tmp_path, suite, n):
    out = _prepared(suite)
    text = json.loads((out / "spark_queries.json").read_text())[n]
    _run(_job(out, tmp_path / "plain", n))
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    program = _job(out, tmp_path / "captured", n)
    with capturing(spark, store, pipeline=f"{suite}-q{n}", model=False, program=program) as cap:
        _run(program)
    [info] = cap.runs
    ordered = "ORDER BY" in text.upper()
    got = _rows(tmp_path / "captured" / f"q{n}", ordered)
    assert got == _rows(tmp_path / "plain" / f"q{n}", ordered)
    answer = json.loads((out / "answers.json").read_text()).get(n)
    if answer is not None:  # a header line, then a line per row ('' is a row of NULLs), maybe a newline
        lines = answer.split("\n")
        assert len(got) == len(lines[:-1] if lines[-1] == "" else lines) - 1
    ops = read_head(store, info.run).operators
    for kind, word in USES[(suite, n)]:
        assert any(o.type.value == kind and (word in o.method or word in (o.detail or "")) for o in ops), \
            f"no {kind} operator with {word!r} in the captured run: {[(o.type.value, o.method) for o in ops]}"
    done = check(store, info.run, parse_pattern("/*"), sample=1)
    assert len(done.items) == 1 and done.passed, done.render()
    assert done.items[0].verdict in ("ok", "weaker"), done.render()
