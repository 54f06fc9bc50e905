"""Influence scopes: the part of the component index that IQL's bound predicates read.

The CSProv components (components.py) are over derivation edges only, but `under`, and so
`influences`, also walk containment. A **scope** is a weakly connected component of the graph
whose nodes are the *root* elements (elements with no parent) and whose links are

- an element under two roots (a cell under a row and a column of different tables),
- a vertex whose complex elements lie under two roots,
- a derivation edge `(src, p, dst)`: the roots of `src` with the roots of `dst`.

Every vertex, element, containment row and edge belongs to exactly one scope (its roots').
`under` relates vertices whose basic elements share roots, and an edge links the roots of its
ends, so `under`, `influences(k)` and `influences(*)` never leave the scope of their bound side
(in either direction). A bound query therefore reads only the rows of the scopes its bound
vertices are in (store/scopegraph.py evaluates it there, on the driver). The scopes are computed by
store/duckdb/index.py in this process or store/spark/index/scopes.py on Spark.

Tables (written with the rest of the index, same bucketed layout, layout.py):

| table | columns | bucket key, sort |
|---|---|---|
| index_scope_nodes | id, scope, scope_rows, scope_bucket | id; sorted by id (vertex -> its scope) |
| index_scope_rows | scope, rel, a, b, c, d | scope; sorted by scope, rel |

`rel` says what a row of `index_scope_rows` is: `c` complex (a=vertex, b=ce, c=elem, d=kind),
`a` ancestors (a=id, b=ancestor), `e` edge (a=src, b=dst, c=process).

The manifest's `meta.index.scope_segments` records the segments of the four source tables the
scopes were computed from; scopes are used only while those are still the committed ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from store import schema as S
from store.index import layout as L
from store.index.files import read_buckets

SCOPE, SCOPE_ROWS, SCOPE_BUCKET, REL = "scope", "scope_rows", "scope_bucket", "rel"
REL_COMPLEX, REL_ANCESTOR, REL_EDGE = "c", "a", "e"
SOURCE_TABLES = (S.VERTICES, S.COMPLEX, S.ANCESTORS, S.EDGES)

# Row groups of index_scope_rows: small, so a point read decodes little more than its scope.
ROWS_ROW_GROUP_BYTES = 128 * 1024



def source_segments(st) -> dict[str, list[str]]:
    """The committed segments of the tables scopes are computed from."""
    out = {}
    for name in SOURCE_TABLES:
        entry = st.manifest.tables.get(name)
        out[name] = list(entry.segments) if entry is not None else []
    return out


def current(st) -> bool:
    """True when the store has scopes computed from exactly its committed source tables."""
    meta = st.meta(L.META_KEY) or {}
    return bool(meta.get("scope_segments")) and meta["scope_segments"] == source_segments(st) \
        and L.SCOPE_NODES in st.manifest.tables and L.SCOPE_ROWS_TABLE in st.manifest.tables


def union_find(links: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Root id -> the smallest root id of its linked group (only roots that occur in links)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = (ra, rb) if ra < rb else (rb, ra)
            parent[hi] = lo  # the smaller id stays the representative: labels are minima
    return {x: find(x) for x in parent}


class ScopeFiles:
    """Driver-side reads of the scope tables with DuckDB (local stores only)."""

    def __init__(self, nodes: str, rows: str, buckets: int) -> None:
        self.nodes, self.rows, self.buckets = nodes, rows, buckets

    @classmethod
    def of(cls, st) -> ScopeFiles | None:
        """The scope tables of a local store whose scopes are current, else None."""
        if not current(st):
            return None
        paths = []
        for name in (L.SCOPE_NODES, L.SCOPE_ROWS_TABLE):
            segs = st.manifest.tables[name].segments
            path = st.storage.file_path(segs[0]) if len(segs) == 1 else None
            if path is None:
                return None
            paths.append(path)
        return cls(*paths, int(st.meta(L.META_KEY)["buckets"]))

    def scopes_of(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Scope -> (rows in it, its bucket), for the scopes of the ids the index knows."""
        t = read_buckets(self.nodes, (L.bucket_of_value(i, self.buckets) for i in ids),
                         (SCOPE, SCOPE_ROWS, SCOPE_BUCKET), [(S.ID, list(ids))])
        if t is None:
            return {}
        return {s: (n, b) for s, n, b in zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True)}

    def rows_of(self, scopes: dict[str, tuple[int, int]]) -> list[tuple]:
        """(rel, a, b, c, d) rows of the given scopes (`scopes_of`'s answer): only their buckets'
        files are opened, and only row groups whose statistics admit the scopes are decoded."""
        t = read_buckets(self.rows, (b for _, b in scopes.values()), (REL, "a", "b", "c", "d"),
                         [(SCOPE, sorted(scopes))])
        if t is None:
            return []
        return list(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))
