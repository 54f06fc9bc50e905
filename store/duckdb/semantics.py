"""The Ibis predicates for the local engine: the same definitions as store/spark/semantics.py (Spark),
evaluated on the driver by store/scopegraph.py over one of two graphs:

- the bound side's influence scopes, when the store has a current component index and the
  predicate is `under` or `influences` (both stay inside their bound side's scopes, see
  store/index/scopes.py): only those scopes' rows are read;
- otherwise the whole store's graph, read once per committed version with DuckDB (containment,
  complex elements, kinds and edges) and kept for the version's later questions.

Sides are collections of vertex ids (None: unbound); answers are sorted lists of id pairs.

    pairs(st, "under", None, lower, upper)        -> [(lower, upper)]    Definition 5.2
    pairs(st, "feeds", None, data, process)       -> [(data, process)]   Definition 5.3
    pairs(st, "emits", None, process, data)       -> [(process, data)]   Definition 5.4
    pairs(st, "influences", k, src, dst)          -> [(src, dst)]        Definition 5.5 (k None: *)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection

from store import schema as S
from store import scopegraph as SG
from store.index.scopes import REL_ANCESTOR, REL_COMPLEX, REL_EDGE, ScopeFiles

UNDER, FEEDS, EMITS, INFLUENCES = "under", "feeds", "emits", "influences"

# Scoped graphs: at most this many bound ids and this many scope rows; larger bound sides use
# the whole store's graph.
SCOPED_IDS = 10_000
SCOPED_ROWS = 2_000_000

_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def store_rows(st) -> int:
    """Rows the whole-store graph is built from (what an unpruned predicate reads)."""
    t = st.local()
    return sum(t.rows(name) for name in (S.COMPLEX, S.ANCESTORS, S.EDGES))


def store_graph(st) -> SG.ScopeGraph:
    """The graph of the whole committed store (remembered per store and version)."""
    key = (st.root, st.version)
    with _LOCK:
        hit = _GRAPHS.get(st)
        if hit is not None and hit[0] == key:
            return hit[1]
    t = st.local()
    kinds = dict(t.relation(S.VERTICES).project(S.ID, S.KIND).fetchall())
    rows: list[tuple] = [(REL_COMPLEX, v, str(ce), e, kinds.get(v))
                         for v, ce, e in t.relation(S.COMPLEX).project(S.VERTEX, S.CE, S.ELEM).fetchall()]
    rows += [(REL_ANCESTOR, i, a, None, None)
             for i, a in t.relation(S.ANCESTORS).project(S.ID, S.ANCESTOR).fetchall()]
    rows += [(REL_EDGE, s, d, p, None)
             for s, d, p in t.relation(S.EDGES).project(S.SRC, S.DST, S.PROCESS).fetchall()]
    g = SG.ScopeGraph(rows)
    with _LOCK:
        _GRAPHS[st] = (key, g)
    return g


def _scoped(st, ids: Collection[str]) -> SG.ScopeGraph | None:
    """The graph of the scopes of `ids`, or None (no current index, too many ids or rows)."""

    if len(ids) > SCOPED_IDS:
        return None
    files = ScopeFiles.of(st)
    if files is None:
        return None
    scopes = files.scopes_of(list(ids))
    if sum(n for n, _ in scopes.values()) > SCOPED_ROWS:
        return None
    return SG.ScopeGraph(files.rows_of(scopes) if scopes else ())


def pairs(st, kind: str, depth: int | None, left: Collection[str] | None,
          right: Collection[str] | None) -> list[tuple[str, str]]:
    """The (left, right) pairs of predicate `kind` with each side optionally restricted."""
    if kind == INFLUENCES and depth is not None and depth < 0:
        raise ValueError(f"influences(k) needs k >= 0, got {depth}")
    left = None if left is None else set(left)
    right = None if right is None else set(right)
    # Work from the smaller bound side (the other one only filters the answer).
    from_left = left is not None and (right is None or len(left) <= len(right))
    g = None
    if kind in (UNDER, INFLUENCES) and (left is not None or right is not None):
        g = _scoped(st, left if from_left else right)
    if g is None:
        g = store_graph(st)
    if kind == UNDER:
        return _under(g, left, right, from_left)
    if kind == FEEDS:
        return SG.feeds(g, left, right)
    if kind == EMITS:
        return SG.emits(g, left, right)
    if kind == INFLUENCES:
        return _influences(g, depth, left, right, from_left)
    raise ValueError(f"unknown predicate {kind!r}")


def _under(g: SG.ScopeGraph, lower: set[str] | None, upper: set[str] | None,
           from_lower: bool) -> list[tuple[str, str]]:
    if lower is None and upper is None:
        upper = set(SG.vertices(g))
    if from_lower:
        found = SG.under(g, sorted(lower), None)
        return sorted(p for p in found if upper is None or p[1] in upper)
    return sorted(SG.under(g, lower, sorted(upper)))


def _influences(g: SG.ScopeGraph, depth: int | None, src: set[str] | None,
                dst: set[str] | None, from_src: bool) -> list[tuple[str, str]]:
    if from_src or (src is None and dst is None):
        starts = sorted(src) if src is not None else [v for v in SG.vertices(g) if g.is_data(v)]
        found = SG.influences(g, starts, depth, True)
        return sorted(p for p in found if dst is None or p[1] in dst)
    found = SG.influences(g, sorted(dst), depth, False)
    return sorted(p for p in found if src is None or p[0] in src)
