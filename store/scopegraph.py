"""The Ibis predicates over the rows of a few influence scopes, on the driver (pure Python).

A bound IQL predicate needs only the scopes its bound vertices are in (store/index/scopes.py).
When those hold few rows, reading them with pyarrow and answering here costs milliseconds,
where the same answer as Spark joins (store/spark/semantics.py) costs a few dozen jobs. The two give
identical answers; tests compare them on random bundles (tests/store/test_scopegraph.py).

Definitions (Ibis Section 5, as in semantics.py): complex element e1 is under e2 when every
basic element of e2 contains (reflexively) some basic element of e1; vertex V1 is under V2 when
every complex element of V1 is under some complex element of V2; influences(k) is influences(1)
composed k times, expanded semi-naively from the bound side.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from store import schema as S
from store.index.scopes import REL_ANCESTOR, REL_COMPLEX, REL_EDGE


class ScopeGraph:
    """Containment and derivation edges of some scopes, indexed both ways."""

    def __init__(self, rows: Iterable[tuple]) -> None:
        self.ces: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        self.kind: dict[str, str] = {}
        self.elem_ces: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.below: dict[str, list[str]] = defaultdict(list)  # ancestor -> ids (reflexive)
        self.above: dict[str, list[str]] = defaultdict(list)  # id -> ancestors (reflexive)
        self.out: dict[str, set[str]] = defaultdict(set)
        self.inn: dict[str, set[str]] = defaultdict(set)
        self.edges: list[tuple[str, str, str]] = []  # (src, process, dst)
        for rel, a, b, c, d in rows:
            if rel == REL_COMPLEX:
                self.ces[a][b].add(c)
                self.kind[a] = d
                self.elem_ces[c].append((a, b))
            elif rel == REL_ANCESTOR:
                self.below[b].append(a)
                self.above[a].append(b)
            elif rel == REL_EDGE:
                self.out[a].add(b)
                self.inn[b].add(a)
                self.edges.append((a, c, b))
        self._down: dict[str, frozenset[str]] = {}
        self._up: dict[str, frozenset[str]] = {}

    def is_data(self, v: str) -> bool:
        return self.kind.get(v) == S.DATA

    def down(self, upper: str) -> frozenset[str]:
        """The vertices under `upper` (itself included)."""
        hit = self._down.get(upper)
        if hit is None:
            cover: dict[tuple[str, str, str], set[str]] = defaultdict(set)
            for e2, b2s in self.ces.get(upper, {}).items():
                for b2 in b2s:
                    for b1 in self.below.get(b2, ()):
                        for v1, e1 in self.elem_ces.get(b1, ()):
                            cover[(v1, e1, e2)].add(b2)
            under_ces: dict[str, set[str]] = defaultdict(set)
            for (v1, e1, e2), b2s in cover.items():
                if len(b2s) == len(self.ces[upper][e2]):
                    under_ces[v1].add(e1)
            hit = frozenset(v for v, es in under_ces.items() if len(es) == len(self.ces[v]))
            self._down[upper] = hit
        return hit

    def up(self, lower: str) -> frozenset[str]:
        """The vertices `lower` is under (itself included)."""
        hit = self._up.get(lower)
        if hit is None:
            cover: dict[tuple[str, str, str], set[str]] = defaultdict(set)
            for e1, b1s in self.ces.get(lower, {}).items():
                for b1 in b1s:
                    for b2 in self.above.get(b1, ()):
                        for v2, e2 in self.elem_ces.get(b2, ()):
                            cover[(v2, e2, e1)].add(b2)
            covered: dict[str, set[str]] = defaultdict(set)
            for (v2, e2, e1), b2s in cover.items():
                if len(b2s) == len(self.ces[v2][e2]):
                    covered[v2].add(e1)
            n = len(self.ces.get(lower, {}))
            hit = frozenset(v for v, es in covered.items() if len(es) == n)
            self._up[lower] = hit
        return hit

    def reach(self, origin: str, k: int | None, forward: bool) -> set[str]:
        """Data vertices x with origin influences(k) x (forward) or x influences(k) origin."""
        close = self.down if forward else self.up
        step = self.out if forward else self.inn
        reach = {x for x in close(origin) if self.is_data(x)}
        delta = set(reach)
        rounds = 0
        while delta and (k is None or rounds < k):
            rounds += 1
            found: set[str] = set()
            for x in delta:
                for y in step.get(x, ()):
                    found |= close(y)
            delta = found - reach
            reach |= delta
        return reach


def influences(g: ScopeGraph, starts: Iterable[str], k: int | None, forward: bool) -> list[tuple[str, str]]:
    """(src, dst) pairs of influences(k) from (forward) or to (backward) each start vertex."""
    out = []
    for o in starts:
        if not g.is_data(o):
            continue
        for x in g.reach(o, k, forward):
            out.append((o, x) if forward else (x, o))
    return out


def under(g: ScopeGraph, lower: Iterable[str] | None, upper: Iterable[str] | None) -> list[tuple[str, str]]:
    """(lower, upper) pairs with one side (or both) given."""
    if upper is not None:
        low = None if lower is None else set(lower)
        return [(v, u) for u in upper for v in g.down(u) if low is None or v in low]
    if lower is None:
        raise ValueError("under needs at least one bound side")
    return [(v, u) for v in lower for u in g.up(v)]


def _edges_by(g: ScopeGraph, key: int) -> dict[str, list[tuple[str, str, str]]]:
    """The graph's edges (src, process, dst) grouped by position `key` (0 src, 1 process, 2 dst)."""
    cache = g.__dict__.setdefault("_edge_index", {})
    hit = cache.get(key)
    if hit is None:
        hit = defaultdict(list)
        for e in g.edges:
            hit[e[key]].append(e)
        cache[key] = hit
    return hit


