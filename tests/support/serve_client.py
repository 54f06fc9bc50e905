"""A client process for tests/serve's concurrency and crash tests: posts N RunEvents one at a
time (as the Spark listener does) and appends the key of each acknowledged one to a file.

    python -m support.serve_client URL N OUT CLIENT [API_KEY]

It stops at the first connection error (the server was killed)."""

from __future__ import annotations

import sys
import uuid

import httpx

from store.interop.openlineage import event_key
from support.serve import dumps, run_event


def main(url: str, n: int, out: str, client: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as http, open(out, "a", encoding="utf-8") as fh:
        for i in range(n):
            when = f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
            event = run_event(job=f"job{client}", run=str(uuid.uuid4()), when=when,
                              inputs=(f"in{client}",), outputs=(f"out{client}_{i % 5}",))
            try:
                r = http.post("/api/v1/lineage", content=dumps(event), headers={"Content-Type": "application/json"})
            except httpx.TransportError:
                return
            if r.status_code != 201:
                raise SystemExit(f"{r.status_code}: {r.text}")
            fh.write(event_key(event) + "\n")
            fh.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
