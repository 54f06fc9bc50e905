"""What tamper evidence costs (store/seal.py, store/verify.py, docs/verify.md): hashing at commit, and
`strata verify` against one full scan of the store's files.

    python benchmarks/bench_verify.py commit --triples benchmarks/out/lineage/scale-1.0/triples.parquet \
        --work benchmarks/out/verify [--reps 2]
    python benchmarks/bench_verify.py commit --bundle examples/movies.json --reps 30
    python benchmarks/bench_verify.py verify --store benchmarks/out/verify/hashed [--reps 3]

``commit``: ingests the triples file (or bundle) into a fresh local store (no JVM, store/duckdb/),
once with hashing as committed and once with the file digests replaced by a constant (the same
commit minus reading and hashing the files), in turns; prints the median seconds of each, the
seconds spent hashing inside the hashed commit, and the overhead. The last hashed store is kept
at WORK/hashed (build its index with `strata --store WORK/hashed index` to measure `verify` on
a store with index tables too).

``verify``: times, over the files the newest manifest lists, (a) `verify.verify` (every
recorded file hashed, the chain checked), (b) a full scan: every file read and decoded with
pyarrow (`pq.read_table`), and (c) reading the files' bytes (the floor of any scan). The page
cache is warm for all three after the first rep (each is timed on its median).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _no_spark():
    raise RuntimeError("this benchmark runs without Spark")


def commit(args) -> None:
    from store import Store, seal

    real = seal.digest_file
    spent = [0.0]

    def timed(path):
        t0 = time.perf_counter()
        try:
            return real(path)
        finally:
            spent[0] += time.perf_counter() - t0

    def constant(path):
        return seal.FileDigest(0, 0, "0" * 64, (), "")

    out: dict[str, list[float]] = {"hashed": [], "unhashed": [], "hashing": []}
    for _ in range(args.reps):
        for mode in ("unhashed", "hashed"):
            path = os.path.join(args.work, mode)
            shutil.rmtree(path, ignore_errors=True)
            seal.digest_file = timed if mode == "hashed" else constant
            spent[0] = 0.0
            st = Store.open(path, spark=_no_spark, engine="local")
            t0 = time.perf_counter()
            st.ingest(args.triples or args.bundle, fmt="triples" if args.triples else "bundle")
            out[mode].append(time.perf_counter() - t0)
            if mode == "hashed":
                out["hashing"].append(spent[0])
    seal.digest_file = real
    med = {k: statistics.median(v) for k, v in out.items()}
    print(json.dumps({"reps": args.reps, **{f"{k}_s": round(v, 3) for k, v in med.items()},
                      "overhead_pct": round(100 * (med["hashed"] - med["unhashed"]) / med["unhashed"], 1),
                      "hashing_share_pct": round(100 * med["hashing"] / med["hashed"], 1)}))


def verify(args) -> None:
    import pyarrow.parquet as pq

    from store import Store, seal, verify

    st = Store.open(args.store, spark=_no_spark, engine="local")
    files = [st.storage.file_path(f) for e in st.manifest.tables.values() for seg in e.segments
             for f in seal.segment_files(st.storage, seg)]
    size = sum(os.path.getsize(f) for f in files)

    def run_verify():
        rep = verify.verify(st.storage)
        assert rep.ok, rep.to_json()["problems"][:3]
        return rep

    def scan():
        return sum(pq.read_table(f).num_rows for f in files)

    def read_bytes():
        n = 0
        for f in files:
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    n += len(chunk)
        return n

    times: dict[str, list[float]] = {"verify": [], "scan": [], "read": []}
    for _ in range(args.reps):
        for name, fn in (("verify", run_verify), ("scan", scan), ("read", read_bytes)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    rep = run_verify()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({"store": args.store, "files": len(files), "bytes": size, "versions": rep.versions,
                      "unhashed": rep.unhashed, "reps": args.reps,
                      **{f"{k}_s": round(v, 3) for k, v in med.items()},
                      "verify_vs_scan": round(med["verify"] / med["scan"], 2)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("commit")
    src = c.add_mutually_exclusive_group(required=True)
    src.add_argument("--triples")
    src.add_argument("--bundle")
    c.add_argument("--work", default=os.path.join(ROOT, "benchmarks", "out", "verify"))
    c.add_argument("--reps", type=int, default=2)
    v = sub.add_parser("verify")
    v.add_argument("--store", required=True)
    v.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    commit(args) if args.what == "commit" else verify(args)


if __name__ == "__main__":
    main()
