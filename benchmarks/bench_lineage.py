"""Scale benchmark for lineage: index build time, then RQ / CC / CS / DuckDB per query class.

    python benchmarks/bench_lineage.py --scale 0.05 --work benchmarks/out/lineage [--rq-limit 3]

For each scale: generate the trace (benchmarks/gen_trace.py), load it into a fresh store,
build the component index (θ = 25,000 values as in the paper), then time 10 queries of each
class (SC-SL, LC-SL, LC-LL) with every method, and the same lineage with DuckDB's
`WITH RECURSIVE` over the same triples (in memory, 2 threads). Prints one JSON line per scale
and a Markdown table for benchmarks/RESULTS.md.

The index build runs where `strata index` would run it (`--index-engine auto`: in this process
for a local store whose edges fit, store/duckdb/index.py; `spark` forces the Spark build).
An in-process build runs in a child process, so its peak memory (`index_peak_rss_mb`) is the
build's own. Beside it, in another child, the floor: a bare in-memory connected-components
pass over the same edges — read `edges` with DuckDB, encode the ids, one
`scipy.sparse.csgraph.connected_components` — timed whole (`floor_s`), the scipy call alone
(`floor_cc_s`), with its peak memory.

Loading writes the generated triples straight into the store's `edges` and `ancestors`
tables (what lineage and the index read), in one commit; bundle validation is not what this
benchmark measures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = Path(__file__).resolve().parent / "out"  # scratch space (gitignored)

import gen_trace  # noqa: E402

CLASSES = ("SC-SL", "LC-SL", "LC-LL")
# "cs-files": CS with the process's component cache off ($STRATA_LINEAGE_CACHE=0), so every query
# reads its scope from the index files, as one `strata lineage` process does. Every other
# method starts each class with an empty cache, so a component's load is inside its mean;
# "cs-warm" asks the class's queries again right after "cs", with the components it loaded
# still held (as DuckDB's peer holds the whole trace, whose load is not in its mean either).
METHODS = ("rq", "cc", "cs-files", "cs", "cs-warm")


def load_store(spark, triples_path: Path, root: Path):
    from pyspark.sql import functions as F

    from store import schema as S
    from store.store import Store

    st = Store.open(str(root), spark=spark)
    t = spark.read.parquet(str(triples_path))
    edges = t.select(S.SRC, S.DST, F.col("op").alias(S.PROCESS))
    vals = (t.select(F.col("src").alias(S.ID), F.col("src_table").alias("tb"))
            .union(t.select(F.col("dst").alias(S.ID), F.col("dst_table").alias("tb"))).distinct())
    anc = vals.select(S.ID, F.col("tb").alias(S.ANCESTOR), F.lit(1).alias(S.DEPTH)).unionByName(
        vals.select(S.ID, F.col(S.ID).alias(S.ANCESTOR), F.lit(0).alias(S.DEPTH)))
    with st.transaction("bench: load generated triples") as tx:
        tx.append(S.EDGES, edges, files=4)
        tx.append(S.ANCESTORS, anc.select(S.ID, S.ANCESTOR, S.DEPTH), files=4)
    return st


def duckdb_lineage(con, item: str) -> tuple[int, int]:
    rows = con.execute(
        """
        WITH RECURSIVE anc(id) AS (
            SELECT CAST(? AS VARCHAR)
            UNION
            SELECT t.src FROM triples t JOIN anc ON t.dst = anc.id
        )
        SELECT (SELECT count(*) FROM anc) - 1,
               (SELECT count(*) FROM triples t WHERE t.dst IN (SELECT id FROM anc))
        """,
        [item],
    ).fetchone()
    return int(rows[0]), int(rows[1])


def _child(*args: str) -> dict:
    """Run `bench_lineage.py --child ARGS` in a new process; its last stdout line is JSON."""
    import subprocess

    out = subprocess.run([sys.executable, __file__, "--child", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _peak_rss_mb() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def child_build(store: str, theta: int) -> dict:
    """(in a child) The index build `auto` chooses, timed, with this process's peak memory."""
    from store.index import IndexParams
    from store.indexing import build_index
    from store.store import Store

    st = Store.open(store, spark=lambda: sys.exit("the in-process build asked for Spark"))
    t0 = time.perf_counter()
    meta = build_index(st, IndexParams(theta=theta, buckets=16))
    return {"index_s": round(time.perf_counter() - t0, 2), "index_peak_rss_mb": _peak_rss_mb(), "meta": meta}


