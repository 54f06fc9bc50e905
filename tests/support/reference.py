"""A deliberately naive, pure-Python oracle for the Ibis semantics (Ibis, Section 5).

``Reference`` reads one or more ``strata-bundle/1`` dicts (docs/bundle-format.md) and answers
containment, under, feeds, emits and influences(k) by following the definitions word for
word: every "for all" is an ``all(...)`` and every "there exists" an ``any(...)`` over the
registered vertices, elements and edges. Nothing is indexed or clever, so it is slow but
easy to check by eye; it exists to be compared against the set-at-a-time Spark
implementation in ``store/spark/semantics.py`` on small bundles.

It assumes the bundles are valid (the store validates them); it only raises ``ValueError``
for references it cannot resolve, so that a broken test generator fails loudly.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

DATA = "data"
PROCESS = "process"


class Reference:
    """The definitions of Sections 3 and 5 over the union of ``bundles``."""

    def __init__(self, bundles: list[dict]) -> None:
        self._gran_kind: dict[str, str] = {}  # granularity -> data | process
        self._type_alias: dict[str, frozenset[str]] = {}  # type name -> granularities
        self._elem_gran: dict[str, str] = {}  # basic element id -> granularity
        self._elem_parents: dict[str, tuple[str, ...]] = {}
        self._vertex_type: dict[str, frozenset[str]] = {}
        self._vertex_ces: dict[str, tuple[dict[str, str], ...]] = {}
        self._vertex_attrs: dict[str, dict[str, Any]] = {}
        self._edges: list[tuple[str, str, str]] = []  # (src, process, dst)
        for bundle in bundles:
            self._add(bundle)
        # Memoised versions of the recursive definitions (per instance, not global).
        self._contains = lru_cache(maxsize=None)(self._contains_uncached)
        self._under = lru_cache(maxsize=None)(self._under_uncached)
        self._influences = lru_cache(maxsize=None)(self._influences_uncached)

    # ------------------------------------------------------------------ loading

    def _add(self, bundle: dict) -> None:
        for kind in (DATA, PROCESS):
            gset = (bundle.get("gsets") or {}).get(kind) or {}
            for child, parent in gset.get("contains", []):
                self._gran_kind[child] = kind
                self._gran_kind[parent] = kind
            for g in gset.get("granularities", []):
                self._gran_kind[g] = kind
        for t in bundle.get("types", []):
            self._type_alias[t["name"]] = frozenset(t["granularities"])
        for e in bundle.get("elements", []):
            self._require_granularity(e["granularity"], e["id"])
            self._elem_gran[e["id"]] = e["granularity"]
            self._elem_parents[e["id"]] = tuple(e.get("parents", ()))
            # Rule 3: every basic element is implicitly a vertex with one complex element.
            self._vertex_type[e["id"]] = frozenset([e["granularity"]])
            self._vertex_ces[e["id"]] = ({e["granularity"]: e["id"]},)
            self._vertex_attrs[e["id"]] = dict(e.get("attrs", {}))
        for v in bundle.get("vertices", []):
            grans = self.resolve_type(v["type"])
            self._vertex_type[v["id"]] = grans
            self._vertex_ces[v["id"]] = tuple(dict(ce) for ce in v["elements"])
            self._vertex_attrs[v["id"]] = dict(v.get("attrs", {}))
        for edge in bundle.get("edges", []):
            self._edges.append((edge["src"], edge["process"], edge["dst"]))
        self._check_references()

    def _require_granularity(self, g: str, where: str) -> None:
        if g not in self._gran_kind:
            raise ValueError(f"{where}: unknown granularity {g!r}")

    def _check_references(self) -> None:
        for e, parents in self._elem_parents.items():
            for p in parents:
                if p not in self._elem_gran:
                    raise ValueError(f"element {e}: unknown parent {p!r}")
        for v, ces in self._vertex_ces.items():
            for ce in ces:
                if set(ce) != self._vertex_type[v]:
                    raise ValueError(f"vertex {v}: complex element {ce} does not fit its type")
                for b in ce.values():
                    if b not in self._elem_gran:
                        raise ValueError(f"vertex {v}: unknown element {b!r}")
        for src, proc, dst in self._edges:
            for v in (src, proc, dst):
                if v not in self._vertex_ces:
                    raise ValueError(f"edge {(src, proc, dst)}: unknown vertex {v!r}")

    def resolve_type(self, spec: str | Iterable[str]) -> frozenset[str]:
        """A type given by alias, by granularity name, or as a list of granularities."""
        if isinstance(spec, str):
            if spec in self._type_alias:
                return self._type_alias[spec]
            self._require_granularity(spec, "type")
            return frozenset([spec])
        grans = frozenset(spec)
        for g in grans:
            self._require_granularity(g, "type")
        return grans

    # ------------------------------------------------------------------ the catalog

    def vertices(self, kind: str | None = None) -> set[str]:
        """Every vertex id (explicit, and the implicit vertex of each basic element)."""
        return {v for v in self._vertex_ces if kind is None or self.kind(v) == kind}

    def elements(self) -> set[str]:
        return set(self._elem_gran)

    def edges(self) -> list[tuple[str, str, str]]:
        """The registered three-way relationships as (src, process, dst)."""
        return list(self._edges)

    def kind(self, v: str) -> str:
        """``data`` or ``process``: the gset of the vertex's type."""
        (kind,) = {self._gran_kind[g] for g in self._vertex_type[v]}
        return kind

    def type_granularities(self, v: str) -> frozenset[str]:
        return self._vertex_type[v]

    def attrs(self, v: str) -> dict[str, Any]:
        return dict(self._vertex_attrs[v])

    def complex_elements(self, v: str) -> tuple[dict[str, str], ...]:
        return self._vertex_ces[v]

    def vertices_of_type(self, spec: str | Iterable[str]) -> set[str]:
        """Vertices whose type is exactly ``spec`` (what ``FROM <type>`` ranges over)."""
        grans = self.resolve_type(spec)
        return {v for v in self._vertex_ces if self._vertex_type[v] == grans}

    # ------------------------------------------------------------------ Definition 3.3

    def contains(self, b1: str, b2: str) -> bool:
        """Basic containment, reflexive (spec) and transitive (Definition 3.3)."""
        return self._contains(b1, b2)

    def _contains_uncached(self, b1: str, b2: str) -> bool:
        if b1 == b2:
            return True
        parents = self._elem_parents[b2]
        return b1 in parents or any(self._contains(b1, p) for p in parents)

    # ------------------------------------------------------------------ Definition 5.2

    @staticmethod
    def _basic(ce: dict[str, str]) -> set[str]:
        return set(ce.values())

    def ce_under(self, e1: dict[str, str], e2: dict[str, str]) -> bool:
        """e1 under e2 iff for every b2 of e2 there is a b1 of e1 that b2 contains."""
        return all(any(self.contains(b2, b1) for b1 in self._basic(e1)) for b2 in self._basic(e2))

    def under(self, v1: str, v2: str) -> bool:
        """V1 under V2 iff every complex element of V1 is under some complex element of V2."""
        return self._under(v1, v2)

    def _under_uncached(self, v1: str, v2: str) -> bool:
        return all(
            any(self.ce_under(e1, e2) for e2 in self._vertex_ces[v2]) for e1 in self._vertex_ces[v1]
        )

    # ------------------------------------------------------------------ Definitions 5.3-5.5

    def feeds(self, d: str, p: str) -> bool:
        """Some relationship (d', p', d2) has d' under d and p' under p."""
        return any(self.under(d1, d) and self.under(p1, p) for d1, p1, _d2 in self._edges)

    def emits(self, p: str, d: str) -> bool:
        """Some relationship (d1, p', d') has p' under p and d under d'."""
        return any(self.under(p1, p) and self.under(d, d2) for _d1, p1, d2 in self._edges)

    def influences(self, d1: str, d2: str, k: int | None) -> bool:
        """d1 influences(k) d2; ``k=None`` is influences(*): influences(k) for some k.

        For ``None`` the "some k" ranges over 0 .. number of data vertices: influences(k)
        is monotone in k over a finite vertex set, so no larger k adds a pair.
        """
        if k is None:
            return any(self._influences(d1, d2, j) for j in range(len(self.vertices(DATA)) + 1))
        if k < 0:
            raise ValueError(f"influences: k must be >= 0 or None, got {k}")
        return self._influences(d1, d2, k)

    def _influences_uncached(self, d1: str, d2: str, k: int) -> bool:
        if self.kind(d1) != DATA or self.kind(d2) != DATA:
            return False  # Definition 5.5 is stated for two data vertices
        if k == 0:
            return self.under(d2, d1)
        if k == 1:
            return self._influences(d1, d2, 0) or any(
                self._influences(d1, a, 0) and self._influences(b, d2, 0)
                for a, _p, b in self._edges
            )
        return any(
            self._influences(d1, mid, 1) and self._influences(mid, d2, k - 1)
            for mid in self.vertices(DATA)
        )

    # ------------------------------------------------------------------ all pairs

    def under_pairs(self) -> set[tuple[str, str]]:
        vs = self.vertices()
        return {(a, b) for a in vs for b in vs if self.under(a, b)}

    def feeds_pairs(self) -> set[tuple[str, str]]:
        return {
            (d, p) for d in self.vertices(DATA) for p in self.vertices(PROCESS) if self.feeds(d, p)
        }

    def emits_pairs(self) -> set[tuple[str, str]]:
        return {
            (p, d) for p in self.vertices(PROCESS) for d in self.vertices(DATA) if self.emits(p, d)
        }

    def influences_pairs(self, k: int | None) -> set[tuple[str, str]]:
        ds = self.vertices(DATA)
        return {(a, b) for a in ds for b in ds if self.influences(a, b, k)}
