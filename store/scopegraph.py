"""The Ibis predicates over the rows of a few influence scopes, on the driver (pure Python).

A bound IQL predicate needs only the scopes its bound vertices are in (store/index/scopes.py).
When those hold few rows, reading them with pyarrow and answering here costs milliseconds,
where the same answer as Spark joins (store/semantics.py) costs a few dozen jobs. The two give
identical answers; tests compare them on random bundles (tests/test_scopegraph.py).

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
