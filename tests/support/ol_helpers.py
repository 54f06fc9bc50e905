"""OpenLineage events for tests: a small builder, and a tiny pipeline model with a reference of
what the store must make of it (versions in order of production, point-in-time reads)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from store import Store

PRODUCER = "https://github.com/strata/tests"
EVENT_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
NS = "warehouse"
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def facet(kind: str, **body) -> dict:
    return {"_producer": PRODUCER, "_schemaURL": f"https://openlineage.io/spec/facets/1-0-0/{kind}.json", **body}


def dataset(name: str, fields: list[str] | None = None, lineage: dict | None = None, ns: str = NS) -> dict:
    facets = {}
    if fields is not None:
        facets["schema"] = facet("SchemaDatasetFacet", fields=[{"name": f, "type": "string"} for f in fields])
    if lineage is not None:
        facets["columnLineage"] = facet("ColumnLineageDatasetFacet", fields=lineage)
    return {"namespace": ns, "name": name, "facets": facets}


def run_event(minute: int, etype: str, rid: str, job: str, inputs=(), outputs=(), parent=None) -> dict:
    run: dict = {"runId": rid}
    if parent is not None:
        run["facets"] = {"parent": facet("ParentRunFacet", run={"runId": parent[0]},
                                         job={"namespace": NS, "name": parent[1]})}
    return {"eventTime": (T0 + dt.timedelta(minutes=minute)).isoformat().replace("+00:00", "Z"),
            "eventType": etype, "producer": PRODUCER, "schemaURL": EVENT_SCHEMA, "run": run,
            "job": {"namespace": NS, "name": job}, "inputs": list(inputs), "outputs": list(outputs)}


def rid(n: int) -> str:
    return str(uuid.UUID(int=n))


@dataclass(frozen=True)
class PlannedRun:
    """A run of the model: its window, its end state (None: still running) and what it touched."""

    n: int
    start: int
    end: int
    state: str | None
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    def events(self) -> list[dict]:
        job = f"job{self.n % 2}"
        out = [run_event(self.start, "START", rid(self.n), job, [dataset(d) for d in self.inputs])]
        if self.state is not None:
            out.append(run_event(self.end, self.state, rid(self.n), job, [],
                                 [dataset(d) for d in self.outputs]))
        return out


@dataclass
class Reference:
    """What the store must hold for these runs, computed the simple way."""

    versions: set[tuple[str, int, str]] = field(default_factory=set)   # (dataset, number, producer runId | "")
    edges: set[tuple[str, int, str, str, int]] = field(default_factory=set)  # (in, n, runId, out, n)
    states: dict[str, str] = field(default_factory=dict)


def reference(runs: list[PlannedRun]) -> Reference:
    done = [r for r in runs if r.state == "COMPLETE"]
    produced: dict[str, list[PlannedRun]] = {}
    for r in sorted(done, key=lambda r: (r.end, rid(r.n))):
        for d in r.outputs:
            produced.setdefault(d, []).append(r)

    def read(r: PlannedRun, d: str) -> PlannedRun | None:
        before = [p for p in produced.get(d, []) if p.end < r.start]
        return before[-1] if before else None

    initial = {d for r in runs for d in r.inputs if read(r, d) is None}

    def number(d: str, p: PlannedRun | None) -> int:
        first = 1 if d in initial else 0
        return first if p is None else first + 1 + produced[d].index(p)

    ref = Reference()
    for d in initial:
        ref.versions.add((d, 1, ""))
    for d, ps in produced.items():
        for p in ps:
            ref.versions.add((d, number(d, p), rid(p.n)))
    for r in done:
        for i in r.inputs:
            for o in r.outputs:
                ref.edges.add((i, number(i, read(r, i)), rid(r.n), o, number(o, r)))
    for r in runs:
        ref.states[rid(r.n)] = r.state or "START"
    return ref


# ---------------------------------------------------------------------------- reading a store
def table(store: Store, name: str) -> list[dict]:
    return store.local().arrow(name).to_pylist()


def attrs(store: Store) -> dict[str, dict]:
    return {v["id"]: dict(v["attrs"] or []) for v in table(store, "vertices")}


def contents(store: Store) -> dict[str, set]:
    """Every core table as a set of rows (attrs maps as sorted tuples): the store's state."""
    def row(r: dict) -> tuple:
        return tuple(sorted((k, tuple(sorted(v)) if isinstance(v, list) else v) for k, v in r.items()))

    return {name: {row(r) for r in table(store, name)}
            for name in ("elements", "parents", "ancestors", "vertices", "complex", "edges")}


def observed(store: Store):
    """(versions, dataset edges, run states) as the reference states them."""
    a = attrs(store)
    edges = table(store, "edges")
    versions = {(a[v]["name"], int(a[v]["version"]), a[v].get("producedBy", "")) for v in a if "version" in a[v]}
    dataset_edges = {(a[e["src"]]["name"], int(a[e["src"]]["version"]), a[e["process"]]["runId"],
                      a[e["dst"]]["name"], int(a[e["dst"]]["version"]))
                     for e in edges if "runId" in a[e["process"]]}
    states = {x["runId"]: x["state"] for x in a.values() if "state" in x}
    return versions, dataset_edges, states


def split_into(events: list, cuts) -> list[list]:
    """`events` cut at the positions `cuts` (sorted), empty pieces left out: a split into ingests."""
    return [events[i:j] for i, j in zip([0, *cuts], [*cuts, len(events)], strict=True) if events[i:j]]


def write(folder: Path, name: str, events: list[dict], jsonl: bool) -> Path:
    p = folder / (name + (".jsonl" if jsonl else ".json"))
    p.write_text("\n".join(json.dumps(e) for e in events) if jsonl else json.dumps(events))
    return p


def pipeline_events() -> list[dict]:
    """extract (raw -> stg, column lineage), a second extract, and a report over stg."""
    lineage = {"amount": {"inputFields": [
        {"namespace": NS, "name": "raw", "field": "amount",
         "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}]},
        {"namespace": NS, "name": "raw", "field": "status",
         "transformations": [{"type": "INDIRECT", "subtype": "FILTER"}]}]}}
    report = {"total": {"inputFields": [{"namespace": NS, "name": "stg", "field": "amount",
                                         "transformations": [{"type": "DIRECT", "subtype": "AGGREGATION"}]}]},
              "customer.id": {"inputFields": [{"namespace": NS, "name": "stg", "field": "customer.id"}]}}
    return [
        run_event(0, "START", rid(1), "extract", [dataset("raw", ["amount", "status"])]),
        run_event(1, "RUNNING", rid(1), "extract"),
        run_event(5, "COMPLETE", rid(1), "extract", [], [dataset("stg", ["amount"], lineage)]),
        run_event(60, "START", rid(2), "report", [dataset("stg")], parent=(rid(9), "daily")),
        run_event(65, "COMPLETE", rid(2), "report", [], [dataset("mart", ["total"], report)]),
        run_event(30, "START", rid(3), "extract", [dataset("raw")]),
        run_event(35, "COMPLETE", rid(3), "extract", [], [dataset("stg")]),
        run_event(70, "START", rid(4), "extract", [dataset("raw")]),
        run_event(71, "FAIL", rid(4), "extract", [], [dataset("stg")]),
    ]


