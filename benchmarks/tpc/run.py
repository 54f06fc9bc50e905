"""TPC-H / TPC-DS queries run as ordinary PySpark jobs, plainly and under `strata capture`.

    python benchmarks/tpc/run.py --suite tpch|tpcds --sf 0.01 [--queries 1,2,3] [--batch 10]
                                 [--work benchmarks/out/tpc] [--check N] [--prepare] [--driver-memory 2g]
                                 [--model now|later|off]

1. Data, query texts and answers come from DuckDB's TPC extensions (benchmarks/tpc/gen.py), run
   in their own environment ``build/tpc-venv`` (made here with uv or pip: ``duckdb==1.5.5`` and the
   matching ``duckdb-extension-tpch``/``-tpcds``, the DuckDB those extensions are built for).
   Nothing of TPC is copied into the repository: the texts are taken from the extension. The
   tpcds extension ships no answers this way (gen.py), so TPC-DS has no answer column.
2. The texts are turned from DuckDB's dialect into Spark SQL by sqlglot; all 22 + 99 run in
   Spark as sqlglot writes them (no fixes needed).
3. benchmarks/tpc/job.py runs the queries in processes of ``--batch`` queries each (default 1: a
   process per query; ``local[2]``), each batch plainly and then under ``strata capture``: a
   query's two times are taken at the same place in a process of the same queries, minutes
   apart (the first query of a process pays the JVM's warm-up both ways).
   The job goes on past a failed query (``--keep-going``) and says each query's outcome on
   stderr, so a refused query costs only itself; a query that failed in a batch runs again in a
   process of its own (a batch's JVM out of memory fails the later queries too), and the report
   says so.
4. Per query: plain ok?, captured ok? (else the first line of Strata's message), the captured
   result equal to the plain one (rows, in order where the query orders them, else sorted), the
   row count equal to the answer the extension ships (values are not compared with it), and the
   seconds of the query in its plain and its captured process (as job.py measures it: no JVM
   start); then the processes' total times, the overhead (per query, its captured seconds over
   its plain seconds: median, max, min), the provenance stored (the capture stores' bytes on disk
   over the input Parquet's) and the refusals grouped by reason (names and numbers blanked).
   Every Spark process runs ``local[2]`` with a ``--driver-memory`` driver (2 GB by default).
   ``--model later`` captures with ``strata capture --no-model`` (the capture tables only) and then
   models each store's runs by ``strata model`` in a process of its own, timed apart (the model's
   cost, moved out of the queries' own time); ``--model off`` leaves the model out.
5. With ``--check N``: N result items of each query this run captured, drawn by seed 0, checked
   by replay (benchmarks/tpc/check.py ``--sample``: ``capture.tracing.check``, docs/tracing.md
   "Checking a trace by replay"), one process for all its stores: per query the items ok, passing
   the weaker check, failed and not checkable, and the seconds; and each run's first result
   item traced to its input records with sources and values, the first and the warm seconds
   (``check.py --trace-time``).

The exit code is 0 only when every query was captured with the plain run's result (and the
answer's row count, where the extension ships one) and no checked item failed. With
``--prepare`` only step 1 and the Spark SQL texts are made (``WORK/<suite>-sf<sf>/``: ``data/``,
``spark_queries.json``, ``answers.json``), for tests/capture/test_tpc.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VENV = ROOT / "build" / "tpc-venv"
PINNED = ("duckdb==1.5.5", "duckdb-extension-tpch==1.5.5", "duckdb-extension-tpcds==1.5.5")


def tpc_python() -> Path:
    """The Python of build/tpc-venv, made on first use."""
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"making {VENV} ({', '.join(PINNED)})", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        # uv (make venv installs it) downloads in parallel; pip where it is missing or fails
        uv = [sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(python), *PINNED]
        if subprocess.run(uv, stderr=subprocess.DEVNULL, check=False).returncode != 0:
            subprocess.run([str(python), "-m", "pip", "install", "-q", *PINNED], check=True)
    return python


def generate(work: Path, suite: str, sf: float) -> Path:
    out = work / f"{suite}-sf{sf:g}"
    if not (out / "queries.json").exists():
        subprocess.run([str(tpc_python()), str(HERE / "gen.py"), str(out), "--suite", suite, "--sf", str(sf)],
                       check=True)
    return out


def spark_queries(out: Path, suite: str) -> Path:
    """DuckDB's query texts in Spark SQL (sqlglot), as ``spark_queries.json``."""
    import sqlglot

    texts = json.loads((out / "queries.json").read_text())
    spark = {n: sqlglot.transpile(q, read="duckdb", write="spark")[0] for n, q in texts.items()}
    path = out / "spark_queries.json"
    path.write_text(json.dumps(spark, indent=1))
    return path


