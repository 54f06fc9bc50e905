"""A client process for tests/serve's concurrency and crash tests: posts N RunEvents one at a
time (as the Spark listener does) and appends the key of each acknowledged one to a file.

    python -m support.serve_client URL N OUT CLIENT [API_KEY] [SECONDS]

It stops at the first connection error (the server was killed). With SECONDS (benchmarks/
bench_serve.py), it posts 20 events to warm up, then for SECONDS at most, and prints how many
it posted in that time and the time."""

from __future__ import annotations

import sys
import time
import uuid

import httpx

from store.interop.openlineage import event_key
from support.serve import dumps, run_event


def event(client: str, i: int) -> dict:
    when = f"2024-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
    return run_event(job=f"job{client}", run=str(uuid.uuid4()), when=when,
                     inputs=(f"in{client}",), outputs=(f"out{client}_{i % 5}",))


def main(url: str, n: int, out: str, client: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as http, open(out, "a", encoding="utf-8") as fh:
        for i in range(n):
            body = event(client, i)
            try:
                r = http.post("/api/v1/lineage", content=dumps(body), headers={"Content-Type": "application/json"})
            except httpx.TransportError:
                return
            if r.status_code != 201:
                raise SystemExit(f"{r.status_code}: {r.text}")
            fh.write(event_key(body) + "\n")
            fh.flush()


def timed(url: str, client: str, seconds: float) -> None:
    bodies = [dumps(event(client, i)) for i in range(20)]
    headers = {"Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=30) as http:
        for b in bodies:  # warm: connected, the server's paths taken once
            assert http.post("/api/v1/lineage", content=b, headers=headers).status_code == 201
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            r = http.post("/api/v1/lineage", content=dumps(event(client, 20 + n)), headers=headers)
            if r.status_code != 201:
                raise SystemExit(f"{r.status_code}: {r.text}")
            n += 1
        print(n, time.perf_counter() - start)


if __name__ == "__main__":
    if len(sys.argv) > 6:
        timed(sys.argv[1], sys.argv[4], float(sys.argv[6]))
    else:
        main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
