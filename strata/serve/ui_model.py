"""What the lineage web UI reads (docs/ui.md): one version's OpenLineage events and its captured
runs (as the RunEvents `strata export openlineage` makes of them) in one `MarquezView`, and the
shapes the page draws from it: search hits, a neighbourhood graph at dataset or column level,
a node's details, a captured run's output items.

Node ids are Marquez's (`dataset:<ns>:<name>`, `job:<ns>:<name>`, `datasetField:<ns>:<name>:<field>`)
plus `run:<runId>`. A graph is `{"nodes", "edges", "more"}`: nodes with their kind and their
parent (a field's dataset, a run's job), edges with their kind, and per node and direction the
neighbours left out past `limit` (`{"node", "direction", "count", "offset"}`: the page draws
them as "+N more" and asks for the next page with `offset`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from capture.storing.tables import RUNS
from capture.storing.to_openlineage import captured_events
from strata.serve.marquez_model import MarquezView, node_id, parse_node_id
from strata.serve.service import Snapshot, event_segments, read_events

RUNS_SHOWN = 3  # a job's newest runs drawn inside it
Key = tuple[str, str, str]  # (kind, namespace, name)


@dataclass
class UiView:
    """One version's lineage for the page: the Marquez view of its events and captured runs, and
    which captured run (its store id) wrote which dataset."""

    view: MarquezView
    captured: dict[str, str]  # runId -> captured run id
    writers: dict[tuple[str, str], list[str]]  # dataset -> captured run ids that wrote it
    shared: bool = False  # the view is the service's Marquez view of the version

    @classmethod
    def of(cls, snap: Snapshot, service: Any) -> UiView:
        """The view of a snapshot, built on first use and kept with it. A store without captured
        runs uses the service's Marquez view of the version (`Service.marquez`: extended, not
        rebuilt, as versions follow each other); one with captured runs, a view of its events and
        the captured runs' events together."""
        ui = getattr(snap, "ui", None)
        if ui is not None and (not ui.shared or ui.view is snap.marquez):
            return ui  # (a shared view extended for a later version was taken from this one)
        if not snap.store.has_table(RUNS):
            ui = snap.ui = cls(service.marquez(snap), {}, {}, shared=True)
            return ui
        bodies = read_events(snap.store, event_segments(snap.store))
        captured: dict[str, str] = {}
        writers: dict[tuple[str, str], list[str]] = {}
        for run, events in captured_events(snap.store).items():
            for e in events:
                captured[e["run"]["runId"]] = run
                for o in e.get("outputs") or ():
                    if run not in writers.setdefault((o["namespace"], o["name"]), []):
                        writers[(o["namespace"], o["name"])].append(run)
            bodies += events
        bodies.sort(key=lambda b: str(b.get("eventTime", "")))
        ui = snap.ui = cls(MarquezView.build(bodies), captured, writers)
        return ui

    # ------------------------------------------------------------------ ids
    def key(self, nid: str) -> Key | None:
        """A node id as (kind, ns, name); a field as ("datasetField", ns, "name\\0field"); a run as
        ("run", "", runId). None when it names nothing known."""
        if nid.startswith("run:"):
            rid = nid[4:]
            return ("run", "", rid) if rid in self.view.runs else None
        node = parse_node_id(nid, self.view.exists)
        if node is None or not self.view.exists(node):
            return None
        if nid.startswith("datasetField:"):
            prefix = f"datasetField:{node[1]}:{node[2]}:"
            return ("datasetField", node[1], f"{node[2]}\0{nid[len(prefix):]}") if nid.startswith(prefix) else None
        return node

    # --------------------------------------------------------------- search
    def search(self, q: str, limit: int) -> tuple[int, list[dict[str, Any]]]:
        """Datasets, jobs, runs, fields and captured runs whose name (or id) contains `q`, the
        exact and prefix matches first; `ns:text` looks in namespace `ns` only."""
        v = self.view
        needle, ns_only = q.strip().lower(), None
        if ":" in needle:
            ns, _, rest = needle.rpartition(":")
            if any(n.lower() == ns for n in v.namespaces):
                ns_only, needle = ns, rest
        hits: list[tuple[int, str, dict[str, Any]]] = []

        def rank(name: str, ns: str) -> int | None:
            if ns_only is not None and ns.lower() != ns_only:
                return None
            low = name.lower()
            if low == needle:
                return 0
            if any(part.startswith(needle) for part in (low, low.rsplit("/", 1)[-1], low.rsplit(".", 1)[-1])):
                return 1
            return 2 if needle in low else None

        for (ns, name), d in v.datasets.items():
            r = rank(name, ns)
            if r is not None:
                hits.append((r, name, {"id": node_id("dataset", ns, name), "kind": "dataset", "name": name,
                                       "namespace": ns, "captured": bool(self.writers.get((ns, name)))}))
            for f in d.fields:
                r = rank(str(f.get("name")), ns)
                if r is not None:
                    hits.append((r + 1, f["name"], {"id": f"datasetField:{ns}:{name}:{f['name']}", "kind": "field",
                                                    "name": f["name"], "namespace": ns, "dataset": name}))
        for (ns, name) in v.jobs:
            r = rank(name, ns)
            if r is not None:
                hits.append((r, name, {"id": node_id("job", ns, name), "kind": "job", "name": name, "namespace": ns}))
        for rid, run in v.runs.items():
            label = self.captured.get(rid, rid)
            r = rank(label, run.job[0]) if label != rid else rank(rid, run.job[0])
            if r is not None:
                hits.append((r + 1, label, {"id": f"run:{rid}", "kind": "run", "name": label, "namespace": run.job[0],
                                            "job": run.job[1], "state": run.state,
                                            "captured": self.captured.get(rid)}))
        hits.sort(key=lambda h: (h[0], len(h[1]), h[1]))
        return len(hits), [h[2] for h in hits[:limit]]

    # ---------------------------------------------------------------- graph
    def _node(self, key: Key, distance: int, start: bool = False) -> dict[str, Any]:
        kind, ns, name = key
        v = self.view
        out: dict[str, Any] = {"kind": kind, "namespace": ns, "distance": distance, "start": start}
        if kind == "dataset":
            d = v.datasets[(ns, name)]
            out.update(id=node_id(kind, ns, name), label=name, name=name, fields=len(d.fields),
                       captured=self.writers.get((ns, name), []))
        elif kind == "job":
            j = v.jobs[(ns, name)]
            out.update(id=node_id(kind, ns, name), label=name, name=name, runs=len(j.runs),
                       state=v.runs[j.runs[-1]].state if j.runs else None)
        return out

    def _run_nodes(self, job: tuple[str, str]) -> list[dict[str, Any]]:
        j = self.view.jobs[job]
        out = []
        for rid in reversed(j.runs[-RUNS_SHOWN:]):
            r = self.view.runs[rid]
            out.append({"id": f"run:{rid}", "kind": "run", "parent": node_id("job", *job), "namespace": job[0],
                        "label": f"{r.state.lower()} {r.ended or r.updated}", "name": rid, "state": r.state,
                        "captured": self.captured.get(rid)})
        return out

    def dataset_graph(self, start: Key, depth: int, direction: str, limit: int, offset: int) -> dict[str, Any]:
        """The datasets and jobs within `depth` jobs of `start` (Marquez counts depth in jobs),
        upstream, downstream or both; a job's newest runs inside it."""
        v = self.view
        if start[0] == "run":
            start = ("job", *v.runs[start[2]].job)
        elif start[0] == "datasetField":
            start = ("dataset", start[1], start[2].split("\0")[0])
        ways = ("up", "down") if direction == "both" else (direction,)
        nodes: dict[Key, dict[str, Any]] = {start: self._node(start, 0, True)}
        more: list[dict[str, Any]] = []
        level = {start: 0}
        for way in ways:
            todo = deque([start])
            seen = {start: 0}
            while todo:
                node = todo.popleft()
                up, down = v.neighbours(node)
                near = up if way == "up" else down
                first = offset if node == start else 0
                page = near[first:first + limit]
                if len(near) > first + limit:
                    more.append({"node": node_id(*node), "direction": way, "count": len(near) - first - limit,
                                 "offset": first + limit})
                for nxt in page:
                    step = seen[node] + (1 if nxt[0] == "job" else 0)
                    if nxt in seen or step > depth:
                        continue
                    seen[nxt] = step
                    if nxt not in nodes:
                        level[nxt] = step
                        nodes[nxt] = self._node(nxt, step)
                    if nxt[0] == "job" or step < depth:
                        todo.append(nxt)
        edges = {}
        for key in nodes:
            _, down = v.neighbours(key)
            for d in down:
                if d in nodes:
                    src, dst = node_id(*key), node_id(*d)
                    edges[(src, dst)] = {"id": f"{src}->{dst}", "source": src, "target": dst, "kind": "io"}
        for key, n in nodes.items():  # how many neighbours it has: the page counts those not drawn
            up, down = v.neighbours(key)
            n["up"], n["down"] = len(up), len(down)
        out_nodes = list(nodes.values())
        for key in nodes:
            if key[0] == "job":
                out_nodes += self._run_nodes(key[1:])
        return {"level": "dataset", "start": node_id(*start), "nodes": out_nodes, "edges": list(edges.values()),
                "more": more}

    def _inputs(self, f: tuple[str, str, str]) -> list[tuple[tuple[str, str, str], str, str]]:
        """(input field, DIRECT|INDIRECT, subtype) of an output field, from its lineage facet."""
        out = []
        for i in (self.view.columns.get(f) or {}).get("inputFields") or ():
            t = (i.get("transformations") or [{}])[0]
            out.append(((i["namespace"], i["name"], i["field"]), t.get("type") or "DIRECT",
                        t.get("subtype") or t.get("description") or ""))
        return out

    def _indirect(self, ds: tuple[str, str]) -> list[tuple[tuple[str, str, str], str]]:
        """The dataset-level INDIRECT entries of a dataset's column lineage facet: the input fields
        that influence all of its fields (filters, joins, grouping keys)."""
        d = self.view.datasets.get(ds)
        entries = ((d.facets.get("columnLineage") or {}).get("dataset") or ()) if d else ()
        return [((e["namespace"], e["name"], e["field"]), (e.get("transformations") or [{}])[0].get("subtype") or "")
                for e in entries if isinstance(e, dict) and {"namespace", "name", "field"} <= e.keys()]

    def influenced(self) -> dict[tuple[str, str, str], list[tuple[tuple[str, str], str]]]:
        """input field -> the datasets it influences (INDIRECT, dataset-level) and how."""
        if getattr(self, "_influenced", None) is None:
            out: dict[tuple[str, str, str], list[tuple[tuple[str, str], str]]] = {}
            for ds in self.view.datasets:
                for g, sub in self._indirect(ds):
                    out.setdefault(g, []).append((ds, sub))
            self._influenced = out
        return self._influenced

    def column_graph(self, start: Key, depth: int, direction: str, limit: int, offset: int = 0) -> dict[str, Any]:
        """The fields of a dataset (or one field) and the fields they derive from (up) or that
        derive from them (down) within `depth` steps, inside their datasets; DIRECT edges field to
        field, INDIRECT ones (influencing) from an input field to the dataset it influences."""
        v = self.view
        if start[0] == "run":
            start = ("job", *v.runs[start[2]].job)
        if start[0] == "job":
            outs = sorted(v.jobs[start[1:]].outputs)
            start = ("dataset", *outs[0]) if outs else start
        if start[0] == "datasetField":
            ds, _, fld = start[2].partition("\0")
            seeds = [(start[1], ds, fld)]
        elif start[0] == "dataset":
            d = v.datasets[start[1:]]
            known = {f["name"] for f in d.fields} | {c[2] for c in v.columns if c[:2] == start[1:]}
            seeds = [(start[1], start[2], f) for f in sorted(known)]
        else:
            seeds = []
        fields: dict[tuple[str, str, str], int] = dict.fromkeys(seeds, 0)
        datasets: set[tuple[str, str]] = {s[:2] for s in seeds}
        if start[0] == "dataset":
            datasets.add(start[1:])
        edges: dict[tuple[str, str], dict[str, Any]] = {}
        more: list[dict[str, Any]] = []

        def fid(f: tuple[str, str, str]) -> str:
            return f"datasetField:{f[0]}:{f[1]}:{f[2]}"

        def edge(src: str, dst: str, kind: str, sub: str) -> None:
            edges[(src, dst)] = {"id": f"{src}->{dst}", "source": src, "target": dst, "kind": kind.lower(),
                                 "label": sub}

        ways = ("up", "down") if direction == "both" else (direction,)
        for way in ways:
            level = dict.fromkeys(seeds, 0)
            todo = deque(seeds)
            while todo:
                f = todo.popleft()
                if way == "up":
                    near = [(g, k, s, None) for g, k, s in self._inputs(f)]
                    near += [(g, "INDIRECT", s, None) for g, s in self._indirect(f[:2])]
                else:
                    near = [(o, k, s, None) for o in sorted(v.column_users.get(f, ())) for g, k, s in self._inputs(o)
                            if g == f]
                    near += [(("", "", ""), "INDIRECT", s, ds) for ds, s in self.influenced().get(f, ())]
                first = offset if level[f] == 0 else 0
                if len(near) > first + limit:
                    more.append({"node": fid(f), "direction": way, "count": len(near) - first - limit,
                                 "offset": first + limit})
                near = near[first:first + limit]
                for g, kind, sub, influenced in near:
                    if level[f] >= depth:
                        break
                    if influenced is not None:  # downstream: the dataset this field influences
                        datasets.add(influenced)
                        edge(fid(f), node_id("dataset", *influenced), kind, sub)
                        continue
                    if kind == "INDIRECT":
                        fields.setdefault(g, level[f] + 1)
                        datasets.add(g[:2])
                        edge(fid(g), node_id("dataset", *f[:2]), kind, sub)
                        continue
                    src, dst = (g, f) if way == "up" else (f, g)
                    edge(fid(src), fid(dst), kind, sub)
                    if g not in level:
                        level[g] = level[f] + 1
                        fields.setdefault(g, level[g])
                        datasets.add(g[:2])
                        todo.append(g)
        nodes = [{"id": node_id("dataset", *d), "kind": "dataset", "namespace": d[0], "name": d[1], "label": d[1],
                  "start": start == ("dataset", *d), "distance": 0, "captured": self.writers.get(d, [])}
                 for d in sorted(datasets)]
        types = {}
        for d in datasets:
            if d in v.datasets:
                types.update({(*d, f["name"]): f.get("type") for f in v.datasets[d].fields})
        nodes += [{"id": fid(f), "kind": "field", "parent": node_id("dataset", *f[:2]), "namespace": f[0],
                   "dataset": f[1], "name": f[2], "label": f[2], "type": types.get(f), "distance": n,
                   "start": start[0] == "datasetField" and fid(f) == fid(seeds[0])}
                  for f, n in sorted(fields.items())]
        return {"level": "column", "start": fid(seeds[0]) if start[0] == "datasetField" else node_id(*start),
                "nodes": nodes, "edges": list(edges.values()), "more": more}

    # -------------------------------------------------------------- details
    def details(self, key: Key) -> dict[str, Any]:
        """What the details panel shows of a node: the Marquez shape of a dataset (fields, facets,
        versions), job (latest runs), run or field, and the captured runs behind a dataset."""
        v = self.view
        kind, ns, name = key
        if kind == "run":
            run = v.run_json(name)
            return {"kind": "run", "id": f"run:{name}", "run": run, "captured": self.captured.get(name)}
        if kind == "job":
            j = v.jobs[(ns, name)]
            return {"kind": "job", "id": node_id(kind, ns, name), "job": v.job_json((ns, name)),
                    "runs": [v.run_json(r) for r in reversed(j.runs[-10:])], "runCount": len(j.runs)}
        if kind == "datasetField":
            ds, _, fld = name.partition("\0")
            d = v.datasets[(ns, ds)]
            f = next((f for f in d.fields if f.get("name") == fld), {"name": fld})
            return {"kind": "field", "id": f"datasetField:{ns}:{ds}:{fld}", "field": f, "dataset": ds,
                    "namespace": ns,
                    "inputs": [{"field": f"datasetField:{g[0]}:{g[1]}:{g[2]}", "type": k, "subtype": s}
                               for g, k, s in self._inputs((ns, ds, fld))],
                    "captured": self.writers.get((ns, ds), [])}
        return {"kind": "dataset", "id": node_id(kind, ns, name), "dataset": v.dataset_json((ns, name)),
                "versions": v.dataset_versions_json((ns, name))[:10], "captured": self.writers.get((ns, name), [])}
