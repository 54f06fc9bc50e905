"""Index build on random-triple shapes, beside a bare scipy connected-components pass.

    python benchmarks/bench_index_shapes.py --triples 100000 1000000 --work benchmarks/out/shapes

For each shape and size: write a triples CSV (src,dst,op; no table columns, so every value is
its own table in the workflow graph, as a new user's random triples are), ingest it with
`strata ingest` (in this process, `Store.ingest`), then in two child processes, one after the
other, time

- the in-process index build (`store.indexing.build_index`, engine local): what `strata index`
  does on that store; its peak memory is the child's;
- the peer: read the same CSV with pyarrow, encode src/dst with one dictionary, one
  `scipy.sparse.csgraph.connected_components` (weak) pass.

Shapes (1.27 values per triple, 20 ops):
- `uniform`: both ends uniform over the values (one giant component and many small ones);
- `giants`: values split into 4 groups, both ends of a triple in the same group (4 giant
  components);
- `star`: one end of every triple among 10 hubs (a few components around the hubs).

Prints one JSON line per run and a Markdown table for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

SHAPES = ("uniform", "giants", "star")
OPS = 20


def write_csv(path: Path, shape: str, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    values = int(n * 1.27)
    with path.open("w") as f:
        f.write("src,dst,op\n")
        for _ in range(n):
            if shape == "uniform":
                a, b = rng.randrange(values), rng.randrange(values)
            elif shape == "giants":
                g = rng.randrange(4)
                a, b = rng.randrange(values // 4) * 4 + g, rng.randrange(values // 4) * 4 + g
            else:
                a, b = rng.randrange(10), rng.randrange(values)
                if rng.random() < 0.5:
                    a, b = b, a
            f.write(f"v{a},v{b},op{rng.randrange(OPS)}\n")


def child_build(store: str) -> dict:
    from store.index import IndexParams
    from store.indexing import build_index
    from store.store import Store

    st = Store.open(store, engine="local")
    t0 = time.perf_counter()
    meta = build_index(st, IndexParams())
    return {"build_s": round(time.perf_counter() - t0, 2), "components": meta["components"], "sets": meta["sets"],
            "stages": {k: meta[k] for k in meta if k.endswith("_s")}}


def child_peer(csv: str) -> dict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    t0 = time.perf_counter()
    t = pacsv.read_csv(csv, convert_options=pacsv.ConvertOptions(column_types={"src": pa.string(), "dst": pa.string()}))
    both = pc.dictionary_encode(pa.chunked_array(t.column("src").chunks + t.column("dst").chunks))
    codes = np.concatenate([c.indices.to_numpy() for c in both.chunks])
    n_values = len(both.chunks[-1].dictionary)
    src, dst = codes[: t.num_rows], codes[t.num_rows:]
    t1 = time.perf_counter()
    k, _labels = connected_components(csr_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n_values,) * 2),
                                      directed=True, connection="weak")
    return {"peer_s": round(time.perf_counter() - t0, 2), "peer_cc_s": round(time.perf_counter() - t1, 2),
            "components": int(k)}


def in_child(kind: str, arg: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, arg], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triples", type=int, nargs="+", default=[100_000])
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out" / "shapes")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, arg = args.child
        result = child_build(arg) if kind == "build" else child_peer(arg)
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(json.dumps(result))
        return
    from store.store import Store

    rows = []
    for n in args.triples:
        for shape in args.shapes:
            folder = args.work / f"{shape}-{n}"
            folder.mkdir(parents=True, exist_ok=True)
            csv = folder / "triples.csv"
            write_csv(csv, shape, n)
            store = folder / "store"
            subprocess.run(["rm", "-rf", str(store)], check=True)
            t0 = time.perf_counter()
            Store.open(str(store), engine="local").ingest(str(csv))
            ingest_s = round(time.perf_counter() - t0, 2)
            build, peer = in_child("build", str(store)), in_child("peer", str(csv))
            assert build["components"] == peer["components"], (build, peer)
            row = {"shape": shape, "triples": n, "ingest_s": ingest_s, **build, "build_peak_mb": build["peak_mb"],
                   "peer_s": peer["peer_s"], "peer_cc_s": peer["peer_cc_s"], "peer_peak_mb": peer["peak_mb"],
                   "ratio": round(build["build_s"] / max(peer["peer_s"], 0.01), 1)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("\n| shape | triples | components | sets | in-process build | peak | scipy pass (cc alone) | peak "
          "| build / scipy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['triples']:,} | {r['components']:,} | {r['sets']:,} | {r['build_s']} s | "
              f"{r['build_peak_mb']:,} MB | {r['peer_s']} s ({r['peer_cc_s']} s) | {r['peer_peak_mb']:,} MB | "
              f"{r['ratio']}× |")


if __name__ == "__main__":
    main()
