"""What capturing a small pipeline costs after its output is written (docs/capture.md, "Commit").

    python benchmarks/bench_commit.py --reps 5

The pipeline is the Pebble running example (tests/fixtures/capture/tweets.json: 5 tweets, 8 operators:
filter, select, explode, union, nested struct, group by with collect_list), written as JSON and
as Parquet. In one process with one SparkSession (local[2]), after a warm-up, in turns:

* ``plain``     the untracked pipeline's write (what the user pays anyway);
* ``auto``      ``tracker.write`` on a local store with the default engine (the multi-granularity
                bundle is built and ingested on the driver, capture/storing/driver_model.py
                ``model_files``);
* ``spark``     the same on a store forced to Spark (``Store.open(engine="spark")``: the bundle is
                built and ingested with Spark jobs, as a run over the driver's limit is).

It prints, per format, the median wall seconds of each and the extra a capture costs over the
plain write (captured - plain), with the `model` phase on its own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
OUT = os.path.join(ROOT, "benchmarks", "out", "commit")

from support.running_example import running_example as pipeline  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    from capture import Tracker
    from store import Store
    from store.spark.session import get_session

    tweets_path = os.path.join(ROOT, "tests", "fixtures", "capture", "tweets.json")
    shutil.rmtree(OUT, ignore_errors=True)
    spark = get_session()
    stores = {e: Store.open(os.path.join(OUT, e, "store"), spark=spark, engine=e) for e in ("auto", "spark")}
    trackers = {e: Tracker(spark, st, pipeline="running-example") for e, st in stores.items()}
    counter = iter(range(10**6))

    def plain(fmt: str) -> float:
        t0 = time.perf_counter()
        pipeline(spark.read.json(tweets_path)).write.format(fmt).save(os.path.join(OUT, f"o{next(counter)}"))
        return time.perf_counter() - t0

    def captured(engine: str, fmt: str) -> tuple[float, float]:
        tr = trackers[engine]
        t0 = time.perf_counter()
        info = tr.write(pipeline(tr.read.json(tweets_path, name="tweets")), os.path.join(OUT, f"o{next(counter)}"),
                        format=fmt)
        return time.perf_counter() - t0, info.phases["model"]

    for fmt in ("json", "parquet"):  # warm-up: JIT, Spark's first jobs, imports
        plain(fmt)
        captured("auto", fmt)
        captured("spark", fmt)
    print(f"{'format':8} {'plain s':>8} {'auto s':>8} {'auto extra':>10} {'auto model':>10} "
          f"{'spark s':>8} {'spark extra':>11} {'spark model':>11}")
    for fmt in ("json", "parquet"):
        runs: dict[str, list] = {"plain": [], "auto": [], "spark": []}
        for _ in range(args.reps):
            runs["plain"].append(plain(fmt))
            runs["auto"].append(captured("auto", fmt))
            runs["spark"].append(captured("spark", fmt))
        p = statistics.median(runs["plain"])
        a = statistics.median(t for t, _ in runs["auto"])
        am = statistics.median(m for _, m in runs["auto"])
        s = statistics.median(t for t, _ in runs["spark"])
        sm = statistics.median(m for _, m in runs["spark"])
        print(f"{fmt:8} {p:8.2f} {a:8.2f} {a - p:10.2f} {am:10.2f} {s:8.2f} {s - p:11.2f} {sm:11.2f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
