"""Hypothesis strategies for small, valid ``strata-bundle/1`` documents (docs/bundle-format.md).

``bundles()`` draws one self-contained bundle; ``bundle_pairs()`` draws one and splits it
into two consecutive bundles, the second referring to elements and vertices of the first
(for incremental-ingest tests). Sizes stay small (at most ~15 elements, ~8 explicit
vertices, ~10 edges) so that tests comparing Spark against ``tests/support/reference.py`` stay fast.

Shapes produced:
- data granularities ``D0..D3`` with 1-2 containment pairs ``[Di, Dj]`` (i < j, so acyclic;
  a higher index may be coarser), process granularities ``P0`` / ``P0 ⪯ P1``; granularities
  in no pair are listed under ``granularities``;
- basic data elements ``d0..`` and process elements ``p0..``, generated coarse-first, each
  with 0-2 parents drawn from earlier elements of a strictly coarser granularity;
- multi-granularity types ``T0, T1`` (two incomparable data granularities, declared schema
  ``{n: int, s: string}``), and explicit vertices ``v0..`` of those types or of single
  granularities (by name or as a list), each with 1-3 distinct complex elements;
- edges ``(data, process, data)`` over implicit and explicit vertices, sometimes with the
  reverse of an edge added so the graph has a cycle;
- attributes ``n`` (int) and ``s`` (string) on some elements and vertices.
"""

from __future__ import annotations

import copy
import os
from itertools import combinations

from hypothesis import assume
from hypothesis import strategies as st

from support.depth import examples

FORMAT = "strata-bundle/1"
_STRINGS = ("a", "b", "c")


def _strictly_coarser(grans: list[str], pairs: list[tuple[str, str]]) -> dict[str, set[str]]:
    """g -> every granularity strictly coarser than g (transitive closure of the pairs)."""
    up: dict[str, set[str]] = {g: set() for g in grans}
    for child, parent in pairs:
        up[child].add(parent)
    changed = True
    while changed:
        changed = False
        for g in grans:
            more = set().union(*(up[p] for p in up[g])) - up[g] if up[g] else set()
            if more:
                up[g] |= more
                changed = True
    return up


def _gset(grans: list[str], pairs: list[tuple[str, str]]) -> dict:
    in_pairs = {g for pair in pairs for g in pair}
    gset: dict = {"contains": [list(p) for p in pairs]}
    lonely = [g for g in grans if g not in in_pairs]
    if lonely:
        gset["granularities"] = lonely
    return gset


def _attrs(draw) -> dict:
    attrs = {}
    if draw(st.booleans()):
        attrs["n"] = draw(st.integers(0, 9))
    if draw(st.booleans()):
        attrs["s"] = draw(st.sampled_from(_STRINGS))
    return attrs


def _elements(draw, prefix, grans, coarser, order, count) -> list[dict]:
    """``count`` basic elements, coarse-first, each with parents of coarser granularity."""
    picked = draw(st.lists(st.sampled_from(grans), min_size=count, max_size=count))
    picked.sort(key=order)
    out: list[dict] = []
    for i, g in enumerate(picked):
        elem: dict = {"id": f"{prefix}{i}", "granularity": g}
        candidates = [e["id"] for e in out if e["granularity"] in coarser[g]]
        if candidates:
            parents = draw(st.lists(st.sampled_from(candidates), max_size=2, unique=True))
            if parents:
                elem["parents"] = parents
        attrs = _attrs(draw)
        if attrs:
            elem["attrs"] = attrs
        out.append(elem)
    return out


