"""OpenLineage ingest: the cost of one batch of new events against how many the store holds.

    python benchmarks/bench_openlineage.py --stored 6000 24000 --work benchmarks/out/openlineage

Generated pipelines: runs of 50 jobs over 200 datasets, each run three events (START, RUNNING,
COMPLETE), reading one or two datasets and writing one, with schema and column lineage facets.
For each stored size: ingest that many events into an empty store in one batch, then time, one
after the other,

- `in order`: a batch of 30 events (10 new runs) that end after every stored run;
- `late`: 30 events of 10 runs that ended before most stored runs (they renumber the versions of
  the datasets they wrote and change which version later runs read);
- `again`: the late batch again (nothing new: nothing committed).

Both codes run on the same events, one after the other in the same process: the incremental
ingest (`ingest_events`) and the full re-derivation of every event at every ingest
(`rederive_all`). Prints one JSON line per stored size and code.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import time
import uuid
from pathlib import Path

from store.interop.ol_commit import ingest_events, rederive_all
from store.interop.openlineage import Event
from store.store import Store

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
NS = "bench"
PRODUCER = "https://github.com/strata/bench"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
FIELDS = ("id", "amount", "status", "customer.id")


def _facet(kind: str, **body) -> dict:
    return {"_producer": PRODUCER, "_schemaURL": f"https://openlineage.io/spec/facets/1-0-0/{kind}.json", **body}


def _dataset(name: str, lineage_from: list[str] | None = None) -> dict:
    facets = {"schema": _facet("SchemaDatasetFacet", fields=[{"name": f, "type": "string"} for f in FIELDS])}
    if lineage_from:
        fields = {f: {"inputFields": [{"namespace": NS, "name": src, "field": f} for src in lineage_from]}
                  for f in FIELDS[:2]}
        facets["columnLineage"] = _facet("ColumnLineageDatasetFacet", fields=fields)
    return {"namespace": NS, "name": name, "facets": facets}


def run_events(n: int, minute: float, rng: random.Random) -> list[dict]:
    rid = str(uuid.UUID(int=n + 1))
    job = {"namespace": NS, "name": f"job{n % 50}"}
    ins = sorted({f"ds{rng.randrange(200)}" for _ in range(rng.randint(1, 2))})
    out = f"ds{rng.randrange(200)}"

    def event(at: float, etype: str, inputs=(), outputs=()) -> dict:
        return {"eventTime": (T0 + dt.timedelta(minutes=at)).isoformat().replace("+00:00", "Z"), "eventType": etype,
                "producer": PRODUCER, "schemaURL": SCHEMA_URL, "run": {"runId": rid}, "job": job,
                "inputs": list(inputs), "outputs": list(outputs)}

    return [event(minute, "START", [_dataset(d) for d in ins]), event(minute + 1, "RUNNING"),
            event(minute + 3, "COMPLETE", [], [_dataset(out, ins)])]


def batch(runs: range, minute_of, seed: int) -> list[Event]:
    rng = random.Random(seed)
    return [Event("bench", i, b) for i, b in enumerate(e for n in runs for e in run_events(n, minute_of(n), rng))]


def timed(ingest, st, events: list[Event], message: str) -> dict:
    t0 = time.perf_counter()
    result = ingest(st, events, message)
    return {"s": round(time.perf_counter() - t0, 3), "new": result.new_events, "committed": result.committed}


# the two codes timed side by side: the incremental ingest, and the full re-derivation of every
# event at every ingest (`rederive_all`: what a store on a Hadoop URI gets, and every store before)
CODES = {"incremental": ingest_events, "full": rederive_all}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stored", type=int, nargs="+", default=[6000])
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out" / "openlineage")
    args = ap.parse_args()
    for stored in args.stored:
        runs = stored // 3
        base = batch(range(runs), lambda n: 10.0 * n, 1)
        in_order = batch(range(runs, runs + 10), lambda n: 10.0 * n, 2)
        late = batch(range(runs + 10, runs + 20), lambda n, first=runs + 10: 10.0 * (n - first) + 5, 3)
        for code, ingest in CODES.items():
            root = args.work / f"stored-{stored}-{code}"
            shutil.rmtree(root, ignore_errors=True)
            st = Store.open(str(root), engine="local")
            row = {"stored_events": stored, "code": code, "first_batch": timed(ingest, st, base, "base"),
                   "in_order_30": timed(ingest, st, in_order, "in order"), "late_30": timed(ingest, st, late, "late"),
                   "again_30": timed(ingest, st, late, "again")}
            info = st.local().rows
            print(json.dumps({**row, "elements": info("elements"), "edges": info("edges")}), flush=True)


if __name__ == "__main__":
    main()
