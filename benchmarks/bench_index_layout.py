"""Lineage point reads on two file layouts of the same in-process index, side by side in one run.

    python benchmarks/bench_index_layout.py --triples benchmarks/out/lineage/scale-1.0/triples.parquet \\
        --work benchmarks/out/index-layout --repeat 3

The trace (benchmarks/gen_trace.py) is loaded once as bench_index_update.py loads it and
hard-linked into a second store; both are indexed in this process (θ 25,000, 16 buckets), which
writes one file per bucket (`one-file`). In the second, one more commit then writes every file
of the five component tables again as an incremental update writes the files it changes
(store/duckdb/index_rewrite.py `rewrite_table`: pieces of about PIECE_BYTES in key order,
`pieces`), the layout a long-running update leaves. With $STRATA_LINEAGE_CACHE=0 (no component
cache, no skeleton files: every read goes to the index's Parquet files, as one `strata lineage`
process without skeletons does), each query item of the trace's queries.json (SC-SL, LC-SL,
LC-LL) is asked on both stores in turn, `--repeat` times after one warm-up pass: a CS lineage
(`store.lineage.lineage`), and the item's direct sources and consumers
(`store.neighbours.Neighbours`: locate, direct both ways). Prints one JSON
line per class and read with both layouts' medians (ms) and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["STRATA_LINEAGE_CACHE"] = "0"


def cut_into_pieces(st) -> None:
    """Every file of the component tables written again as an update writes a file it changes."""
    import pyarrow as pa

    from store.duckdb.index_rewrite import rewrite_table
    from store.index import layout as L

    buckets = int(st.meta(L.META_KEY)["buckets"])
    with st.transaction("bench: the index's files cut into pieces") as tx:
        for name in (L.NODES, L.TRIPLES, L.SETDEPS, L.SETS, L.COMPONENTS):
            key = L.LAYOUT[name][0]
            folder = st.storage.file_path(st.manifest.tables[name].segments[0])
            none = pa.table({key: pa.array([], pa.string())})
            rewrite_table(tx, name, folder, none, st.local().arrow(name).slice(0, 0), buckets,
                          update=lambda t: t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out" / "index-layout")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reuse", action="store_true", help="keep the indexed stores of an earlier run")
    args = ap.parse_args()

    from bench_index_update import load_trace

    from store.duckdb import index as X
    from store.index import IndexParams
    from store.lineage import Method, lineage
    from store.neighbours import Neighbours
    from store.store import Store

    roots = {"one-file": args.work / "one-file", "pieces": args.work / "pieces"}
    if not (args.reuse and all(r.exists() for r in roots.values())):
        for r in roots.values():
            shutil.rmtree(r, ignore_errors=True)
        args.work.mkdir(parents=True, exist_ok=True)
        load_trace(args.triples, roots["one-file"])
        subprocess.run(["cp", "-al", str(roots["one-file"]), str(roots["pieces"])], check=True)
        for name, root in roots.items():
            t0 = time.perf_counter()
            X.build_index(Store.open(str(root), engine="local"), IndexParams())
            if name == "pieces":
                cut_into_pieces(Store.open(str(root), engine="local"))
            files = len(Store.open(str(root), engine="local").local().files("index_triples"))
            print(json.dumps({"layout": name, "build_s": round(time.perf_counter() - t0, 1),
                              "index_triples_files": files}), flush=True)
    queries = json.loads((args.triples.parent / "queries.json").read_text())["classes"]
    stores = {name: Store.open(str(root), engine="local") for name, root in roots.items()}

    def cs(st, item):
        lineage(st, item, method=Method.CS)

    def neighbours(st, item):
        reads = Neighbours(st)
        where = reads.locate(item)
        reads.direct([where], False)
        reads.direct([where], True)

    times: dict = {}
    for rnd in range(args.repeat + 1):  # round 0 warms the page cache
        for cls, items in queries.items():
            for item in items:
                for read in (cs, neighbours):
                    for name, st in (stores.items() if rnd % 2 else reversed(stores.items())):
                        t0 = time.perf_counter()
                        read(st, item)
                        if rnd:
                            times.setdefault((cls, read.__name__, name), []).append(time.perf_counter() - t0)
    for cls in queries:
        for read in ("cs", "neighbours"):
            med = {name: statistics.median(times[(cls, read, name)]) * 1000 for name in roots}
            print(json.dumps({"class": cls, "read": read, **{f"{k}_ms": round(v, 1) for k, v in med.items()},
                              "pieces/one-file": round(med["pieces"] / med["one-file"], 2)}), flush=True)


if __name__ == "__main__":
    main()
