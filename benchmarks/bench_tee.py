"""How the store copy of a captured result could be written: the one-pass tee, a sidecar, the JVM writer.

    python benchmarks/bench_tee.py --data benchmarks/out/nested-1m --only T2,D2,D3,D4 --reps 3

For each pipeline, side by side in one process (reads given their schema, so inference drops
out; the user's output is Parquet):

* ``plain``   the untracked pipeline;
* ``tee``     what ``tracker.write`` does on a local store for output other than Parquet
              (capture/storing/tee.py ``teed``): every column of the annotated result goes to Python,
              which writes the store copy with pyarrow and hands the visible columns back to
              Spark's writer;
* ``sidecar`` only the hidden columns go to Python (an iterator Arrow UDF inside an always-true
              filter writes them, one file per task); Spark writes the visible columns itself.
              ``tracker.write`` does this for Parquet output where Strata's jar is not loaded
              (capture/storing/tee.py ``sidecar``) and links the output's files into the store,
              which this script leaves out (a hard link per file);
* ``jvm``     no Python: Strata's Parquet writer (capture/jvm ``SplitParquetFileFormat``) writes
              the visible columns to the output and the hidden ones into a second file per task.
              ``tracker.write`` does this where Strata's jar is loaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Iterator

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")  # scratch space (gitignored)

from bench_capture import INPUTS, PIPELINES, to_parquet  # noqa: E402


def hidden_writer(folder: str):
    """An Arrow UDF over ``struct(<hidden columns>)`` that writes them to ``folder``; always true.
    (``pa`` is imported at module level: pyspark resolves the string annotations there.)"""
    from pyspark.sql import functions as F

    @F.arrow_udf("boolean")
    def write(batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        import pyarrow.parquet as pq
        from pyspark import TaskContext

        ctx = TaskContext.get()
        writer = None
        for arr in batches:
            batch = pa.RecordBatch.from_struct_array(arr)
            if writer is None:
                name = f"hidden-{ctx.partitionId():05d}-{ctx.attemptNumber()}.parquet"
                writer = pq.ParquetWriter(os.path.join(folder, name), batch.schema, compression="zstd",
                                          use_dictionary=False)
            writer.write_batch(batch)
            yield pa.array([True] * len(arr))
        if writer is not None:
            writer.close()

    return write


def main() -> None:
    ap = argparse.ArgumentParser(description="store-copy variants of a captured write")
    ap.add_argument("--data", default=os.path.join(OUT, "nested"), help="gen_nested.py's --out")
    ap.add_argument("--work", default=os.path.join(OUT, "tee"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="T2,D2,D3,D4", help="comma-separated pipeline names")
    ap.add_argument("--format", choices=("json", "parquet"), default="json")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    from pyspark.sql import functions as F

    from capture import Tracker, jvm
    from capture.storing import tee
    from strata.spark import get_session

    spark = get_session(master="local[2]", conf={"spark.driver.memory": "6g"})
    data = to_parquet(spark, args.data) if args.format == "parquet" else args.data
    schemas = {n: spark.read.format(args.format).load(os.path.join(data, n)).schema for n in INPUTS}

    def read(name: str):
        return spark.read.schema(schemas[name]).format(args.format).load(os.path.join(data, name))

    def fresh(name: str) -> str:
        folder = os.path.join(args.work, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        return folder

    out = os.path.join(args.work, "out")

    def measure(fn) -> dict[str, float]:
        tracker = Tracker(spark, None, pipeline=fn.__name__, model=False)
        result = fn(lambda n: tracker.track(read(n), name=n))
        annotated, visible, hidden = result.annotated, result.visible(), result.hidden()
        variants = {
            "plain": lambda: fn(read).write.mode("overwrite").parquet(out),
            "tee": lambda: tee.teed(annotated, visible, fresh("tee")).write.mode("overwrite").parquet(out),
            "sidecar": lambda: annotated.filter(hidden_writer(fresh("sidecar"))(F.struct(*hidden)))
            .select(*visible).write.mode("overwrite").parquet(out),
            "jvm": lambda: annotated.write.format(jvm.SPLIT).option(jvm.SPLIT_FOLDER, fresh("jvm"))
            .mode("overwrite").save(out),
        }
        if not jvm.available(spark, jvm.SPLIT):
            del variants["jvm"]
        secs: dict[str, list[float]] = {k: [] for k in variants}
        for run in variants.values():  # warm-up
            run()
        for _ in range(args.reps):  # the variants alternate, so load changes hit them all
            for k, run in variants.items():
                t0 = time.perf_counter()
                run()
                secs[k].append(time.perf_counter() - t0)
        return {k: statistics.median(v) for k, v in secs.items()}

    print(f"load average at start: {os.getloadavg()}", flush=True)
    print("pipeline  plain_s  tee_s  sidecar_s  jvm_s  tee/plain  sidecar/plain  jvm/plain", flush=True)
    for name in args.only.split(","):
        m = measure(PIPELINES[name])
        j = m.get("jvm", float("nan"))
        print(f"{name:8}  {m['plain']:7.2f}  {m['tee']:5.2f}  {m['sidecar']:9.2f}  {j:5.2f}  "
              f"{m['tee'] / m['plain']:9.2f}  {m['sidecar'] / m['plain']:13.2f}  {j / m['plain']:9.2f}", flush=True)
    print(f"load average at end: {os.getloadavg()}, {os.cpu_count()} cores, spark {spark.version}, "
          f"input {args.format}")


if __name__ == "__main__":
    main()
