"""In-process index update after a small append: incremental merge against full recompute.

    python benchmarks/bench_index_update.py trace --triples benchmarks/out/lineage/scale-1.0/triples.parquet \\
        --work benchmarks/out/index-update --append 100 --rounds 2
    python benchmarks/bench_index_update.py openlineage --stored 6000 --work benchmarks/out/index-update \\
        --append 99 --rounds 2

`trace`: the generated CSProv-like trace (benchmarks/gen_trace.py) loaded into a store as
bench_lineage.py loads it (edges; each value under its table in `ancestors`), written with
pyarrow (no Spark), and indexed once in this process (θ 25,000, 16 buckets). Each round then
commits `--append` new triples in the trace's shape, starting from 2,000 existing triples
(`--draw local`: consecutive ones, a few components, as one job's output would touch; `uniform`:
drawn from the whole trace, which touches its three large components, two thirds of its
values): 80% derive a new value from an existing one along an existing table pair (the new
value joins that component; its id sorts after the trace's, so it does not become the id of
its component or set, which would change every row of them), 20% link two existing values
along an existing table pair (merging sets or components), so the split plan stays.

`openlineage`: a store of `--stored` generated OpenLineage events (bench_openlineage.py's
pipelines), indexed once; each round ingests `--append` more in-order events.

After each append, on the same committed store, one after the other in this process:

- `incremental`: `store.indexing.update_index` (what `strata index` and `strata serve` run);
  the meta says whether it merged (`mode` incremental) or recomputed the component tables by
  its cost rule or for another reason (`update_reason`), and how the influence scopes went
  (`scopes`, `scopes_reason`); `--max-share 1` turns the cost rule off;
- `full`: the full in-process recompute (store/duckdb/index.py `build_index`, scopes
  included, then the lineage skeletons, as `update_index` writes them), on a hard-linked copy
  of the store (`cp -al`), so the incremental updates of later rounds follow each other as in
  a service.

Both end at the same index (tests/index/test_index_inmemory.py checks equality). Prints one
JSON line per round.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import time
import uuid
from pathlib import Path


def load_trace(triples: Path, root: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from store import schema as S
    from store.duckdb.ingest import stored_schema
    from store.store import Store

    st = Store.open(str(root), engine="local")
    t = pq.read_table(triples, columns=["src", "dst", "op", "src_table", "dst_table"])
    edges = pa.table({S.SRC: t.column("src"), S.DST: t.column("dst"), S.PROCESS: t.column("op")})
    vals = pa.table({"id": pa.chunked_array(t.column("src").chunks + t.column("dst").chunks),
                     "tb": pa.chunked_array(t.column("src_table").chunks + t.column("dst_table").chunks)})
    vals = vals.group_by(["id", "tb"]).aggregate([])
    ids, tbs = vals.column("id").combine_chunks(), vals.column("tb").combine_chunks()
    n = len(ids)
    anc = pa.table({S.ID: pa.concat_arrays([ids, ids]), S.ANCESTOR: pa.concat_arrays([tbs, ids]),
                    S.DEPTH: pa.concat_arrays([pa.array([1] * n, pa.int32()), pa.array([0] * n, pa.int32())])})
    del t, vals
    with st.transaction("bench: load generated triples") as tx:
        tx.append_arrow(S.EDGES, edges.cast(S.SCHEMAS[S.EDGES]), stored_schema(S.EDGES))
        tx.append_arrow(S.ANCESTORS, anc.cast(S.SCHEMAS[S.ANCESTORS]), stored_schema(S.ANCESTORS))
    return st


def trace_append(st, n: int, rnd: int, seed: int, draw: str = "local"):
    """`n` new triples along existing table pairs (see module docstring), committed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from store import schema as S
    from store.duckdb.ingest import stored_schema

    rng = random.Random(seed + rnd)
    tag = uuid.uuid4().hex[:8]  # new ids, never an earlier run's
    files = st.local().files(S.EDGES)
    pf = pq.ParquetFile(files[0])  # the loaded trace, in the order gen_trace.py wrote it
    sample = pf.read(columns=[S.SRC, S.DST, S.PROCESS])
    if draw == "uniform":  # 2,000 triples from all of it
        rows = sample.take(pa.array(rng.sample(range(sample.num_rows), 2000))).to_pylist()
    else:  # 2,000 consecutive triples: a few components, as one job's output would touch
        rows = sample.slice(rng.randrange(sample.num_rows - 2000), 2000).to_pylist()
    del sample
    tables = dict(zip(*[c.to_pylist() for c in st.local().relation(S.ANCESTORS).filter(
        f"{S.DEPTH} = 1 AND {S.ID} IN ({','.join(repr(v) for r in rows for v in (r[S.SRC], r[S.DST]))})")
        .project(f"{S.ID}, {S.ANCESTOR}").to_arrow_table().columns], strict=True))
    rows = [r for r in rows if r[S.SRC] in tables and r[S.DST] in tables]
    by_pair: dict = {}
    for r in rows:
        by_pair.setdefault((tables[r[S.SRC]], tables[r[S.DST]]), []).append(r)
    new_edges, anc = [], []
    for k in range(n):
        r = rng.choice(rows)
        if k % 5 == 4:  # link two existing values along an existing table pair
            other = rng.choice(by_pair[(tables[r[S.SRC]], tables[r[S.DST]])])
            new_edges.append((r[S.SRC], r[S.PROCESS], other[S.DST]))
        else:  # a new value derived from an existing one
            v = f"w{tag}-{k}"  # sorts after the trace's ids (v1, v2, ...): it never names a component
            new_edges.append((r[S.SRC], r[S.PROCESS], v))
            anc += [(v, tables[r[S.DST]], 1), (v, v, 0)]
    with st.transaction(f"bench: append {n} triples") as tx:
        src, process, dst = zip(*new_edges, strict=True)
        tx.append_arrow(S.EDGES, pa.table({S.SRC: src, S.DST: dst, S.PROCESS: process}, schema=S.SCHEMAS[S.EDGES]),
                        stored_schema(S.EDGES))
        if anc:
            ids, ancestors, depths = zip(*anc, strict=True)
            tx.append_arrow(S.ANCESTORS, pa.table({S.ID: ids, S.ANCESTOR: ancestors, S.DEPTH: depths},
                                                  schema=S.SCHEMAS[S.ANCESTORS]), stored_schema(S.ANCESTORS))
    return len(new_edges)