def _env(memory: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    env["PYSPARK_SUBMIT_ARGS"] = " ".join(shlex.quote(a) for a in ("--master", "local[2]", "--driver-memory",
                                                                   memory, "pyspark-shell"))
    return env


def _job(out: Path, target: Path, queries: Path, numbers: list[str], memory: str, capture: Path | None = None,
         model: bool = True):
    args = [str(HERE / "job.py"), str(out / "data"), str(target), str(queries), "--keep-going", *numbers]
    if capture is not None:
        args = ["-m", "strata.cli", "--store", str(capture), "--master", "local[2]", "capture",
                *([] if model else ["--no-model"]), "--", *args]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=_env(memory), cwd=out)
    return done, time.perf_counter() - t0


def _outcomes(done, numbers: list[str]) -> dict[str, tuple[bool, str]]:
    """Per query of one job: (ok, its seconds or why it failed), from the job's lines on stderr;
    a query with no line (the process died first): the process's last words."""
    got = {}
    for line in done.stderr.splitlines():
        m = re.match(r"job\.py: q(\S+) (?:ok (\S+)|failed: (?:\w+: )?(.*))$", line)
        if m:
            got[m[1]] = (m[2] is not None, m[2] if m[2] is not None else m[3].removeprefix("capture: "))
    return {n: got.get(n, (False, _why(done.stderr))) for n in numbers}


def _rows(folder: Path, ordered: bool) -> list:
    rows = [json.dumps(r, sort_keys=True, default=str) for r in pq.read_table(folder).to_pylist()] \
        if folder.exists() else []
    return rows if ordered else sorted(rows)


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def _why(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("strata:")]
    return lines[0][len("strata: "):] if lines else (stderr.strip().splitlines() or ["?"])[-1]


