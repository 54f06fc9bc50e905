"""`strata serve` under load (docs/serve.md, "Performance, measured"): a real server in a child
process over a fresh store, real HTTP clients.

1. one client posting one RunEvent at a time (as the Spark listener does): acknowledgements/s,
   latency p50/p99;
2. --clients processes posting one event at a time for --seconds, counted once every client is
   connected and warm (their start excluded): events/s, fsyncs per event; then how long the
   server takes to fold what they sent into the store. The clients share the machine's cores with
   the server, so the server's own cost is measured too: its CPU seconds (its process and its
   commits' worker, from /proc) per event, from the clients' start until every event is folded
   and the component index is at the last commit, and the events/s that implies for a server
   with 2 cores of its own (2 / CPU per event); and the clients' CPU per event;
3. a store of --runs runs over a chain of 200 datasets, ingested in one commit before the server
   starts, then `GET /api/v1/lineage?depth=20` --reads times while one client keeps posting:
   read latency p50/p99, the acknowledgements meanwhile, the server's resident memory.

    python benchmarks/bench_serve.py [--acks 500] [--clients 8] [--seconds 10] [--runs 100000] [--reads 300]
                                     [--server-code DIR] [--only acks,clients,reads]

The server runs this checkout's code (PYTHONPATH), or with --server-code another checkout's (the
clients are this checkout's), to compare two versions side by side in one session.

4. with --item-store (alone): lineage of items of each class of bench_lineage.py's queries.json
   over `GET /api/strata/v1/lineage?item=` on that store (indexed), first and repeated.

    python benchmarks/bench_serve.py --item-store benchmarks/out/lineage/scale-10.0/store
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
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


SERVER_ENV: dict[str, str] = {}  # the server's environment: PYTHONPATH, this checkout or --server-code


def cpu_seconds(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of a process and of each of its live children, by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            pids += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    except OSError:
        pass
    out = {}
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[p] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15)
    return out


def indexed(srv: Server, timeout: float = 600) -> dict:
    """Wait until the server's component index is at its newest version; its health then."""
    deadline = time.monotonic() + timeout
    while (h := srv.health())["index"]["version"] != h["version"] and time.monotonic() < deadline:
        assert h["index"]["error"] is None, h["index"]["error"]
        time.sleep(0.05)
    return h


def one_client(work: Path, n: int) -> None:
    srv = Server(str(work / "acks"), env=SERVER_ENV).start()
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


def many_clients(work: Path, clients: int, seconds: float) -> None:
    srv = Server(str(work / "many"), env=SERVER_ENV).start()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    try:
        # one commit and index update first: the commits' worker is started and warm
        body = dumps(run_event(job="warm", inputs=("cold",), outputs=("warm",), when=now()))
        assert httpx.post(f"{srv.url}/api/v1/lineage", content=body, headers=JSON).status_code == 201
        srv.settle(120)
        indexed(srv)
        h0 = srv.health()
        before, appended = cpu_seconds(srv.proc.pid), h0["log"]["appended"]
        waited = resource.getrusage(resource.RUSAGE_CHILDREN)  # the clients' CPU, once they are waited for
        procs = [subprocess.Popen([sys.executable, "-m", "support.serve_client", srv.url, "1000000",
                                   str(work / f"acked-{c}"), str(c), "", str(seconds)], env=env,
                                  stdout=subprocess.PIPE, text=True) for c in range(clients)]
        outs = [p.communicate()[0].split() for p in procs]
        assert [p.returncode for p in procs] == [0] * clients
        n, took = sum(int(o[0]) for o in outs), max(float(o[1]) for o in outs)
        done = resource.getrusage(resource.RUSAGE_CHILDREN)
        client_s = done.ru_utime + done.ru_stime - waited.ru_utime - waited.ru_stime
        start = time.perf_counter()
        h = srv.settle(600)
        fold_s = time.perf_counter() - start
        h = indexed(srv)  # the index brought up to the last commit: its cost is the server's too
        index_s = time.perf_counter() - start
        after = cpu_seconds(srv.proc.pid)
        events = h["log"]["appended"] - appended  # the warm-up's too: the CPU counts them
        main_s = after[srv.proc.pid] - before[srv.proc.pid]
        worker_s = sum(t - before.get(p, 0.0) for p, t in after.items() if p != srv.proc.pid)
        per = (main_s + worker_s) / events
        print(f"{clients} clients, warm: {n} acks in {took:.2f} s = {n / took:.0f} events/s; "
              f"{h['log']['fsyncs']} fsyncs ({h['log']['appended'] / max(1, h['log']['fsyncs']):.1f} events each); "
              f"folded {h['folder']['folded']} events in {h['folder']['commits']} commits, "
              f"the last {fold_s:.1f} s after the clients stopped, the index at it {index_s:.1f} s after")
        rounds = h["folder"]["commits"] - h0["folder"]["commits"] + h["index"]["updates"] - h0["index"]["updates"]
        print(f"  server CPU per event: {per * 1000:.3f} ms ({main_s / events * 1000:.3f} ms its process, "
              f"{worker_s / events * 1000:.3f} ms its commits' worker; {events} events) = "
              f"{2 / per:.0f} events/s on 2 cores of its own; the worker {worker_s / rounds * 1000:.0f} ms "
              f"per commit ({rounds} commits and index updates); the clients {client_s / events * 1000:.3f} ms "
              f"(their start and Python's included)")
    finally:
        srv.stop()


