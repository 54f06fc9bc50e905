"""Backtracing benchmark: trace time for up to N result items vs the pipeline's runtime.

    python benchmarks/gen_nested.py --tweets 30000 --papers 30000 --out benchmarks/out/nested-30k
    python benchmarks/bench_backtrace.py --data benchmarks/out/nested-30k --items 100 --only T1,T3,D1

Per pipeline (bench_capture.py's T1-T5, D1-D5), in one process: the plain pipeline's runtime
(read JSON, write Parquet; after one warm-up); then a captured run (``model=False``); then
``capture.tracing.trace`` (what ``TRACE '<run>' MATCH '<pattern>' LIMIT N`` runs), cold (first trace of the run in the
process) and warm (the next one, as in a REPL session), each split into its phases: run (read the
run's operators and row, one job), match (the compiled pattern over the run's stored result, one
job), associations (derived from the matched rows' hidden columns, one small job), backtrace (on
the driver); then, for the warm trace's input items, finding them in the inputs and reading their
values back (TRACE's ``source`` and ``value``: capture/tracing/locate.py).
``--udf`` also times the Python matcher (a UDF, the fallback) on the same items. Target: trace <= 0.5x plain.
The default pattern is ``/<first result column>``; ``--pattern`` overrides it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")  # scratch space (gitignored)


def timed_trace(store, run: str, pattern: str, items: int, compiled: bool = True) -> dict[str, float]:
    """One trace exactly as ``TRACE`` runs it (``capture.tracing.trace``), with its phases' times."""
    from capture.tracing import parse_pattern, trace

    t: dict = {}
    traced = trace(store, run, parse_pattern(pattern), items, timings=t, compiled=compiled)
    t.update(matched=traced.matched, reached=len(traced.items), traced=traced)
    return t


def timed_locate(store, traced) -> float:
    """Seconds to find the traced input items in the run's inputs and read their values back
    (TRACE's ``source`` and ``value`` columns, ``capture.tracing.trace_rows``)."""
    import time

    from capture.tracing import trace_rows

    t0 = time.perf_counter()
    trace_rows(store, traced, where=True, values=True)
    return time.perf_counter() - t0


def main() -> None:
    from bench_capture import PIPELINES, run_plain

    ap = argparse.ArgumentParser(description="backtracing benchmark")
    ap.add_argument("--data", default=os.path.join(OUT, "nested"), help="gen_nested.py's --out")
    ap.add_argument("--work", default=os.path.join(OUT, "backtrace"))
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--only", default="", help="comma-separated pipeline names, e.g. T1,D3")
    ap.add_argument("--pattern", default="", help="tree pattern (default: /<first result column>)")
    ap.add_argument("--udf", action="store_true", help="also time the Python-UDF matcher")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    from capture import Tracker
    from store import Store
    from strata.spark import get_session

    spark = get_session(master=args.master, conf={"spark.driver.memory": "4g"})
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    store = Store.open(os.path.join(args.work, "store"), spark=spark)
    names = [n for n in PIPELINES if not args.only or n in args.only.split(",")]
    print(f"load average: {os.getloadavg()}", flush=True)
    print("pipeline  plain_s | cold: run match assoc backtrace total ratio | warm: total ratio"
          f"{' | udf: match total ratio' if args.udf else ''} | items reached | sources+values s", flush=True)
    for name in names:
        fn = PIPELINES[name]
        out = os.path.join(args.work, "out", name)
        run_plain(spark, args.data, fn, out)  # warm-up
        plain = run_plain(spark, args.data, fn, out)
        tracker = Tracker(spark, store, pipeline=name, model=False)
        result = fn(lambda n, tr=tracker: tr.read.json(os.path.join(args.data, n), name=n))
        info = tracker.write(result, out + "-captured", format="parquet", mode="overwrite")
        store = store.refresh()
        pattern = args.pattern or f"/{result.columns[0]}"
        cold = timed_trace(store, info.run, pattern, args.items)
        warm = timed_trace(store, info.run, pattern, args.items)
        line = (f"{name:8}  {plain:7.1f} | {cold['run']:4.1f} {cold['match']:5.1f} {cold['associations']:5.1f} "
                f"{cold['backtrace']:9.1f} {cold['total']:5.1f} {cold['total'] / plain:5.2f} | "
                f"{warm['total']:5.1f} {warm['total'] / plain:5.2f}")
        if args.udf:
            udf = timed_trace(store, info.run, pattern, args.items, compiled=False)
            line += f" | {udf['match']:5.1f} {udf['total']:5.1f} {udf['total'] / plain:5.2f}"
        print(f"{line} | {cold['matched']} {cold['reached']} | {timed_locate(store, warm['traced']):.2f}", flush=True)
    print(f"load average: {os.getloadavg()}")
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"spark {spark.version}, master {args.master}")


if __name__ == "__main__":
    main()
