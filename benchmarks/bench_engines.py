"""Interactive answers on the movie store: Strata's engines against DuckDB's recursive SQL.

The peer is what a user would write instead: DuckDB over the same Parquet files, the Ibis
`under` relation as a SQL view and `influences(2)` as `WITH RECURSIVE`, one hand-written query
per Table 1 question (the SQL is below). Both answer every question; the answers are checked
equal (as sets) before anything is timed.

Measured, side by side in one run:
- warm, in one process: each Table 1 query through `iql.run` on the local engine, on Spark
  (`--spark`), and the peer's SQL on a DuckDB connection (median and max of `--repeat` runs);
- new process: `strata query` and `strata lineage` on the local engine against a Python process
  that opens DuckDB and runs the peer's Q3, and `strata --help` against a Python process that
  imports click, in turns (median of `--processes` runs each), Strata's modules compiled to
  bytecode first as an installed wheel's are.

    .venv/bin/python benchmarks/bench_engines.py [--work benchmarks/out/engines] [--spark]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# The Ibis `under` (Definition 5.2) over the store's tables, and the data vertices.
UNDER_VIEW = """
CREATE OR REPLACE TEMP VIEW under_p AS
WITH j AS (
  SELECT c1.vertex AS lo, c1.ce AS e1, c2.vertex AS up, c2.ce AS e2, c2.elem AS b2
  FROM complex c1 JOIN ancestors a ON a.id = c1.elem JOIN complex c2 ON c2.elem = a.ancestor),
ce_under AS (
  SELECT j.lo, j.e1, j.up FROM j JOIN vertices v ON v.id = j.up
  GROUP BY j.lo, j.e1, j.up, j.e2, v.ce_size HAVING count(DISTINCT j.b2) = v.ce_size)
SELECT c.lo AS lower, c.up AS upper
FROM (SELECT DISTINCT lo, e1, up FROM ce_under) c JOIN vertices v ON v.id = c.lo
GROUP BY c.lo, c.up, v.n_ce HAVING count(*) = v.n_ce
"""

# One query per Table 1 question; `r(o, x)`: x influences(2) o, expanded backward from vs(id).
PEER = {
    "q1": """
WITH RECURSIVE vs AS (SELECT $1 AS id),
r(o, x, d) AS (
  SELECT vs.id, u.upper, 0 FROM vs JOIN under_p u ON u.lower = vs.id
  UNION
  SELECT r.o, u.upper, r.d + 1 FROM r JOIN edges e ON e.dst = r.x JOIN under_p u ON u.lower = e.src
  WHERE r.d < 2)
SELECT DISTINCT p.id FROM r JOIN vertices p ON p.id = r.x WHERE p.type = 'WebPage'""",
    "q2": """
WITH RECURSIVE vs AS (SELECT $1 AS id),
r(o, x, d) AS (
  SELECT vs.id, u.upper, 0 FROM vs JOIN under_p u ON u.lower = vs.id
  UNION
  SELECT r.o, u.upper, r.d + 1 FROM r JOIN edges e ON e.dst = r.x JOIN under_p u ON u.lower = e.src
  WHERE r.d < 2)
SELECT DISTINCT r.x FROM r JOIN vertices d ON d.id = r.x WHERE d.kind = 'data'""",
    "q3": """
SELECT DISTINCT t.id FROM edges e
JOIN under_p pa ON pa.lower = e.process JOIN under_p dt ON dt.lower = e.src
JOIN vertices t ON t.id = dt.upper
WHERE pa.upper = $1 AND t.type = 'Table'""",
    "q4": """
WITH RECURSIVE j AS (
  SELECT v.id FROM vertices v JOIN under_p u ON u.lower = v.id
  WHERE u.upper = $1 AND v.type = 'PigJob' AND TRY_CAST(map_extract_value(v.attrs, 'version') AS BIGINT) = 3),
d1 AS (
  SELECT DISTINCT dd.lower AS id FROM j JOIN under_p pj ON pj.upper = j.id
  JOIN edges e ON e.process = pj.lower JOIN under_p dd ON dd.upper = e.dst),
r(o, x, d) AS (
  SELECT d1.id, u.lower, 0 FROM d1 JOIN under_p u ON u.upper = d1.id
  UNION
  SELECT r.o, u.lower, r.d + 1 FROM r JOIN edges e ON e.src = r.x JOIN under_p u ON u.upper = e.dst
  WHERE r.d < 2)
SELECT DISTINCT t.id FROM r JOIN under_p ut ON ut.lower = r.x JOIN vertices t ON t.id = ut.upper
WHERE t.type = 'Table'""",
    "q5": """
WITH RECURSIVE vs AS (
  SELECT v.id FROM vertices v JOIN under_p u ON u.lower = v.id WHERE u.upper = $1 AND v.type = 'Version'),
r(o, x, d) AS (
  SELECT vs.id, u.upper, 0 FROM vs JOIN under_p u ON u.lower = vs.id
  UNION
  SELECT r.o, u.upper, r.d + 1 FROM r JOIN edges e ON e.dst = r.x JOIN under_p u ON u.lower = e.src
  WHERE r.d < 2)
SELECT vs.id FROM vs WHERE NOT EXISTS (
  SELECT 1 FROM r JOIN vertices s ON s.id = r.x
  WHERE r.o = vs.id AND s.type = 'WebPage' AND map_extract_value(s.attrs, 'license') != 'yahoo')""",
    "q6": """
