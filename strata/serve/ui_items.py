"""The web UI's view of a store's own items (docs/ui.md): the elements and vertices that triples,
bundles, PROV documents or any ingest made, found by id prefix and drawn in the same graph shape
as the dataset level (strata/serve/ui_model.py): nodes with kind, distance and neighbour counts,
edges, and per node and direction the neighbours left out past `limit` (`more`).

An item is `element:<id>`. The process between an item and the items it derives from is
`process:["<op>","<id>"]`: the derivation of that item by that process (a triple's op), with
every source the item has through it; an item derived by two processes has two. A consumer of an
item is reached through the process that derived it: `element:a` -> `process:["op","b"]` ->
`element:b`. Depth counts processes, as the dataset level counts jobs: depth 1 is an item's
processes and their sources upstream, the processes deriving from it and their outputs downstream.

Every read is a few point reads of the component index (store/neighbours.py), so a view costs the
same on a store of 40 million items as on one of forty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from store.neighbours import Located, Neighbours, Triple

ELEMENT = "element:"
PROCESS = "process:"


def element_id(item: str) -> str:
    return ELEMENT + item


def process_id(op: str, dst: str) -> str:
    return PROCESS + json.dumps([op, dst], ensure_ascii=False, separators=(",", ":"))


def is_item_node(node: str) -> bool:
    return node.startswith((ELEMENT, PROCESS))


def parse(node: str) -> tuple[str, str, str] | None:
    """("element", id, "") or ("process", op, dst); None when malformed."""
    if node.startswith(ELEMENT) and len(node) > len(ELEMENT):
        return ("element", node[len(ELEMENT):], "")
    if node.startswith(PROCESS):
        try:
            op, dst = json.loads(node[len(PROCESS):])
        except (ValueError, TypeError):
            return None
        if isinstance(op, str) and isinstance(dst, str):
            return ("process", op, dst)
    return None


@dataclass
class ItemView:
    """One version's items for the page. Holds no state beyond the store's reader: every view
    is read from the index when asked (the reads are point reads)."""

    reads: Neighbours

    @classmethod
    def of(cls, snap: Any) -> ItemView:
        view = getattr(snap, "items", None)
        if view is None:
            view = snap.items = cls(Neighbours(snap.store))
        return view

    # --------------------------------------------------------------- search
    def search(self, q: str, limit: int) -> tuple[int, list[dict[str, Any]]]:
        """Items whose id starts with `q` (case-sensitive, as ids are), in id order."""
        total, found = self.reads.search(q.strip(), limit)
        return total, [{"id": element_id(x.item), "kind": "element", "name": x.item, "namespace": x.table or "",
                        "table": x.table} for x in found]

    # ---------------------------------------------------------------- graph
    def locate(self, node: str) -> tuple[tuple[str, str, str], Located] | None:
        """The parsed node and where its item (a process's output) is; None when unknown."""
        key = parse(node)
        if key is None:
            return None
        where = self.reads.locate(key[1] if key[0] == "element" else key[2])
        if where is None:
            return None
        if key[0] == "process" and not any(t[2] == key[1] for t, _ in self.reads.direct([where], False)[where.item]):
            return None
        return key, where

    def graph(self, node: str, depth: int, direction: str, limit: int, offset: int) -> dict[str, Any] | None:
        """The neighbourhood of an item or process within `depth` processes, upstream, downstream
        or both; None when `node` names nothing in the store."""
        found = self.locate(node)
        if found is None:
            return None
        key, where = found
        start = element_id(key[1]) if key[0] == "element" else process_id(key[1], key[2])
        back: dict[str, list[tuple[Triple, Located]]] = {}
        fwd: dict[str, list[tuple[Triple, Located]]] = {}
        places: dict[str, Located] = {where.item: where}

        def read(items: list[str], forward: bool, last: bool = False) -> None:
            """Read the items' sources (consumers when forward); the `last` read (the sources of
            every drawn item: their counts and edges) need not know where they lie: nothing is
            read from them after."""
            held = fwd if forward else back
            todo = [places[i] for i in dict.fromkeys(items) if i not in held]
            for item, rows in self.reads.direct(todo, forward, where=not last).items():
                held[item] = rows
                if not last:
                    for _, other in rows:
                        places.setdefault(other.item, other)

        def near(nid: str, way: str) -> list[tuple[str, str] | str]:
            """The neighbours of a node on one side, in order: processes as (op, item), items as
            their id (the page's ids are made only for the neighbours drawn)."""
            kind, a, b = parse(nid)
            if kind == "element":
                if way == "up":
                    return [(op, a) for op in dict.fromkeys(t[2] for t, _ in back[a])]
                return list(dict.fromkeys((t[2], t[1]) for t, _ in fwd[a]))
            if way == "up":
                return [t[0] for t, _ in back[b] if t[2] == a]
            return [b]

        def count(nid: str, way: str) -> int:
            """len(near(nid, way)), without making the ids (an item may have thousands)."""
            kind, a, b = parse(nid)
            if kind == "element":
                if way == "up":
                    return len({t[2] for t, _ in back[a]})
                return len({(t[2], t[1]) for t, _ in fwd[a]}) if a in fwd else consumers[a]
            return sum(1 for t, _ in back[b] if t[2] == a) if way == "up" else 1

        nodes: dict[str, int] = {start: 0}
        more: list[dict[str, Any]] = []
        for way in (("up", "down") if direction == "both" else (direction,)):
            seen = {start: 1 if key[0] == "process" else 0}
            frontier = [start]
            while frontier:
                items = [parse(n) for n in frontier]
                if way == "up":
                    read([k[1] if k[0] == "element" else k[2] for k in items], False)
                else:
                    read([k[1] for k in items if k[0] == "element"], True)
                nxt = []
                for nid in frontier:
                    around = near(nid, way)
                    first = offset if nid == start else 0
                    if len(around) > first + limit:
                        more.append({"node": nid, "direction": way, "count": len(around) - first - limit,
                                     "offset": first + limit})
                    for m in around[first:first + limit]:
                        process = isinstance(m, tuple)
                        m = process_id(*m) if process else element_id(m)
                        step = seen[nid] + (1 if process else 0)
                        if m in seen or step > depth:
                            continue
                        seen[m] = step
                        nodes.setdefault(m, step)
                        if process or step < depth:
                            nxt.append(m)
                frontier = nxt
        # every drawn item's sources and consumers: its counts, and the edges among drawn nodes
        drawn = [parse(n)[1] for n in nodes if n.startswith(ELEMENT)]
        read(drawn + [parse(n)[2] for n in nodes if n.startswith(PROCESS)], False, last=True)
        consumers = self.reads.consumer_counts([places[i] for i in dict.fromkeys(drawn) if i not in fwd])
        out_nodes, edges = [], {}

        def edge(src: str, dst: str, op: str) -> None:
            edges[(src, dst)] = {"id": f"{src}->{dst}", "source": src, "target": dst, "kind": "io", "label": op}

        for nid, distance in nodes.items():
            kind, a, b = parse(nid)
            n: dict[str, Any] = {"id": nid, "kind": kind, "distance": distance, "start": nid == start}
            if kind == "element":
                place = places.get(a)
                n.update(name=a, label=a, table=place.table if place else None, namespace=(place.table or "") if place
                         else "", up=count(nid, "up"), down=count(nid, "down"))
            else:  # (an item's edges to and from processes are all made here: every drawn process's output is drawn)
                n.update(name=a, label=a, output=b, namespace="", up=count(nid, "up"), down=1)
                if element_id(b) in nodes:
                    edge(nid, element_id(b), a)
                for t, _ in back.get(b, ()):
                    if t[2] == a and element_id(t[0]) in nodes:
                        edge(element_id(t[0]), nid, a)
            out_nodes.append(n)
        return {"level": "item", "start": start, "nodes": out_nodes, "edges": list(edges.values()), "more": more}

    # -------------------------------------------------------------- details
    def details(self, node: str) -> dict[str, Any] | None:
        """An item's table, component and set, and its direct sources and consumers (the first 50
        of each); a process's output and its sources."""
        found = self.locate(node)
        if found is None:
            return None
        key, where = found
        sources = self.reads.direct([where], False)[where.item]
        if key[0] == "process":
            ins = [t[0] for t, _ in sources if t[2] == key[1]]
            return {"kind": "process", "id": node, "process": key[1], "output": key[2], "sourceCount": len(ins),
                    "sources": ins[:50]}
        consumers = self.reads.direct([where], True)[where.item]
        return {"kind": "element", "id": node, "item": where.item, "table": where.table,
                "component": where.ccid or None, "set": where.csid or None, "indexed": self.reads.indexed,
                "sourceCount": len(sources), "consumerCount": len(consumers),
                "sources": [{"item": t[0], "process": t[2]} for t, _ in sources[:50]],
                "consumers": [{"item": t[1], "process": t[2]} for t, _ in consumers[:50]]}
