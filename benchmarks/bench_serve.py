"""`strata serve` under load (docs/serve.md, "Performance, measured"): a real server in a child
process over a fresh store, real HTTP clients.

1. one client posting one RunEvent at a time (as the Spark listener does): acknowledgements/s,
   latency p50/p99;
2. --clients processes posting --each events at once: events/s, fsyncs per event;
3. --preload events in batches, then `GET /api/v1/lineage?depth=20` --reads times while one
   client keeps posting: read latency p50/p99, and the acknowledgements meanwhile.

    python benchmarks/bench_serve.py [--acks 500] [--clients 4] [--each 200] [--preload 2000] [--reads 300]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from support.serve import Server, dumps, run_event  # noqa: E402 - after the path

JSON = {"Content-Type": "application/json"}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000


def one_client(work: Path, n: int) -> None:
    srv = Server(str(work / "acks")).start()
    try:
        lat = []
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            start = time.perf_counter()
            for i in range(n):
                body = dumps(run_event(job="j", inputs=("i",), outputs=(f"o{i % 5}",), when=now()))
                t = time.perf_counter()
                assert c.post("/api/v1/lineage", content=body, headers=JSON).status_code == 201
                lat.append(time.perf_counter() - t)
            took = time.perf_counter() - start
        h = srv.settle(120)
        print(f"one client: {n} acks in {took:.2f} s = {n / took:.0f} acks/s; p50 {pct(lat, .5):.1f} ms, "
              f"p99 {pct(lat, .99):.1f} ms; {h['log']['fsyncs']} fsyncs, {h['folder']['commits']} commits")
    finally:
        srv.stop()


def many_clients(work: Path, clients: int, each: int) -> None:
    srv = Server(str(work / "many")).start()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    try:
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-m", "support.serve_client", srv.url, str(each),
                                   str(work / f"acked-{c}"), str(c)], env=env) for c in range(clients)]
        assert [p.wait() for p in procs] == [0] * clients
        took = time.perf_counter() - start
        n = sum(len((work / f"acked-{c}").read_text().split()) for c in range(clients))
        h = srv.settle(300)
        print(f"{clients} clients: {n} acks in {took:.2f} s (their start included) = {n / took:.0f} events/s; "
              f"{h['log']['fsyncs']} fsyncs ({n / max(1, h['log']['fsyncs']):.1f} events each), "
              f"{h['folder']['commits']} commits")
    finally:
        srv.stop()


def reads_while_writing(work: Path, preload: int, reads: int) -> None:
    srv = Server(str(work / "reads")).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            for b in range(0, preload, 100):  # runs over a chain of 200 datasets
                batch = [run_event(job=f"j{k % 200}", inputs=(f"d{k % 200}",), outputs=(f"d{k % 200 + 1}",),
                                   when=now()) for k in range(b, min(preload, b + 100))]
                assert c.post("/api/v1/lineage", content=dumps(batch), headers=JSON).status_code == 201
            srv.settle(600)
            stop, acks = threading.Event(), [0]

            def writer() -> None:
                with httpx.Client(base_url=srv.url, timeout=60) as w:
                    while not stop.is_set():
                        body = dumps(run_event(job="live", inputs=("d5",), outputs=("live_out",), when=now()))
                        assert w.post("/api/v1/lineage", content=body, headers=JSON).status_code == 201
                        acks[0] += 1

            thread = threading.Thread(target=writer)
            thread.start()
            lat, start = [], time.perf_counter()
            for _ in range(reads):
                t = time.perf_counter()
                r = c.get("/api/v1/lineage", params={"nodeId": "dataset:tests:d100", "depth": 20})
                lat.append(time.perf_counter() - t)
                assert r.status_code == 200
            took = time.perf_counter() - start
            stop.set()
            thread.join()
        print(f"GET /api/v1/lineage?depth=20 on {preload} runs ({len(r.json()['graph'])} nodes) while one client "
              f"posts: p50 {pct(lat, .5):.1f} ms, p99 {pct(lat, .99):.1f} ms; {acks[0] / took:.0f} acks/s meanwhile")
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--acks", type=int, default=500)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--each", type=int, default=200)
    ap.add_argument("--preload", type=int, default=2000)
    ap.add_argument("--reads", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        one_client(work, args.acks)
        many_clients(work, args.clients, args.each)
        reads_while_writing(work, args.preload, args.reads)


if __name__ == "__main__":
    main()