WITH RECURSIVE vs AS (SELECT id FROM vertices WHERE type = 'Version'),
r(o, x, d) AS (
  SELECT vs.id, u.upper, 0 FROM vs JOIN under_p u ON u.lower = vs.id
  UNION
  SELECT r.o, u.upper, r.d + 1 FROM r JOIN edges e ON e.dst = r.x JOIN under_p u ON u.lower = e.src
  WHERE r.d < 2),
src AS (
  SELECT DISTINCT r.o AS v, s.id AS s, CAST(map_extract_value(s.attrs, 'authScore') AS BIGINT) AS score
  FROM r JOIN vertices s ON s.id = r.x WHERE s.type = 'WebPage'),
best AS (
  SELECT uv.lower AS v, max(src.score) AS m FROM under_p uv
  JOIN vertices cp ON cp.id = uv.upper AND cp.type = 'Column+Row'
  JOIN under_p uv2 ON uv2.upper = cp.id JOIN src ON src.v = uv2.lower GROUP BY uv.lower)
SELECT src.v, src.score FROM src JOIN best ON best.v = src.v WHERE src.score = best.m""",
}
PARAMS = {"q1": ["avatar_lead_actor_v1"], "q2": ["combined_table"], "q3": ["merge_map_task2_attempt1"],
          "q4": ["extract_script"], "q5": ["combined_table"], "q6": []}
TABLES = ("vertices", "complex", "ancestors", "edges")
PACKAGES = ("store", "iql", "capture", "grammar", "strata")


def peer_connection(st):
    """A DuckDB connection with the store's committed tables as views, and `under_p`."""
    import duckdb

    con = duckdb.connect()
    for name in TABLES:
        con.read_parquet(st.local().files(name)).create_view(name)
    con.execute(UNDER_VIEW)
    return con


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """(median ms, max ms, last answer) of `repeat` calls after one warm-up call."""
    out = fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ts), max(ts), out


def new_process(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / "out" / "engines"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--spark", action="store_true", help="also time each query on Spark (starts a JVM)")
    args = ap.parse_args()

    from support.movies import TABLE1

    import iql
    from store import Store

    store_path = Path(args.work) / "store"
    if not store_path.exists():
        Store.open(store_path).ingest(str(ROOT / "examples" / "movies.json"))

    def no_spark():
        raise AssertionError("the local engine started Spark")

    st = Store.open(store_path, spark=no_spark, engine="local")
    con = peer_connection(st)
    spark_st = Store.open(store_path, engine="spark") if args.spark else None
    print(f"movie store {store_path}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; warm medians "
          f"of {args.repeat} runs (ms)")
    header = f"{'query':6} {'local':>8} {'max':>7} {'DuckDB SQL':>11} {'local/SQL':>10}"
    print(header + (f" {'spark':>9} {'spark/local':>12}" if spark_st else ""))
    for qid, text, expected, _ in TABLE1:
        med, worst, rows = timed(lambda text=text: iql.run(st, text).rows(), args.repeat)
        pmed, _, prow = timed(lambda qid=qid: con.execute(PEER[qid], PARAMS[qid]).fetchall(), args.repeat)
        assert set(rows) == expected == set(prow), (qid, rows, prow)
        line = f"{qid:6} {med:8.1f} {worst:7.1f} {pmed:11.1f} {med / pmed:10.2f}"
        if spark_st is not None:
            smed, _, srows = timed(lambda text=text: iql.run(spark_st, text).rows(), max(3, args.repeat // 5))
            assert set(srows) == expected
            line += f" {smed:9.0f} {smed / med:12.0f}"
        print(line)

    env = dict(os.environ, JAVA_HOME="/nonexistent")  # a JVM start would fail: proves none starts
    strata = str(Path(sys.executable).with_name("strata"))
    q3 = TABLE1[2][1]
    files = [a for name in TABLES for a in (name, ",".join(st.local().files(name)))]
    peer_script = ("import sys, duckdb\nargs = sys.argv[1:]\ncon = duckdb.connect()\n"
                   "for name, paths in zip(args[0::2], args[1::2]):\n"
                   "    con.read_parquet(paths.split(',')).create_view(name)\n"
                   f"con.execute({UNDER_VIEW!r})\n"
                   f"print(con.execute({PEER['q3']!r}, ['merge_map_task2_attempt1']).fetchall())\n")
    commands = {
        "strata query Q3": [strata, "--store", str(store_path), "query", q3],
        "strata lineage": [strata, "--store", str(store_path), "lineage", "avatar_lead_actor_v1"],
        "python + DuckDB SQL Q3": [sys.executable, "-c", peer_script, *files],
        "strata --help": [strata, "--help"],
        "python -c 'import click'": [sys.executable, "-c", "import click"],
    }
    peers = {"strata query Q3": "python + DuckDB SQL Q3", "strata lineage": "python + DuckDB SQL Q3",
             "strata --help": "python -c 'import click'"}
    # Strata's modules as bytecode, as pip leaves an installed wheel: an editable checkout under
    # PYTHONDONTWRITEBYTECODE would compile them at each start.
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(ROOT / p) for p in PACKAGES)], check=True)
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(args.processes):
        for name, cmd in commands.items():
            times[name].append(new_process(cmd, env))
    print(f"new process, wall seconds, median of {args.processes} (in turns; no JVM may start):")
    for name, ts in times.items():
        med = statistics.median(ts)
        peer = peers.get(name)
        ratio = f"; {med / statistics.median(times[peer]):.2f}x {peer}" if peer else ""
        print(f"  {name:26} {med:6.2f} s  (min {min(ts):.2f}, max {max(ts):.2f}{ratio})")


if __name__ == "__main__":
    main()
