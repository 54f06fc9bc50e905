"""Backtracing benchmark (issue 6): trace time for up to N result items vs the pipeline's runtime.

    python benchmarks/gen_nested.py --tweets 50000 --papers 50000 --out /tmp/strata-bt
    python benchmarks/bench_backtrace.py --data /tmp/strata-bt --items 100 --only T1,T3,D1

Per pipeline (bench_capture.py's T1-T5, D1-D5): the plain pipeline's runtime (read JSON, write
Parquet); then a captured run (``model=False``) plus its result items; then the trace: match the
pattern ``/<first result column>`` with LIMIT N (so N result items) and backtrace them with the
committed ``capture_assoc`` (capture.backtrace.trace via the store). Target: trace <= 0.5x plain.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    from bench_capture import PIPELINES, run_plain

    ap = argparse.ArgumentParser(description="backtracing benchmark")
    ap.add_argument("--data", default="/tmp/strata-bench")
    ap.add_argument("--work", default="/tmp/strata-bt-work")
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--only", default="", help="comma-separated pipeline names, e.g. T1,D3")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    from pyspark.sql import functions as F

    from capture import Tracker
    from capture.backtrace import (
        RESULT_ITEMS,
        backtrace,
        load_run,
        match_docs,
        record_result_items,
        spark_fetcher,
    )
    from store import Store
    from strata.spark import get_session

    spark = get_session(master=args.master, conf={"spark.driver.memory": "4g"})
    shutil.rmtree(args.work, ignore_errors=True)
    store = Store.open(os.path.join(args.work, "store"), spark=spark)
    names = [n for n in PIPELINES if not args.only or n in args.only.split(",")]
    print("pipeline  plain_s  match_s  backtrace_s  trace_s  ratio  items  input_items", flush=True)
    for name in names:
        fn = PIPELINES[name]
        out = os.path.join(args.work, "out", name)
        run_plain(spark, args.data, fn, out)  # warm-up
        plain = run_plain(spark, args.data, fn, out)
        tracker = Tracker(spark, store, pipeline=name, model=False)
        result = fn(lambda n, tr=tracker: tr.read.json(os.path.join(args.data, n), name=n))
        info = tracker.write(result, out + "-captured", format="parquet", mode="overwrite")
        record_result_items(store, info.run, result)
        store.refresh()
        t0 = time.perf_counter()
        run = load_run(store, info.run)
        docs = store.table(RESULT_ITEMS).filter(F.col("run") == F.lit(info.run)).select("id", "doc")
        matched = match_docs(docs, f"/{result.columns[0]}", args.items)
        t1 = time.perf_counter()
        trace = backtrace(run.operators, run.result_oid, matched, spark_fetcher(run.assoc))
        t2 = time.perf_counter()
        total = t2 - t0
        print(f"{name:8}  {plain:7.1f}  {t1 - t0:7.1f}  {t2 - t1:11.1f}  {total:7.1f}  {total / plain:5.2f}  "
              f"{len(matched):5d}  {len(trace.items):11d}", flush=True)
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"spark {spark.version}, master {args.master}")


if __name__ == "__main__":
    main()