def chain_store(root: str, runs: int) -> float:
    """A store of `runs` completed runs over a chain of 200 datasets (job j<k> reads d<k>, writes
    d<k+1>), ingested in one commit; seconds it took."""
    from store import Store
    from store.interop.ol_commit import ingest_events
    from store.interop.openlineage import Event

    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    events = [Event("bench", k, run_event(job=f"j{k % 200}", inputs=(f"d{k % 200}",), outputs=(f"d{k % 200 + 1}",),
                                          when=(base + dt.timedelta(seconds=k)).isoformat()))
              for k in range(runs)]
    start = time.perf_counter()
    ingest_events(Store.open(root), events, f"bench: {runs} runs")
    return time.perf_counter() - start


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (the commits' worker), in MB."""
    out = subprocess.run(["ps", "-o", "rss=", "--pid", str(pid), "--ppid", str(pid)], capture_output=True, text=True)
    return sum(int(x) for x in out.stdout.split()) / 1024


def reads_while_writing(work: Path, runs: int, reads: int) -> None:
    root = str(work / "reads")
    took = chain_store(root, runs)
    print(f"store of {runs} runs over 200 datasets: ingested in one commit in {took:.1f} s")
    srv = Server(root, env=SERVER_ENV).start(timeout=600)
    try:
        with httpx.Client(base_url=srv.url, timeout=600) as c:
            start = time.perf_counter()
            r = c.get("/api/v1/lineage", params={"nodeId": "dataset:tests:d100", "depth": 20})
            assert r.status_code == 200
            first = time.perf_counter() - start
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
            versions = c.get("/api/v1/health").json()["version"]
        print(f"GET /api/v1/lineage?depth=20 on {runs} runs ({len(r.json()['graph'])} nodes): first {first:.2f} s "
              f"(the view of the events built); then while one client posts: p50 {pct(lat, .5):.1f} ms, "
              f"p99 {pct(lat, .99):.1f} ms; {acks[0] / took:.0f} acks/s meanwhile, store at version {versions}; "
              f"server resident memory {rss_mb(srv.proc.pid):.0f} MB")
    finally:
        srv.stop()


def item_lineage(store: str, queries: str, rounds: int) -> None:
    """`GET /api/strata/v1/lineage?item=` over HTTP on an existing indexed store (the CSProv
    trace of bench_lineage.py), for the items of each class its queries.json lists: the first
    request of each item, then `rounds` more of each, in turns."""
    classes = json.loads(Path(queries).read_text())["classes"]
    srv = Server(store).start(timeout=600)
    try:
        with httpx.Client(base_url=srv.url, timeout=600) as c:
            for cls, items in classes.items():
                first, warm, sizes = [], [], []
                for k in range(rounds + 1):
                    for item in items:
                        t = time.perf_counter()
                        r = c.get("/api/strata/v1/lineage", params={"item": item})
                        (first if k == 0 else warm).append(time.perf_counter() - t)
                        assert r.status_code == 200, r.text
                        sizes.append(len(r.json()["ancestors"]))
                print(f"{cls}: {len(items)} items, {min(sizes)}-{max(sizes)} ancestors: first p50 "
                      f"{pct(first, .5):.0f} ms, max {max(first) * 1000:.0f} ms; then p50 {pct(warm, .5):.0f} ms, "
                      f"p99 {pct(warm, .99):.0f} ms")
        print(f"server resident memory {rss_mb(srv.proc.pid):.0f} MB")
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--acks", type=int, default=500)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--reads", type=int, default=300)
    ap.add_argument("--item-store", help="only: lineage of items over HTTP on this indexed store (bench_lineage.py's)")
    ap.add_argument("--queries", help="its queries.json (default: beside the store)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--server-code", help="run the server from this checkout (default: this one)")
    ap.add_argument("--only", default="acks,clients,reads", help="which parts to run (comma-separated)")
    args = ap.parse_args()
    SERVER_ENV["PYTHONPATH"] = str(Path(args.server_code).resolve() if args.server_code else ROOT)
    print(f"server code: {SERVER_ENV['PYTHONPATH']}")
    only = set(args.only.split(","))
    if args.item_store:
        item_lineage(args.item_store, args.queries or str(Path(args.item_store).parent / "queries.json"), args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "acks" in only:
            one_client(work, args.acks)
        if "clients" in only:
            many_clients(work, args.clients, args.seconds)
        if "reads" in only:
            reads_while_writing(work, args.runs, args.reads)


if __name__ == "__main__":
    main()