def feeds(g: ScopeGraph, data: Iterable[str] | None, process: Iterable[str] | None) -> list[tuple[str, str]]:
    """(data, process) pairs: some edge (d', p', d2) has d' under data and p' under process."""
    out: set[tuple[str, str]] = set()
    procs = None if process is None else set(process)
    if data is not None:
        by_src = _edges_by(g, 0)
        for d in set(data):
            for d1 in g.down(d):
                for _, p1, _ in by_src.get(d1, ()):
                    out.update((d, p) for p in g.up(p1) if procs is None or p in procs)
    elif procs is not None:
        by_process = _edges_by(g, 1)
        for p in procs:
            for p1 in g.down(p):
                for s, _, _ in by_process.get(p1, ()):
                    out.update((d, p) for d in g.up(s))
    else:
        for s, p1, _ in g.edges:
            out.update((d, p) for d in g.up(s) for p in g.up(p1))
    return sorted(out)


def emits(g: ScopeGraph, process: Iterable[str] | None, data: Iterable[str] | None) -> list[tuple[str, str]]:
    """(process, data) pairs: some edge (d1, p', d') has p' under process and data under d'."""
    out: set[tuple[str, str]] = set()
    datas = None if data is None else set(data)
    if process is not None:
        by_process = _edges_by(g, 1)
        for p in set(process):
            for p1 in g.down(p):
                for _, _, d1 in by_process.get(p1, ()):
                    out.update((p, d) for d in g.down(d1) if datas is None or d in datas)
    elif datas is not None:
        by_dst = _edges_by(g, 2)
        for d in datas:
            for d1 in g.up(d):
                for _, p1, _ in by_dst.get(d1, ()):
                    out.update((p, d) for p in g.up(p1))
    else:
        for _, p1, d1 in g.edges:
            out.update((p, d) for p in g.up(p1) for d in g.down(d1))
    return sorted(out)


def vertices(g: ScopeGraph) -> list[str]:
    """Every vertex of the graph (those with complex elements), sorted."""
    return sorted(g.ces)