def child_floor(store: str) -> dict:
    """(in a child) The floor: read the edges, encode the ids, one scipy connected-components pass."""
    import duckdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    from store.store import Store

    t0 = time.perf_counter()
    st = Store.open(store, spark=lambda: sys.exit("the floor asked for Spark"))
    edges = st.local().relation("edges").project(duckdb.ColumnExpression("src"),
                                                 duckdb.ColumnExpression("dst")).to_arrow_table()
    n_rows = edges.num_rows
    codes = pc.dictionary_encode(pa.chunked_array(edges.column("src").chunks + edges.column("dst").chunks))
    ids = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in codes.chunks])
    n = len(codes.chunks[-1].dictionary)
    del edges, codes
    t1 = time.perf_counter()
    graph = csr_matrix((np.ones(n_rows, np.int8), (ids[:n_rows], ids[n_rows:])), shape=(n, n))
    k, _ = connected_components(graph, directed=True, connection="weak")
    t2 = time.perf_counter()
    return {"floor_s": round(t2 - t0, 2), "floor_cc_s": round(t2 - t1, 2), "floor_components": int(k),
            "floor_peak_rss_mb": _peak_rss_mb()}


def timed_build(spark, root: Path, theta: int, index_engine: str) -> tuple[dict, float, dict]:
    """(meta, seconds, measurements) of one index build of the store at `root`."""
    from store.index import IndexParams
    from store.indexing import build_index, choose_builder
    from store.store import Store

    st = Store.open(str(root), spark=spark, engine=index_engine)
    extra = {"index_builder": choose_builder(st).engine.value}
    extra.update(_child("floor", str(root)))
    if extra["index_builder"] == "local":
        built = _child("build", str(root), str(theta))
        extra["index_peak_rss_mb"] = built["index_peak_rss_mb"]
        return built["meta"], built["index_s"], extra
    t0 = time.perf_counter()
    meta = build_index(st, IndexParams(theta=theta, buckets=16))
    return meta, time.perf_counter() - t0, extra


def run_scale(spark, scale: float, work: Path, theta: int, rq_limit: int | None,
              reuse: bool = False, reindex: bool = False, have_trace: bool = False, index_engine: str = "auto",
              methods: Sequence[str] = METHODS) -> dict:
    import duckdb

    from store.duckdb.index_reads import CACHE, CACHE_ENV
    from store.index.layout import META_KEY
    from store.lineage import Method, lineage
    from store.store import Store

    out = work / f"scale-{scale}"
    if reuse:  # queries only, on the store and index a previous run left in `work`
        info = json.loads((out / "queries.json").read_text())
        st = Store.open(str(out / "store"), spark=spark)
        gen_s = load_s = 0.0
        if reindex:
            meta, index_s, extra = timed_build(spark, out / "store", theta, index_engine)
            st.refresh()
        else:
            meta = st.meta(META_KEY)
            index_s, extra = meta["build_s"], {}
    else:
        t0 = time.perf_counter()
        if have_trace and (out / "triples.parquet").exists() and (out / "queries.json").exists():
            info = json.loads((out / "queries.json").read_text())
        else:
            info = gen_trace.generate_to(scale, out)  # streamed: memory follows the largest component
        gen_s = time.perf_counter() - t0
        import shutil

        shutil.rmtree(out / "store", ignore_errors=True)
        t0 = time.perf_counter()
        st = load_store(spark, out / "triples.parquet", out / "store")
        load_s = time.perf_counter() - t0
        meta, index_s, extra = timed_build(spark, out / "store", theta, index_engine)
        st.refresh()
    from pyspark.sql import functions as F

    sizes = st.table("index_components").orderBy(F.desc("n_nodes")).limit(4).collect()
    result = {
        "scale": scale, "values": info["stats"]["values"], "triples": info["stats"]["triples"],
        "generate_s": round(gen_s, 1), "load_s": round(load_s, 1), "index_s": round(index_s, 1),
        **extra,
        "components": meta["components"], "sets": meta["sets"],
        "set_dependencies": meta["set_dependencies"],
        "largest_components": [(r["n_nodes"], r["n_triples"], r["n_sets"]) for r in sizes],
        "classes": {},
    }
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    t0 = time.perf_counter()
    con.execute("CREATE TABLE triples AS SELECT src, dst, op FROM read_parquet(?)",
                [str(out / "triples.parquet")])
    result["duckdb_load_s"] = round(time.perf_counter() - t0, 1)
    cache_setting = os.environ.get(CACHE_ENV, "")  # the user's $STRATA_LINEAGE_CACHE, for cs and cs-warm
    warm = info["classes"]["SC-SL"][0]
    for m in methods:
        lineage(st, warm, method=Method(m.split("-")[0]))
    for cls in CLASSES:
        items = info["classes"][cls]
        row: dict = {"n": len(items)}
        for m in methods:
            use = items[:rq_limit] if (m == "rq" and rq_limit) else items
            times, read, sizes_ = [], [], []
            if m != "cs-warm":
                CACHE.clear()
            os.environ[CACHE_ENV] = "0" if m == "cs-files" else cache_setting
            for item in use:
                t0 = time.perf_counter()
                res = lineage(st, item, method=Method(m.split("-")[0]))
                times.append(time.perf_counter() - t0)
                read.append(res.triples_read)
                sizes_.append(len(res.nodes))
            row[m] = {"mean_s": round(statistics.mean(times), 3), "triples_read": round(statistics.mean(read)),
                      "queries": len(use)}
            row["ancestors"] = [min(sizes_), max(sizes_)]
        times = []
        for item in items:
            t0 = time.perf_counter()
            duckdb_lineage(con, item)
            times.append(time.perf_counter() - t0)
        row["duckdb"] = {"mean_s": round(statistics.mean(times), 3)}
        result["classes"][cls] = row
        print(json.dumps({"scale": scale, cls: row}), file=sys.stderr, flush=True)
    return result


