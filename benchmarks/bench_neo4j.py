"""`strata export neo4j --component` of one large component over Bolt (docs/neo4j.md).

A triples file whose values form one connected component — a binary tree of --nodes values:
value i is derived from value (i - 1) // 2 by one of --ops transformations — is ingested and
indexed on the local engine. Then, timed separately:

1. extraction: the component's subgraph (`subgraph_for`, as `strata export neo4j --component`
   computes it; nodes, DERIVED / FEEDS / EMITS relationships);
2. the push over Bolt into an empty Neo4j (the suite's server, tests/neo4j: Neo4j Community 5.26
   embedded, C2 compiler, --heap and --pagecache), for each --batch size on a new server;
3. the same push again into the filled database (every MERGE finds its node or relationship).

    python benchmarks/bench_neo4j.py [--nodes 1000000] [--ops 100] [--batch 1000 --batch 10000]
                                     [--work benchmarks/out/neo4j] [--heap 3g] [--pagecache 1024]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from support.neo4j_server import Server, ensure_built  # noqa: E402 - after the path

from store import Store  # noqa: E402
from store.export import neo4j as N  # noqa: E402
from store.export.selection import Selection  # noqa: E402
from store.index import layout as L  # noqa: E402
from store.indexing import build_index  # noqa: E402
from strata.app import subgraph_for  # noqa: E402


def write_triples(path: Path, nodes: int, ops: int) -> None:
    with path.open("w") as fh:
        fh.write("src,dst,op\n")
        for i in range(1, nodes):
            fh.write(f"v{(i - 1) // 2},v{i},op{i % ops}\n")


def no_spark():
    raise SystemExit("the benchmark runs on the local engine only")


def timed(label: str, fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    took = time.perf_counter() - t
    print(f"{label}: {took:.1f} s", flush=True)
    return out, took


def count(driver, query: str) -> int:
    recs, _, _ = driver.execute_query(query)
    return recs[0]["n"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1_000_000, help="values in the component")
    ap.add_argument("--ops", type=int, default=100, help="transformations (process vertices)")
    ap.add_argument("--batch", type=int, action="append", help="rows per UNWIND (repeatable; default 1000)")
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "out" / "neo4j")
    ap.add_argument("--heap", default="3g", help="the Neo4j JVM's -Xmx")
    ap.add_argument("--pagecache", type=int, default=1024, help="Neo4j page cache, MiB")
    ap.add_argument("--reuse", action="store_true", help="keep the store of an earlier run")
    args = ap.parse_args()
    batches = args.batch or [N.PUSH_BATCH]

    from neo4j import GraphDatabase

    ensure_built()
    work = args.work / f"n{args.nodes}-ops{args.ops}"
    store_root = work / "store"
    if not args.reuse and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    st = Store.open(store_root, spark=no_spark, engine="local")
    if not (args.reuse and st.meta(L.META_KEY)):
        triples = work / "tree.csv"
        write_triples(triples, args.nodes, args.ops)
        timed(f"ingest {args.nodes - 1:,} triples", lambda: st.ingest(str(triples)))
        timed("index", lambda: build_index(st))

    budget = args.nodes + args.ops
    sg, extract_s = timed("extract the component", lambda: subgraph_for(st, Selection(component="v0"), budget))
    n_nodes, n_rels = len(sg.nodes), len(sg.rels)
    print(f"  {n_nodes:,} nodes, {n_rels:,} relationships; warnings: {list(sg.warnings)[:2]}")

    for batch in batches:
        home = work / f"neo4j-b{batch}"
        shutil.rmtree(home, ignore_errors=True)
        server = Server.start(home, "bench-password", jvm_options=(f"-Xmx{args.heap}", "-XX:+UseParallelGC"),
                              pagecache_mb=args.pagecache)
        print(f"server started in {server.started_in:.1f} s ({server.uri})")
        try:
            creds = N.Credentials(server.uri, server.user, server.password)
            res, first = timed(f"push, batch {batch}, empty database", N.push, sg, creds, batch_size=batch)
            _, again = timed(f"push, batch {batch}, again (all merged)", N.push, sg, creds, batch_size=batch)
            with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
                got_nodes = count(driver, "MATCH (n:Strata) RETURN count(n) AS n")
                got_rels = count(driver, "MATCH ()-[r]->() RETURN count(r) AS n")
            assert (got_nodes, got_rels) == (n_nodes, n_rels), (got_nodes, got_rels)
            rows = n_nodes + n_rels
            print(f"  {res.statements:,} statements; first push {rows / first:,.0f} rows/s "
                  f"({n_nodes:,} nodes + {n_rels:,} relationships), again {rows / again:,.0f} rows/s")
        finally:
            server.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"extraction {extract_s:.1f} s; this process's peak RSS {peak:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