@st.composite
def bundles(draw, max_data_elements: int = 10, max_vertices: int = 8, max_edges: int = 10):
    """A small valid bundle exercising every section of the format."""
    n_data = draw(st.integers(2, 4))
    data_grans = [f"D{i}" for i in range(n_data)]
    candidates = [(data_grans[i], data_grans[j]) for i, j in combinations(range(n_data), 2)]
    data_pairs = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
    proc_grans = ["P0", "P1"][: draw(st.integers(1, 2))]
    proc_pairs = [("P0", "P1")] if len(proc_grans) == 2 and draw(st.booleans()) else []
    coarser = _strictly_coarser(data_grans, data_pairs) | _strictly_coarser(proc_grans, proc_pairs)

    def order(g: str) -> int:  # coarse first: a parent always has a larger index
        return -int(g[1:])

    data_elems = _elements(
        draw, "d", data_grans, coarser, order, draw(st.integers(2, max_data_elements))
    )
    proc_elems = _elements(draw, "p", proc_grans, coarser, order, draw(st.integers(1, 4)))
    elems = data_elems + proc_elems
    by_gran: dict[str, list[str]] = {}
    for e in elems:
        by_gran.setdefault(e["granularity"], []).append(e["id"])

    # Multi-granularity types: two incomparable data granularities that both have elements.
    incomparable = [
        (a, b)
        for a, b in combinations(sorted(by_gran), 2)
        if a in data_grans and b in data_grans and b not in coarser[a] and a not in coarser[b]
    ]
    complex_types = (
        draw(st.lists(st.sampled_from(incomparable), min_size=1, max_size=2, unique=True))
        if incomparable
        else []
    )
    types = [
        {"name": f"T{i}", "granularities": list(pair), "attributes": {"n": "int", "s": "string"}}
        for i, pair in enumerate(complex_types)
    ]

    vertices: list[dict] = []
    # Named multi-granularity types are listed twice so that they are drawn often.
    type_choices = [("named", t) for t in types] * 2 + [("gran", g) for g in sorted(by_gran)]
    for i in range(draw(st.integers(0, max_vertices))):
        # The first vertex uses a multi-granularity type whenever there is one.
        how, t = ("named", types[0]) if i == 0 and types else draw(st.sampled_from(type_choices))
        grans = t["granularities"] if how == "named" else [t]
        ce_strategy = st.fixed_dictionaries({g: st.sampled_from(by_gran[g]) for g in grans})
        ces = draw(
            st.lists(ce_strategy, min_size=1, max_size=3, unique_by=lambda ce: tuple(ce.items()))
        )
        vertex: dict = {"id": f"v{i}", "elements": ces}
        if how == "named":
            vertex["type"] = t["name"] if draw(st.booleans()) else list(reversed(grans))
            vertex["attrs"] = {"n": draw(st.integers(0, 9)), "s": draw(st.sampled_from(_STRINGS))}
        else:
            vertex["type"] = t if draw(st.booleans()) else [t]
            attrs = _attrs(draw)
            if attrs:
                vertex["attrs"] = attrs
        vertices.append(vertex)

    data_ids = [e["id"] for e in data_elems] + [
        v["id"] for v in vertices if _vertex_grans(v, types)[0] in data_grans
    ]
    proc_ids = [e["id"] for e in proc_elems] + [
        v["id"] for v in vertices if _vertex_grans(v, types)[0] in proc_grans
    ]
    edges: list[dict] = []
    for _ in range(draw(st.integers(1, max_edges))):
        # Half the time continue from the previous edge's output, so that paths of several
        # steps (influences(k), k >= 2) are common, not only single hops.
        chain = bool(edges) and draw(st.booleans())
        src = edges[-1]["dst"] if chain else draw(st.sampled_from(data_ids))
        edge = {
            "src": src,
            "process": draw(st.sampled_from(proc_ids)),
            "dst": draw(st.sampled_from(data_ids)),
        }
        if edge not in edges:
            edges.append(edge)
    if draw(st.booleans()):  # close a cycle through the first edge
        first = edges[0]
        back = {"src": first["dst"], "process": first["process"], "dst": first["src"]}
        if back not in edges:
            edges.append(back)

    return {
        "format": FORMAT,
        "gsets": {"data": _gset(data_grans, data_pairs), "process": _gset(proc_grans, proc_pairs)},
        "types": types,
        "elements": elems,
        "vertices": vertices,
        "edges": edges,
    }


def _vertex_grans(vertex: dict, types: list[dict]) -> list[str]:
    t = vertex["type"]
    if isinstance(t, list):
        return t
    for named in types:
        if named["name"] == t:
            return named["granularities"]
    return [t]


def _vertex_elements(vertex: dict) -> set[str]:
    return {b for ce in vertex["elements"] for b in ce.values()}


@st.composite
def bundle_pairs(draw):
    """(first, second): one valid bundle split in two; ingesting both equals ingesting it.

    The first bundle holds the gsets, the types and a coarse-first prefix of the elements;
    the second holds the other elements (whose parents may lie in the first), and vertices
    and edges that mention anything of the second, plus a random share of the rest. The
    second bundle has no ``gsets``/``types`` sections: it relies on the first's. At least
    one record of the second refers to an element or vertex of the first.
    """
    whole = draw(bundles())
    elems = whole["elements"]
    cut = draw(st.integers(1, len(elems) - 1))
    first_elems, second_elems = elems[:cut], elems[cut:]
    first_ids = {e["id"] for e in first_elems}

    first_vertices, second_vertices = [], []
    for v in whole["vertices"]:
        if _vertex_elements(v) <= first_ids and draw(st.booleans()):
            first_vertices.append(v)
        else:
            second_vertices.append(v)
    first_ids |= {v["id"] for v in first_vertices}

    first_edges, second_edges = [], []
    for e in whole["edges"]:
        if set(e.values()) <= first_ids and draw(st.booleans()):
            first_edges.append(e)
        else:
            second_edges.append(e)

    refers = (
        any(set(e.get("parents", ())) & first_ids for e in second_elems)
        or any(_vertex_elements(v) & first_ids for v in second_vertices)
        or any(set(e.values()) & first_ids for e in second_edges)
    )
    assume(refers)
    first = {
        "format": FORMAT,
        "gsets": copy.deepcopy(whole["gsets"]),
        "types": copy.deepcopy(whole["types"]),
        "elements": first_elems,
        "vertices": first_vertices,
        "edges": first_edges,
    }
    second = {
        "format": FORMAT,
        "elements": second_elems,
        "vertices": second_vertices,
        "edges": second_edges,
    }
    return first, second


# Examples per property test that ingests into Spark (each costs an ingest plus queries).
# `make test` runs 2 (derandomized: the same examples every run), which keeps the whole suite
# within its time budget on 2 cores (README); `make test-deep` runs 25 (tests/support/depth.py),
# and STRATA_SPARK_EXAMPLES sets the count for either.
SPARK_EXAMPLES = int(os.environ.get("STRATA_SPARK_EXAMPLES", examples(2, 25)))