def markdown(results: list[dict]) -> str:
    lines = ["| scale | values | triples | index build (s) | built | peak MB | floor s (CC alone) | floor peak MB "
             "| components | sets | set deps |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['scale']} | {r['values']:,} | {r['triples']:,} | {r['index_s']} | "
                     f"{r.get('index_builder', '')} | {r.get('index_peak_rss_mb', '')} | "
                     f"{r.get('floor_s', '')} ({r.get('floor_cc_s', '')}) | {r.get('floor_peak_rss_mb', '')} | "
                     f"{r['components']:,} | {r['sets']:,} | {r['set_dependencies']:,} |")
    lines += ["", "| scale | class | ancestors | RQ s (read) | CC s (read) | CS, no cache s (read) | CS s (read) "
                  "| CS warm s (read) | DuckDB s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for cls, row in r["classes"].items():
            cells = [f"{row[m]['mean_s']} ({row[m]['triples_read']:,})" if m in row else "–" for m in METHODS]
            lines.append(f"| {r['scale']} | {cls} | {row['ancestors'][0]}–{row['ancestors'][1]} | "
                         + " | ".join(cells) + f" | {row['duckdb']['mean_s']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, nargs="+", default=[0.25, 1.0])
    ap.add_argument("--work", type=Path, default=OUT / "lineage")
    ap.add_argument("--theta", type=int, default=25_000)
    ap.add_argument("--rq-limit", type=int, default=None, help="time RQ on the first N queries only")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help=f"comma-separated subset of {','.join(METHODS)} (DuckDB always runs)")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--have-trace", action="store_true",
                    help="load the trace a previous run (or gen_trace.py) wrote to --work instead of generating it")
    ap.add_argument("--reindex", action="store_true",
                    help="with --reuse: build the component index again (timed) before the queries")
    ap.add_argument("--reuse", action="store_true",
                    help="queries only, on the stores a previous run left in --work")
    ap.add_argument("--index-engine", choices=("auto", "local", "spark"), default="auto",
                    help="where the index is built: as `strata index` chooses, in this process, or on Spark")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    if not set(methods) <= set(METHODS):
        ap.error(f"--methods: choose from {', '.join(METHODS)}")
    if args.child:  # a measurement in its own process (see the module docstring)
        kind, *rest = args.child
        res = child_build(rest[0], int(rest[1])) if kind == "build" else child_floor(rest[0])
        print(json.dumps(res))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    from strata.spark import get_session

    spark = get_session("local[2]", {"spark.driver.memory": args.driver_memory,
                                     "spark.sql.shuffle.partitions": "8"})
    results = []
    for scale in args.scale:
        results.append(run_scale(spark, scale, args.work, args.theta, args.rq_limit, args.reuse, args.reindex,
                                 args.have_trace, args.index_engine, methods))
        print(json.dumps(results[-1]), flush=True)
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; python {platform.python_version()}")
    print(markdown(results))


if __name__ == "__main__":
    main()