def timed_pair(st, params) -> dict:
    from store.duckdb import index as local_index
    from store.indexing import update_index, with_skeletons
    from store.store import Store

    root = st.root
    copy = f"{root}.full"  # the same committed store, its files hard-linked (a commit adds files, never edits)
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-al", root, copy], check=True)
    t0 = time.perf_counter()
    meta = update_index(Store.open(root, engine="local"))
    inc = time.perf_counter() - t0
    t0 = time.perf_counter()
    full_st = Store.open(copy, engine="local")
    with_skeletons(full_st, local_index.build_index(full_st, params, "bench: full recompute",
                                                    {"update": "recomputed"}))
    full = time.perf_counter() - t0
    shutil.rmtree(copy)
    keep = ("mode", "update_reason", "scopes", "scopes_reason", "new_triples", "affected_components",
            "affected_triples", "files", "touched_s", "tables_s", "read_s", "sets_s", "write_s", "scopes_s",
            "skeletons", "triples", "components")
    return {"incremental_s": round(inc, 3), "full_s": round(full, 3), "ratio": round(full / inc, 1),
            **{k: meta[k] for k in keep if k in meta}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("trace", "openlineage"))
    ap.add_argument("--triples", type=Path, help="trace: triples.parquet of gen_trace.py")
    ap.add_argument("--stored", type=int, default=6000, help="openlineage: events in the store")
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out" / "index-update")
    ap.add_argument("--append", type=int, default=100, help="triples (trace) or events (openlineage) per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--draw", choices=("local", "uniform"), default="local",
                    help="trace: the existing triples new ones start from: 2,000 consecutive ones, or from anywhere")
    ap.add_argument("--reuse", action="store_true", help="keep the indexed store of an earlier run")
    ap.add_argument("--max-share", type=float, default=None,
                    help="index_update.MAX_AFFECTED_SHARE for this run (1 merges whatever the cost)")
    args = ap.parse_args()
    if args.max_share is not None:
        from store.duckdb import index_update

        index_update.MAX_AFFECTED_SHARE = args.max_share

    from store.index import IndexParams
    from store.indexing import build_index
    from store.store import Store

    root = args.work / (f"trace-{args.triples.parent.name}" if args.kind == "trace" else f"ol-{args.stored}")
    params = IndexParams()
    if not (args.reuse and root.exists()):
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.perf_counter()
        if args.kind == "trace":
            st = load_trace(args.triples, root)
        else:
            from bench_openlineage import batch

            from store.interop.ol_commit import ingest_events
            st = Store.open(str(root), engine="local")
            ingest_events(st, batch(range(args.stored // 3), lambda n: 10.0 * n, 1), "base")
        loaded = time.perf_counter() - t0
        t0 = time.perf_counter()
        build_index(Store.open(str(root), engine="local"), params)
        print(json.dumps({"store": str(root), "load_s": round(loaded, 1),
                          "first_build_s": round(time.perf_counter() - t0, 1)}), flush=True)
    for rnd in range(args.rounds):
        st = Store.open(str(root), engine="local")
        if args.kind == "trace":
            added = trace_append(st, args.append, rnd + st.version, 7, args.draw)
        else:
            from bench_openlineage import batch

            from store.interop.ol_commit import ingest_events
            first = args.stored // 3 + 1000 * (st.version + 1)
            runs = range(first, first + args.append // 3)
            added = ingest_events(st, batch(runs, lambda n: 10.0 * n, st.version), "append").new_events
        st = Store.open(str(root), engine="local")
        draw = args.draw if args.kind == "trace" else None
        print(json.dumps({"kind": args.kind, "draw": draw, "round": rnd, "appended": added,
                          "edges": st.local().rows("edges"), **timed_pair(st, params)}), flush=True)


if __name__ == "__main__":
    main()
