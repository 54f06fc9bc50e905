"""What Marquez's read endpoints show, computed from the OpenLineage events of one store version.

Pure: `MarquezView.build(bodies)` takes the stored events (JSON bodies) and gives namespaces,
datasets (fields, facets, versions), jobs (inputs, outputs, runs), runs (facets, states, times)
and the job/dataset graph, in Marquez's JSON shapes (MarquezProject/marquez api/openapi.yml):
node ids `dataset:<namespace>:<name>` and `job:<namespace>:<name>`, edges `{origin, destination}`.
Built once per store version and kept (strata/serve/service.py), so a read is a dict lookup and a
breadth-first walk.
"""

from __future__ import annotations

import bisect
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from store.interop.openlineage import TERMINAL, canonical, event_kind, parse_time

DEFAULT_DEPTH = 20  # Marquez's default lineage depth


def node_id(kind: str, namespace: str, name: str) -> str:
    return f"{kind}:{namespace}:{name}"


def parse_node_id(text: str, exists: Callable[[tuple[str, str, str]], bool] | None = None
                  ) -> tuple[str, str, str] | None:
    """`dataset:ns:name` / `job:ns:name` -> (kind, namespace, name); the name may hold ':'.
    A `datasetField:ns:name:field` id names its dataset. None when malformed.

    A namespace may hold ':' too (dbt-ol's `duckdb:///path/warehouse.duckdb`, `postgres://host:5432`):
    given `exists`, the first split at a ':' that names a known node wins; else the first ':'."""
    kind, _, rest = text.partition(":")
    if kind == "datasetField":
        rest = rest.rpartition(":")[0]
        kind = "dataset"
    if kind not in ("dataset", "job"):
        return None
    splits = [(rest[:i], rest[i + 1:]) for i, c in enumerate(rest) if c == ":" and 0 < i < len(rest) - 1]
    if not splits:
        return None
    for ns, name in splits if exists is not None else ():
        if exists((kind, ns, name)):
            return kind, ns, name
    return kind, *splits[0]


@dataclass
class _Dataset:
    namespace: str
    name: str
    created: str
    updated: str
    fields: list[dict[str, Any]] = field(default_factory=list)
    facets: dict[str, Any] = field(default_factory=dict)
    versions: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self, current: bool = True) -> dict[str, Any]:
        last = self.versions[-1]["version"] if self.versions else None
        return {
            "id": {"namespace": self.namespace, "name": self.name},
            "type": "DB_TABLE", "name": self.name, "physicalName": self.name,
            "createdAt": self.created, "updatedAt": self.updated, "namespace": self.namespace,
            "sourceName": self.namespace, "fields": self.fields, "tags": [], "lastModifiedAt": self.updated,
            "lastLifecycleState": None, "description": (self.facets.get("documentation") or {}).get("description"),
            "currentVersion": last, "columnLineage": None, "facets": self.facets, "deleted": False,
        }


@dataclass
class _Job:
    namespace: str
    name: str
    created: str
    updated: str
    inputs: set[tuple[str, str]] = field(default_factory=set)
    outputs: set[tuple[str, str]] = field(default_factory=set)
    facets: dict[str, Any] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)  # runIds, oldest first
    parent: str | None = None


@dataclass
class _Run:
    run_id: str
    job: tuple[str, str]
    created: str
    updated: str
    state: str = "NEW"
    started: str | None = None
    ended: str | None = None
    facets: dict[str, Any] = field(default_factory=dict)
    inputs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    outputs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


_STATES = {"START": "RUNNING", "RUNNING": "RUNNING", "COMPLETE": "COMPLETED", "FAIL": "FAILED", "ABORT": "ABORTED"}


