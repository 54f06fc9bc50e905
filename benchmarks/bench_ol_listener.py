"""Strata capture beside OpenLineage's Spark listener, on the same unmodified PySpark jobs.

    make openlineage-jar
    python benchmarks/bench_ol_listener.py --reps 2 --work benchmarks/out/ol-listener

The jobs: examples/capture/tweets_job.py and every script of tests/capture/capture_corpus/ (their
inputs written here as the corpus test writes them), plus `startup`, a script that only starts
its SparkSession. Each runs in a new process three ways, interleaved (the order rotates per job
and repetition):

* plain    — `python job.py ARGS`, Spark configured as `strata` configures it (strata/spark.py:
             the same master, shuffle partitions and settings, given as PYSPARK_SUBMIT_ARGS);
* listener — the same, plus OpenLineage's listener: its jar on spark.jars,
             spark.extraListeners=io.openlineage.spark.agent.OpenLineageSparkListener, the file
             transport (one JSON Lines file per run);
* capture  — `strata --store S --master M capture -- job.py ARGS` (a new store per run).

Per job and in total: the median wall time of the whole process (JVM start included; `startup`
shows that fixed part) and its ratios to plain and to the listener, and the peak RSS of the
process tree (python driver + JVM + python workers; sampled every 0.1 s from /proc).

Then the column lineage of the first repetition: Strata's (`strata export openlineage` of the
captured runs) against the listener's columnLineage facets, per output dataset and field (outputs
named with their run's output folder as `<out>`): same input fields? same transformation types?
Finally every listener event file is ingested into one store (`strata ingest --format openlineage`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from support.ol_listener import (  # noqa: E402
    column_lineage,
    compare,
    listener_conf,
    listener_jar,
    read_events,
    submit_args,
)

from store.spark.session import session_conf  # noqa: E402

CORPUS = ROOT / "tests" / "capture" / "capture_corpus"
EXAMPLE = ROOT / "examples" / "capture"
MODES = ("plain", "listener", "capture")
STARTUP = "from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().range(1).count()\n"


# ----------------------------------------------------------------------------- inputs and jobs
def write_inputs(root: Path) -> Path:
    """The corpus inputs (tests/capture/test_capture_corpus.py's data), without a JVM."""
    import importlib.util

    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = importlib.util.spec_from_file_location("corpus_test", ROOT / "tests" / "capture" / "test_capture_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    CUSTOMERS, EVENTS, ORDERS, PRODUCTS = corpus.CUSTOMERS, corpus.EVENTS, corpus.ORDERS, corpus.PRODUCTS  # noqa: N806

    root.mkdir(parents=True, exist_ok=True)
    (root / "orders.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ORDERS))
    lines = ["customer_id,name,country,active"] + [
        f"{c['customer_id']},{c['name']},{c['country']},{str(c['active']).lower()}" for c in CUSTOMERS]
    (root / "customers.csv").write_text("\n".join(lines) + "\n")
    (root / "products.parquet").mkdir(exist_ok=True)
    schema = pa.schema([("sku", pa.string()), ("category", pa.string()), ("price", pa.float64())])
    pq.write_table(pa.Table.from_pylist(PRODUCTS, schema), root / "products.parquet" / "part-00000.parquet")
    (root / "events").mkdir(exist_ok=True)
    for m, evs in EVENTS.items():
        (root / "events" / f"2024-0{m}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    (root / "logs.txt").write_text("GET /a ok\nget /b FAIL\nGET /a ok\n\nPOST /c ok\n")
    return root


def jobs(work: Path, inputs: Path, only: set[str] | None) -> dict[str, tuple[Path, list[str]]]:
    """name -> (script, arguments; `{out}` stands for the run's own output folder)."""
    startup = work / "startup.py"
    startup.write_text(STARTUP)
    out = {"startup": (startup, []),
           "tweets_job": (EXAMPLE / "tweets_job.py", [str(EXAMPLE / "tweets.json"), "{out}/by_user"])}
    for p in sorted(CORPUS.glob("*.py")):
        out[p.stem] = (p, [str(inputs), "{out}", "x"])
    return {k: v for k, v in out.items() if only is None or k in only or k == "startup"}


# ----------------------------------------------------------------------------- one run
def _tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total


def run(cmd: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS of the process tree; a failed run stops the benchmark."""
    peak = [0]
    with open(log, "w") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                peak[0] = max(peak[0], _tree_rss(proc.pid))

        t = threading.Thread(target=sample, daemon=True)
        t.start()
        rc = proc.wait()
        secs = time.perf_counter() - t0
        done.set()
        t.join()
    if rc != 0:
        sys.exit(f"error: {' '.join(cmd[:6])} ... exited with {rc}; its output is in {log}")
    return secs, peak[0]


def command(mode: str, script: Path, args: list[str], run_dir: Path, master: str, jar: Path
            ) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [a.replace("{out}", str(run_dir / "out")) for a in args]
    if mode == "capture":
        return [sys.executable, "-m", "strata.cli", "--store", str(run_dir / "store"), "--master", master,
                "capture", "--", str(script), *args], env
    conf = session_conf(master)  # what `strata` starts Spark with, capture's jar aside
    if mode == "listener":
        conf.update(listener_conf(jar, run_dir / "events.jsonl"))
    env.update(PYSPARK_SUBMIT_ARGS=submit_args(conf), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    return [sys.executable, str(script), *args], env


# ----------------------------------------------------------------------------- report
def strata_events(run_dir: Path) -> list[dict]:
    out = run_dir / "strata-events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "strata.cli", "--store", str(run_dir / "store"), "export", "openlineage",
                    "--out", str(out)], check=True, env=env, capture_output=True)
    return read_events(out)


def table_outputs(strata: dict, listener: dict) -> dict:
    """Strata's output key -> the listener's, for a catalog table Strata names by its identifier
    (`spark_catalog.corpus_x.pricey`: a run captured before capture_tables) and the listener by
    its location (`<out>/db/pricey`). Matched on the table's last name part. Runs with
    capture_tables are named by location by both: nothing to map."""
    by_base = {k[1].rsplit("/", 1)[-1]: k for k in listener}
    return {k: by_base[k[1].rsplit(".", 1)[-1]] for k in strata
            if k not in listener and "/" not in k[1] and k[1].rsplit(".", 1)[-1] in by_base}


def run_all(a: argparse.Namespace, work: Path, jar: Path) -> dict:
    """Every job three ways, interleaved; prints the times and memory; returns the jobs."""
    inputs = write_inputs(work / "in")
    todo = jobs(work, inputs, set(a.only.split(",")) if a.only else None)
    print(f"load average at start: {os.getloadavg()}; listener jar {jar.name}", flush=True)
    secs: dict[tuple[str, str], list[float]] = {}
    rss: dict[tuple[str, str], list[int]] = {}
    for rep in range(a.reps):
        for i, (name, (script, args)) in enumerate(todo.items()):
            k = (rep + i) % 3
            for mode in MODES[k:] + MODES[:k]:
                run_dir = work / f"{name}-{mode}-{rep}"
                run_dir.mkdir()
                cmd, env = command(mode, script, args, run_dir, a.master, jar)
                s, m = run(cmd, env, run_dir, run_dir / "log.txt")
                secs.setdefault((name, mode), []).append(s)
                rss.setdefault((name, mode), []).append(m)
            print(f"rep {rep} {name}: " + "  ".join(f"{m} {secs[(name, m)][-1]:.1f}s" for m in MODES), flush=True)
    report_times(todo, secs, rss)
    return todo


def report_times(todo: dict, secs: dict, rss: dict) -> None:
    med = {k: statistics.median(v) for k, v in secs.items()}
    peak = {k: max(v) / 2**20 for k, v in rss.items()}
    print("\nWall time (median of reps, whole process: JVM start included) and peak RSS of the process tree "
          "(max of reps)")
    print(f"{'job':26} {'plain_s':>7} {'listen_s':>8} {'capt_s':>7} {'listen/plain':>12} {'capt/plain':>10} "
          f"{'capt/listen':>11} {'plain_MB':>8} {'listen_MB':>9} {'capt_MB':>7}")
    total = {m: 0.0 for m in MODES}
    for name in todo:
        p, lst, c = (med[(name, m)] for m in MODES)
        if name != "startup":
            for m in MODES:
                total[m] += med[(name, m)]
        print(f"{name:26} {p:7.1f} {lst:8.1f} {c:7.1f} {lst / p:12.2f} {c / p:10.2f} {c / lst:11.2f} "
              f"{peak[(name, 'plain')]:8.0f} {peak[(name, 'listener')]:9.0f} {peak[(name, 'capture')]:7.0f}")
    jobs_only = [j for j in todo if j != "startup"]
    print(f"{'total (' + str(len(jobs_only)) + ' jobs)':26} {total['plain']:7.1f} {total['listener']:8.1f} "
          f"{total['capture']:7.1f} {total['listener'] / total['plain']:12.2f} "
          f"{total['capture'] / total['plain']:10.2f} {total['capture'] / total['listener']:11.2f}")
    for m in MODES:
        print(f"peak RSS {m}: median over jobs {statistics.median(peak[(j, m)] for j in jobs_only):.0f} MB, "
              f"max {max(peak[(j, m)] for j in jobs_only):.0f} MB")


def report_lineage(work: Path, todo: dict, rows_out: str) -> None:
    # ------------------------------------------------------------------ column lineage, rep 0
    rows, counts = [], {}
    listener_files = []
    for name in todo:
        if name == "startup":
            continue
        ld, cd = work / f"{name}-listener-0", work / f"{name}-capture-0"
        listener_files.append(ld / "events.jsonl")
        levents = read_events(ld / "events.jsonl")
        lis = column_lineage(levents, lambda s, d=str(ld / "out"): s.replace(d, "<out>"))
        stra = column_lineage(strata_events(cd), lambda s, d=str(cd / "out"): s.replace(d, "<out>"))
        for r in compare(stra, lis, table_outputs(stra, lis)):
            rows.append({"job": name, **r})
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print("\nColumn lineage, Strata (strata export openlineage) vs the listener (columnLineage facets), "
          "per output and field; `*` = the facet's dataset-level list (INDIRECT)")
    print(f"{'job':22} {'output':34} {'field':16} {'verdict':34} strata | listener")
    for r in rows:
        out = r["output"] if isinstance(r["output"], str) else r["output"][1]
        print(f"{r['job']:22} {out[-34:]:34} {r['field'][:16]:16} {r['verdict']:34} {r['strata']} | {r['listener']}")
    print("\nverdicts: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    if rows_out:
        Path(rows_out).write_text(json.dumps(rows, indent=1, default=str))

    # ------------------------------------------------------------------ the listener's events ingest
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    events = [f for f in listener_files if f.exists()]
    n_events = sum(len(read_events(f)) for f in events)
    shutil.rmtree(work / "ingested", ignore_errors=True)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "strata.cli", "--store", str(work / "ingested"), "ingest", "--format",
                        "openlineage", *map(str, events)], env=env, capture_output=True, text=True)
    print(f"\nstrata ingest --format openlineage of the listener's {n_events} events ({len(events)} files): "
          f"exit {r.returncode} in {time.perf_counter() - t0:.1f} s: {(r.stdout + r.stderr).strip()[-300:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / "out" / "ol-listener"))
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--only", help="comma-separated job names (startup always runs)")
    ap.add_argument("--compare-only", action="store_true",
                    help="no runs: compare the lineage of the runs a previous run left in --work")
    ap.add_argument("--rows", default="", help="also write the lineage table as JSON here")
    a = ap.parse_args()
    jar = listener_jar()
    if jar is None:
        sys.exit("error: OpenLineage's listener jar is not fetched: run `make openlineage-jar` (needs mvn and "
                 "Maven Central)")
    work = Path(a.work).resolve()
    if a.compare_only:
        todo = jobs(work, work / "in", set(a.only.split(",")) if a.only else None)
    else:
        shutil.rmtree(work, ignore_errors=True)
        todo = run_all(a, work, jar)
    report_lineage(work, todo, a.rows)
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"master {a.master}, load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