def _reason(why: str) -> str:
    """A refusal's reason without the query's own names and numbers (to group refusals)."""
    return re.sub(r"#\d+L?|\d+", "N", why.split(". Nothing was written")[0])[:150]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=("tpch", "tpcds"), default="tpch")
    parser.add_argument("--sf", type=float, default=0.01)
    parser.add_argument("--queries", help="comma-separated query numbers [default: all]")
    parser.add_argument("--batch", type=int, default=1, help="queries per captured process [default: 1]")
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "out" / "tpc")
    parser.add_argument("--check", type=int, metavar="N",
                        help="then check N traced result items per captured query by replay (check.py)")
    parser.add_argument("--prepare", action="store_true", help="only make the data and the Spark SQL texts")
    parser.add_argument("--driver-memory", default="2g", help="of every Spark process [default: 2g]")
    parser.add_argument("--model", choices=("now", "later", "off"), default="now",
                        help="map the runs into the model at capture [now, the default], by `strata model` "
                             "afterwards, timed apart [later], or not at all [off]")
    args = parser.parse_args()
    out = generate(args.work.resolve(), args.suite, args.sf)
    queries = spark_queries(out, args.suite)
    if args.prepare:
        return
    texts = json.loads(queries.read_text())
    numbers = sorted(texts, key=int)
    if args.queries:
        numbers = [q.strip().lower().lstrip("q") for q in args.queries.split(",")]
    unknown = [q for q in numbers if q not in texts]
    if unknown:
        parser.error(f"no query {', '.join(unknown)} in {args.suite}: "
                     f"its queries are 1..{len(texts)} (--queries 1,2,3)")
    answers = json.loads((out / "answers.json").read_text())
    plain, plain_took = {}, 0.0
    captured, capt_took, stores, again = {}, 0.0, [], []
    for i in range(0, len(numbers), args.batch):
        batch = numbers[i:i + args.batch]
        done, took = _job(out, out / "plain", queries, batch, args.driver_memory)
        plain.update(_outcomes(done, batch))
        plain_took += took
        store = out / "stores" / f"q{batch[0]}"
        stores.append(str(store))
        shutil.rmtree(store, ignore_errors=True)  # a store of an earlier run: checked runs are this run's
        done, took = _job(out, out / "captured", queries, batch, args.driver_memory, capture=store,
                          model=args.model == "now")
        captured.update(_outcomes(done, batch))
        capt_took += took
        print(f"captured q{batch[0]}..q{batch[-1]}: {sum(captured[n][0] for n in batch)} of {len(batch)} "
              f"({took:.0f} s)", file=sys.stderr, flush=True)
        # a query that failed in a batch runs again alone: a batch's process also fails for another
        # query's sake (its JVM out of memory takes the later queries with it)
        for n in [n for n in batch if not captured[n][0]] if len(batch) > 1 else []:
            store = out / "stores" / f"q{n}-alone"
            stores.append(str(store))
            shutil.rmtree(store, ignore_errors=True)
            done, took = _job(out, out / "captured", queries, [n], args.driver_memory, capture=store,
                              model=args.model == "now")
            again.append((n, captured[n][1]))
            captured.update(_outcomes(done, [n]))
            capt_took += took
            print(f"captured q{n} alone: {'ok' if captured[n][0] else 'no'} ({took:.0f} s)", file=sys.stderr,
                  flush=True)
    modelled, unmodelled_bytes = 0.0, 0
    if args.model == "later":  # the model of every captured run, added afterwards and timed apart
        unmodelled_bytes = sum(_bytes(Path(s)) for s in stores)
        for store in stores:
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "strata.cli", "--store", store, "--master", "local[2]",
                                   "model"], capture_output=True, text=True, env=_env(args.driver_memory), cwd=out)
            modelled += time.perf_counter() - t0
            if done.returncode != 0:
                print(f"strata model {store} failed: {done.stderr[-1000:]}", file=sys.stderr)
                sys.exit(1)
    print(f"{'query':>5}  {'plain':>6}  {'captured':>8}  {'same':>4}  {'answer':>6}  {'s plain':>7}  "
          f"{'s capt':>6}  why")
    counts = {"captured": 0, "same": 0, "answer": 0}
    refused: Counter = Counter()
    for n in numbers:
        (p_ok, p_s), (ok, c_s) = plain[n], captured[n]
        ordered = "ORDER BY" in texts[n].upper()
        same = ok and p_ok and _rows(out / "plain" / f"q{n}", ordered) == _rows(out / "captured" / f"q{n}", ordered)
        answer = answers.get(n)
        lines = answer.split("\n") if answer else None  # a header, then a row a line ('' is a NULL row)
        rows = len(lines[:-1] if lines[-1] == "" else lines) - 1 if lines else None
        match = ok and rows is not None and len(_rows(out / "captured" / f"q{n}", False)) == rows
        counts["captured"] += ok
        counts["same"] += bool(same)
        counts["answer"] += bool(match)
        why = "" if ok else (c_s if p_ok else f"plain: {p_s}")
        if not ok:
            refused[_reason(why)] += 1
        print(f"{n:>5}  {'ok' if p_ok else 'FAIL':>6}  {'ok' if ok else 'no':>8}  {'yes' if same else '-':>4}  "
              f"{'yes' if match else '-':>6}  {float(p_s) if p_ok else 0:7.1f}  {float(c_s) if ok else 0:6.1f}  "
              f"{why[:160]}")
    print(f"{args.suite} sf {args.sf:g}: {counts['captured']} of {len(numbers)} captured, {counts['same']} "
          f"equal to the plain run, {counts['answer']} with the answer's row count; plain processes "
          f"{plain_took:.0f} s, captured processes {capt_took:.0f} s"
          + {"now": "", "later": f" (--no-model; then `strata model` {modelled:.0f} s)",
             "off": " (--no-model)"}[args.model])
    ratios = sorted((float(captured[n][1]) / max(float(plain[n][1]), 0.01), n) for n in numbers
                    if captured[n][0] and plain[n][0])
    if ratios:
        print(f"overhead (a query's captured seconds / its plain seconds): median "
              f"{statistics.median(r for r, _ in ratios):.2f}×, "
              f"max {ratios[-1][0]:.2f}× (q{ratios[-1][1]}), min {ratios[0][0]:.2f}× (q{ratios[0][1]})")
    data_bytes, prov_bytes = _bytes(out / "data"), sum(_bytes(Path(s)) for s in stores)
    print(f"provenance stored: {prov_bytes / 1e6:.1f} MB in {len(stores)} store(s) for {data_bytes / 1e6:.1f} MB "
          f"of input Parquet ({prov_bytes / max(data_bytes, 1):.2f} bytes per input byte)"
          + (f"; before `strata model` {unmodelled_bytes / max(data_bytes, 1):.2f}" if args.model == "later" else ""))
    for reason, k in refused.most_common():
        print(f"{k:>4} × {reason}")
    for n, why in again:
        print(f"q{n} failed in its batch ({why[:100]}), then ran alone: {'captured' if captured[n][0] else 'failed'}")
    whole = counts["captured"] == counts["same"] == len(numbers) and counts["answer"] == sum(
        n in answers for n in numbers)
    checked = True
    if args.check:
        sys.stdout.flush()
        checked = subprocess.run([sys.executable, str(HERE / "check.py"), "--sample", str(args.check),
                                  "--trace-time", *stores],
                                 env=_env(args.driver_memory), cwd=out, check=False).returncode == 0
    sys.exit(0 if whole and checked else 1)


if __name__ == "__main__":
    main()