def _merge_fields(target: list[dict[str, Any]], schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not schema or not isinstance(schema.get("fields"), list):
        return target
    return [{"name": f.get("name"), "type": f.get("type"), "tags": [], "description": f.get("description")}
            for f in schema["fields"] if isinstance(f, dict)]


class MarquezView:
    """Namespaces, datasets, jobs, runs and the lineage graph of a set of events."""

    def __init__(self) -> None:
        self.namespaces: dict[str, dict[str, str]] = {}
        self.datasets: dict[tuple[str, str], _Dataset] = {}
        self.jobs: dict[tuple[str, str], _Job] = {}
        self.runs: dict[str, _Run] = {}
        self._events: list[dict[str, Any]] = []  # oldest first (events_page lists them newest first)
        self._last: tuple[Any, str] | None = None  # the sort key of the last event added
        self.producers: dict[tuple[str, str], list[tuple[str, str, str]]] = {}  # dataset -> job nodes
        # (namespace, dataset, field) -> its column lineage facet entry, from the newest event
        self.columns: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.column_users: dict[tuple[str, str, str], set[tuple[str, str, str]]] = {}  # input -> outputs
        self.consumers: dict[tuple[str, str], list[tuple[str, str, str]]] = {}

    @classmethod
    def build(cls, bodies: list[dict[str, Any]]) -> MarquezView:
        view = cls()
        view.extend(bodies)
        return view

    def extend(self, bodies: list[dict[str, Any]]) -> bool:
        """Add events that all come after those already here (by time, then canonical JSON: the
        order `build` adds them in), so the view equals one built from all of them; False, and
        nothing added, when one does not (the caller builds a new view)."""
        ordered = sorted(((parse_time(b["eventTime"]), canonical(b), b) for b in bodies), key=lambda r: r[:2])
        if ordered and self._last is not None and ordered[0][:2] <= self._last:
            return False
        for _, _, body in ordered:
            self._add(body)
            self._events.append(body)
        if ordered:
            self._last = ordered[-1][:2]
        return True

    @property
    def events_count(self) -> int:
        return len(self._events)

    def events_page(self, limit: int, offset: int) -> list[dict[str, Any]]:
        """The events newest first, as Marquez lists them: `limit` of them after `offset`."""
        n = len(self._events)
        return [self._events[n - 1 - i] for i in range(offset, min(n, offset + limit))]

    def _link(self, job: tuple[str, str], side: dict[tuple[str, str], list[tuple[str, str, str]]],
              dataset: tuple[str, str]) -> None:
        nodes = side.setdefault(dataset, [])  # kept sorted: a binary search, not a scan and a sort
        node = ("job", *job)
        at = bisect.bisect_left(nodes, node)
        if at == len(nodes) or nodes[at] != node:
            nodes.insert(at, node)

    def _namespace(self, ns: str, when: str) -> None:
        entry = self.namespaces.setdefault(ns, {"name": ns, "createdAt": when, "updatedAt": when})
        entry["updatedAt"] = when

    def _entity(self, table: dict, cls: type, ref: dict[str, Any], when: str) -> Any:
        """The dataset or job `ref` names (created at its first event), updated at `when`."""
        key = (ref["namespace"], ref["name"])
        self._namespace(key[0], when)
        entity = table.get(key)
        if entity is None:
            entity = table[key] = cls(key[0], key[1], when, when)
        entity.updated = when
        return entity

    def _dataset(self, ds: dict[str, Any], when: str) -> _Dataset:
        d = self._entity(self.datasets, _Dataset, ds, when)
        key = (d.namespace, d.name)
        facets = ds.get("facets") or {}
        d.facets.update(facets)
        d.fields = _merge_fields(d.fields, facets.get("schema"))
        lineage = (facets.get("columnLineage") or {}).get("fields")
        if isinstance(lineage, dict):
            for name, entry in lineage.items():
                if isinstance(entry, dict):
                    self._column((key[0], key[1], name), entry)
        return d

    def _column(self, out: tuple[str, str, str], entry: dict[str, Any]) -> None:
        for f in (self.columns.get(out) or {}).get("inputFields") or ():  # the entry it replaces
            self.column_users.get((f["namespace"], f["name"], f["field"]), set()).discard(out)
        self.columns[out] = entry
        for f in entry.get("inputFields") or ():
            self.column_users.setdefault((f["namespace"], f["name"], f["field"]), set()).add(out)

    def _job(self, job: dict[str, Any], when: str) -> _Job:
        j = self._entity(self.jobs, _Job, job, when)
        j.facets.update(job.get("facets") or {})
        return j

    def _add(self, body: dict[str, Any]) -> None:
        when = body["eventTime"]
        kind = event_kind(body)
        if kind == "DatasetEvent":
            self._dataset(body["dataset"], when)
            return
        j = self._job(body["job"], when)
        ins = [self._dataset(ds, when) for ds in body.get("inputs") or ()]
        outs = [self._dataset(ds, when) for ds in body.get("outputs") or ()]
        for d in ins:
            if (d.namespace, d.name) not in j.inputs:
                j.inputs.add((d.namespace, d.name))
                self._link((j.namespace, j.name), self.consumers, (d.namespace, d.name))
        for d in outs:
            if (d.namespace, d.name) not in j.outputs:
                j.outputs.add((d.namespace, d.name))
                self._link((j.namespace, j.name), self.producers, (d.namespace, d.name))
        if kind != "RunEvent":
            return
        rid = body["run"]["runId"]
        r = self.runs.get(rid)
        if r is None:
            r = self.runs[rid] = _Run(rid, (j.namespace, j.name), when, when)
            j.runs.append(rid)
        r.updated = when
        r.facets.update(body["run"].get("facets") or {})
        parent = r.facets.get("parent")
        if isinstance(parent, dict) and isinstance(parent.get("job"), dict):
            j.parent = parent["job"].get("name")
        etype = body.get("eventType", "OTHER")
        if etype in ("START", "RUNNING") and r.started is None:
            r.started = when
        if etype in _STATES and (r.state not in ("COMPLETED", "FAILED", "ABORTED") or etype in TERMINAL):
            r.state = _STATES[etype]
        if etype in TERMINAL:
            r.ended = when
        for side, target in (("inputs", r.inputs), ("outputs", r.outputs)):
            for ds in body.get(side) or ():
                target.setdefault((ds["namespace"], ds["name"]), {}).update(ds.get("facets") or {})
        if etype == "COMPLETE":
            for ds in body.get("outputs") or ():
                d = self.datasets[(ds["namespace"], ds["name"])]
                version = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{d.namespace}:{d.name}@{rid}"))
                if not any(v["version"] == version for v in d.versions):
                    d.versions.append({"version": version, "createdAt": when, "runId": rid})

    # ---------------------------------------------------------------- shapes
    def run_json(self, rid: str) -> dict[str, Any]:
        r = self.runs[rid]
        duration = None
        if r.started and r.ended:
            duration = int((parse_time(r.ended) - parse_time(r.started)).total_seconds() * 1000)
        nominal = r.facets.get("nominalTime") or {}

        def versions(side: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
            return [{"datasetVersionId": {"namespace": ns, "name": name,
                                          "version": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{ns}:{name}@{rid}"))},
                     "facets": facets} for (ns, name), facets in sorted(side.items())]

        return {
            "id": rid, "createdAt": r.created, "updatedAt": r.updated,
            "nominalStartTime": nominal.get("nominalStartTime"), "nominalEndTime": nominal.get("nominalEndTime"),
            "state": r.state, "startedAt": r.started, "endedAt": r.ended, "durationMs": duration, "args": {},
            "jobVersion": {"namespace": r.job[0], "name": r.job[1], "version": None},
            "inputDatasetVersions": versions(r.inputs), "outputDatasetVersions": versions(r.outputs),
            "context": {}, "facets": r.facets,
        }

    def job_json(self, key: tuple[str, str]) -> dict[str, Any]:
        j = self.jobs[key]
        latest = self.run_json(j.runs[-1]) if j.runs else None
        return {
            "id": {"namespace": j.namespace, "name": j.name}, "type": "BATCH", "name": j.name,
            "simpleName": j.name.rsplit(".", 1)[-1], "parentJobName": j.parent,
            "createdAt": j.created, "updatedAt": j.updated, "namespace": j.namespace,
            "inputs": [{"namespace": ns, "name": n} for ns, n in sorted(j.inputs)],
            "outputs": [{"namespace": ns, "name": n} for ns, n in sorted(j.outputs)],
            "location": (j.facets.get("sourceCodeLocation") or {}).get("url"),
            "description": (j.facets.get("documentation") or {}).get("description"),
            "latestRun": latest, "latestRuns": [latest] if latest else [], "facets": j.facets,
            "currentVersion": None, "tags": [],
        }

    def dataset_json(self, key: tuple[str, str]) -> dict[str, Any]:
        return self.datasets[key].to_json()

    def dataset_versions_json(self, key: tuple[str, str]) -> list[dict[str, Any]]:
        d = self.datasets[key]
        out = []
        for v in reversed(d.versions):
            out.append({**d.to_json(), "version": v["version"], "createdAt": v["createdAt"],
                        "createdByRun": self.run_json(v["runId"]) if v["runId"] in self.runs else None})
        return out

    # ---------------------------------------------------------------- lineage
    def neighbours(self, node: tuple[str, str, str]) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """(upstream, downstream) nodes of a node: a dataset's producing and reading jobs, a
        job's inputs and outputs."""
        kind, ns, name = node
        if kind == "job":
            j = self.jobs[(ns, name)]
            return ([("dataset", *k) for k in sorted(j.inputs)], [("dataset", *k) for k in sorted(j.outputs)])
        return self.producers.get((ns, name), []), self.consumers.get((ns, name), [])

    def exists(self, node: tuple[str, str, str]) -> bool:
        kind, ns, name = node
        return (ns, name) in (self.jobs if kind == "job" else self.datasets)

    def lineage(self, start: tuple[str, str, str], depth: int = DEFAULT_DEPTH) -> dict[str, Any]:
        """Marquez's lineage graph around `start`: every node within `depth` jobs of it, up- and
        downstream (Marquez counts jobs: a dataset's producer and its producer's inputs are one
        step), each with its in- and out-edges among the nodes returned."""
        seen = {start: 0}
        todo = deque([start])
        while todo:
            node = todo.popleft()
            level = seen[node]
            up, down = self.neighbours(node)
            for nxt in up + down:
                step = level + (1 if nxt[0] == "job" else 0)
                if nxt not in seen and step <= depth:
                    seen[nxt] = step
                    todo.append(nxt)
        graph = []
        for node in sorted(seen):
            up, down = self.neighbours(node)
            nid = node_id(*node)
            kind, ns, name = node
            data = self.job_json((ns, name)) if kind == "job" else self.dataset_json((ns, name))
            graph.append({
                "id": nid, "type": kind.upper(), "data": data,
                "inEdges": [{"origin": node_id(*u), "destination": nid} for u in up if u in seen],
                "outEdges": [{"origin": nid, "destination": node_id(*d)} for d in down if d in seen],
            })
        return {"graph": graph}

    def column_lineage(self, start: tuple[str, str, str], depth: int = DEFAULT_DEPTH,
                       downstream: bool = False) -> dict[str, Any]:
        """Marquez's column lineage graph: the fields of dataset `start` (or the one field a
        `datasetField:` node id names, `start` then being ("datasetField", ns, "name:field"))
        and the fields they were derived from within `depth` steps (and, with `downstream`,
        the fields derived from them)."""
        kind, ns, name = start
        if kind == "datasetField":
            name, _, fld = name.rpartition(":")
            seeds = [(ns, name, fld)]
        else:
            known = {f["name"] for f in self.datasets[(ns, name)].fields}
            known |= {c[2] for c in self.columns if c[:2] == (ns, name)}
            seeds = [(ns, name, f) for f in sorted(known)]

        def up(f: tuple[str, str, str]) -> list[tuple[str, str, str]]:
            entry = self.columns.get(f) or {}
            return [(i["namespace"], i["name"], i["field"]) for i in entry.get("inputFields") or ()]

        def down(f: tuple[str, str, str]) -> list[tuple[str, str, str]]:
            return sorted(self.column_users.get(f, ()))

        seen = dict.fromkeys(seeds, 0)
        for step in ((up, down) if downstream else (up,)):
            todo = deque(seeds)
            level = dict.fromkeys(seeds, 0)
            while todo:
                f = todo.popleft()
                for g in step(f):
                    if g not in level and level[f] < depth:
                        level[g] = level[f] + 1
                        seen.setdefault(g, level[g])
                        todo.append(g)

        def fid(f: tuple[str, str, str]) -> str:
            return f"datasetField:{f[0]}:{f[1]}:{f[2]}"

        graph = []
        for f in sorted(seen):
            entry = self.columns.get(f) or {}
            inputs = []
            for i in entry.get("inputFields") or ():
                t = (i.get("transformations") or [{}])[0]
                inputs.append({"namespace": i["namespace"], "dataset": i["name"], "field": i["field"],
                               "transformationDescription": t.get("description"),
                               "transformationType": t.get("type")})
            types = {fl["name"]: fl.get("type") for fl in self.datasets[f[:2]].fields} if f[:2] in self.datasets else {}
            graph.append({
                "id": fid(f), "type": "DATASET_FIELD",
                "data": {"namespace": f[0], "dataset": f[1], "field": f[2], "fieldType": types.get(f[2]),
                         "transformationDescription": entry.get("transformationDescription"),
                         "transformationType": entry.get("transformationType"), "inputFields": inputs},
                "inEdges": [{"origin": fid(g), "destination": fid(f)} for g in up(f) if g in seen],
                "outEdges": [{"origin": fid(f), "destination": fid(g)} for g in down(f) if g in seen],
            })
        return {"graph": graph}

    def search(self, q: str, kind: str | None) -> list[dict[str, Any]]:
        """Datasets and jobs whose name contains `q` (case-insensitive), newest first."""
        needle = q.lower()
        out = []
        if kind in (None, "DATASET"):
            out += [{"type": "DATASET", "name": d.name, "updatedAt": d.updated, "namespace": d.namespace,
                     "nodeId": node_id("dataset", d.namespace, d.name)}
                    for d in self.datasets.values() if needle in d.name.lower()]
        if kind in (None, "JOB"):
            out += [{"type": "JOB", "name": j.name, "updatedAt": j.updated, "namespace": j.namespace,
                     "nodeId": node_id("job", j.namespace, j.name)}
                    for j in self.jobs.values() if needle in j.name.lower()]
        return sorted(out, key=lambda r: (r["updatedAt"], r["nodeId"]), reverse=True)
