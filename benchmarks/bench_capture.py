"""Capture overhead benchmark: ten nested pipelines (Pebble's T1-T5, D1-D5 in spirit), each
run with and without capture in one process; runtime ratio and provenance size.

    python benchmarks/gen_nested.py --tweets 200000 --papers 200000 --out benchmarks/out/nested
    python benchmarks/bench_capture.py --data benchmarks/out/nested --reps 2

Each run reads the JSON input and writes the result as Parquet (so Spark computes it all).
``--format parquet`` reads the same data converted to Parquet once (``<data>-parquet``).
"Plain" is the untracked pipeline; "captured" is ``tracker.write``: the result plus the
capture tables (the run's annotated result ``capture_result/<run>``, capture_operators,
capture_runs) in one store commit. With ``--model`` the
captured run also ingests the multi-granularity elements and edges (slow: the store's
validation and ancestor closure dominate). Provenance size = bytes the commit added to the store.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable

from pyspark.sql import functions as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")  # scratch space (gitignored)

Read = Callable[[str], object]


# ------------------------------------------------------------------ Twitter-like (T1-T5)
def t1(read):
    """filter tweets with 'good', flatten mentions, group by mentioned user: bag of tweets."""
    t = read("tweets")
    return (t.filter(F.col("text").contains("good"))
            .select("id_str", "text", "user", F.explode("user_mentions").alias("m"))
            .groupBy(F.col("m.id_str").alias("mentioned"))
            .agg(F.collect_list(F.struct("id_str", "text", "user")).alias("tweets")))


def t2(read):
    """flatten hashtags, media and user mentions."""
    t = read("tweets")
    return (t.select("id_str", "user_mentions", "media", F.explode("hashtags").alias("h"))
            .withColumn("md", F.explode_outer("media"))
            .select("id_str", F.col("h.text").alias("tag"), F.col("md.url").alias("url"),
                    F.explode_outer("user_mentions").alias("m"))
            .select("id_str", "tag", "url", F.col("m.id_str").alias("mentioned")))


def t3(read):
    """the running example (Section 2, Figure 1)."""
    t = read("tweets")
    upper = t.filter(F.col("retweet_cnt") == 0).select(
        "text", F.col("user.id_str").alias("id_str"), F.col("user.name").alias("name"))
    lower = t.select("text", F.explode("user_mentions").alias("m_user")).select(
        "text", F.col("m_user.id_str").alias("id_str"), F.col("m_user.name").alias("name"))
    return (upper.union(lower).select(F.struct("id_str", "name").alias("user"), "text")
            .groupBy("user").agg(F.collect_list(F.struct("text")).alias("tweets")))


def t4(read):
    """associate all hashtags with the authoring and the mentioned users."""
    t = read("tweets")
    authors = t.select(F.col("user.id_str").alias("uid"), "hashtags")
    mentioned = t.select(F.explode("user_mentions").alias("m"), "hashtags").select(
        F.col("m.id_str").alias("uid"), "hashtags")
    return (authors.union(mentioned).select("uid", F.explode("hashtags").alias("h"))
            .groupBy("uid").agg(F.collect_set(F.col("h.text")).alias("tags")))


def t5(read):
    """users who tweet about BTS and are mentioned in a BTS tweet."""
    t = read("tweets")
    bts = t.filter(F.col("text").contains("BTS"))
    authors = bts.select(F.col("user.id_str").alias("uid"), F.col("user.name").alias("name"))
    mentioned = bts.select(F.explode("user_mentions").alias("m")).select(F.col("m.id_str").alias("mid"))
    return authors.join(mentioned, authors["uid"] == mentioned["mid"]).select("uid", "name").distinct()


# ------------------------------------------------------------------ DBLP-like (D1-D5)
def d1(read):
    """inproceedings from 2015 with their proceedings."""
    ip, pr = read("inproceedings"), read("proceedings")
    ip15 = ip.filter(F.col("year") == 2015)
    return ip15.join(pr, ip15["crossref"] == pr["key"]).select(
        ip15["title"].alias("paper"), "booktitle", pr["title"].alias("proceedings"), "publisher")


def d2(read):
    """unite and restructure proceedings and articles."""
    pr, ar = read("proceedings"), read("articles")
    a = pr.select("key", "title", "year", F.struct(F.col("publisher").alias("name"),
                                                    F.lit("proceedings").alias("kind")).alias("venue"))
    b = ar.select("key", "title", "year", F.struct(F.col("journal").alias("name"),
                                                    F.lit("journal").alias("kind")).alias("venue"))
    return a.unionByName(b)


def d3(read):
    """nested lists of co-authors and works per author."""
    ip, ar = read("inproceedings"), read("articles")
    works = ip.select("key", "title", "authors").unionByName(ar.select("key", "title", "authors"))
    return (works.select("key", "title", "authors", F.explode("authors").alias("author"))
            .groupBy("author").agg(F.collect_list(F.struct("key", "title")).alias("works"),
                                   F.collect_list("authors").alias("coauthors"),
                                   F.count(F.lit(1)).alias("n")))


def d4(read):
    """nested list of all inproceedings of each proceeding."""
    ip, pr = read("inproceedings"), read("proceedings")
    return (pr.join(ip, pr["key"] == ip["crossref"])
            .groupBy(pr["key"].alias("proc"), pr["title"].alias("proc_title"))
            .agg(F.collect_list(F.struct(ip["title"], ip["authors"])).alias("papers")))


_n_authors = None


def d5(read):
    """D4 plus a Python UDF (map) counting the authors per proceeding."""
    global _n_authors
    if _n_authors is None:
        _n_authors = F.udf(lambda papers: sum(len(p["authors"] or []) for p in papers), "int")
    return d4(read).select("proc", "proc_title", _n_authors("papers").alias("n_authors"))


PIPELINES = {"T1": t1, "T2": t2, "T3": t3, "T4": t4, "T5": t5,
             "D1": d1, "D2": d2, "D3": d3, "D4": d4, "D5": d5}


def _du(path: str) -> int:
    """Bytes under ``path``, except a split store copy's links to the written output
    (``tables/capture_output``, docs/capture.md): they are the user's output files, which take no
    space of their own while the output exists."""
    total = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not (d == "capture_output" and os.path.basename(root) == "tables")]
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


INPUTS = ("tweets", "inproceedings", "proceedings", "articles")  # gen_nested.py's folders


def to_parquet(spark, data: str) -> str:
    """The JSON inputs as Parquet (written once, next to them), for ``--format parquet``."""
    out = data.rstrip("/") + "-parquet"
    for name in INPUTS:
        if not os.path.exists(os.path.join(out, name, "_SUCCESS")):
            spark.read.json(os.path.join(data, name)).write.mode("overwrite").parquet(os.path.join(out, name))
    return out


def run_plain(spark, data: str, fn, out: str, fmt: str = "json") -> float:
    t0 = time.perf_counter()
    fn(lambda name: spark.read.format(fmt).load(os.path.join(data, name))).write.mode("overwrite").parquet(out)
    return time.perf_counter() - t0


def run_captured(spark, store, data: str, fn, out: str, model: bool, fmt: str = "json") -> tuple[float, int, int, dict]:
    """Seconds, bytes added to the store, result items, seconds per commit phase."""
    from capture import Tracker

    before = _du(store.root)
    t0 = time.perf_counter()
    tracker = Tracker(spark, store, pipeline=fn.__name__, model=model)
    read = tracker.read.parquet if fmt == "parquet" else tracker.read.json
    result = fn(lambda name: read(os.path.join(data, name), name=name))
    t1 = time.perf_counter()
    info = tracker.write(result, out, format="parquet", mode="overwrite")
    phases = {"build": t1 - t0, **info.phases}
    return time.perf_counter() - t0, _du(store.root) - before, info.items, phases


def main() -> None:
    ap = argparse.ArgumentParser(description="capture overhead benchmark")
    ap.add_argument("--data", default=os.path.join(OUT, "nested"), help="gen_nested.py's --out")
    ap.add_argument("--work", default=os.path.join(OUT, "capture"))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated pipeline names, e.g. T1,D3")
    ap.add_argument("--model", action="store_true", help="also ingest items/edges into the core tables")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--format", choices=("json", "parquet"), default="json",
                    help="input format; parquet converts the JSON inputs once (<data>-parquet)")
    args = ap.parse_args()
    from store import Store
    from strata.spark import get_session

    spark = get_session(master=args.master, conf={"spark.driver.memory": "6g"})
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    store = Store.open(os.path.join(args.work, "store"), spark=spark)
    names = [n for n in PIPELINES if not args.only or n in args.only.split(",")]
    data, fmt = (to_parquet(spark, args.data), "parquet") if args.format == "parquet" else (args.data, "json")
    # warm both paths once (JIT, first Parquet writes of each table), then measure
    warm = PIPELINES[names[0]]
    run_plain(spark, data, warm, os.path.join(args.work, "warm"), fmt)
    run_captured(spark, store, data, warm, os.path.join(args.work, "warm-captured"), args.model, fmt)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    print("pipeline  plain_s  captured_s  ratio  result_rows  prov_MB  phases_s (median; build = read + "
          "tracked calls, result = pipeline + result write (on a local store the store copy is written "
          "in the same job), provenance = the store copy's own write or footer read, runs = capture_runs "
          "and capture_operators rows)", flush=True)
    rows = []
    for name in names:
        fn = PIPELINES[name]
        out = os.path.join(args.work, "out", name)
        plain, captured, ratios, phases, size, n_items = [], [], [], [], 0, 0
        run_plain(spark, data, fn, out, fmt)  # warm-up: JIT, file listing cache
        for _ in range(args.reps):  # plain and captured alternate, so load changes hit both
            plain.append(run_plain(spark, data, fn, out, fmt))
            secs, size, n_items, ph = run_captured(spark, store, data, fn, out + "-captured", args.model, fmt)
            captured.append(secs)
            ratios.append(secs / plain[-1])
            phases.append(ph)
        p, c, r = statistics.median(plain), statistics.median(captured), statistics.median(ratios)
        ph = {k: statistics.median(x[k] for x in phases) for k in phases[0]}
        rows.append((name, p, c, r, n_items, size / 1e6))
        shown = " ".join(f"{k}={v:.1f}" for k, v in ph.items())
        print(f"{name:8}  {p:7.1f}  {c:10.1f}  {r:5.2f}  {n_items:10d}  {size / 1e6:7.1f}  {shown}", flush=True)
    ratios = [r[3] for r in rows]
    print(f"median ratio {statistics.median(ratios):.2f}  max ratio {max(ratios):.2f} "
          f"(per pipeline: median over reps of captured/plain of the same rep)")
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"spark {spark.version}, master {args.master}, input {fmt}, load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
