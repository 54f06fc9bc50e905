"""Incremental update of the influence scopes (store/index/scopes.py) in this process: the rows
appended to `ancestors`, `complex`, `vertices` and `edges` since the scopes were computed are
merged into the committed scope tables, reading and writing what they touch.

Scopes are the connected components of a graph over root elements; appended rows can only add
roots and links, so they can only add and merge scopes, never split one, as long as no element
that was a root gains a parent (then it stops being a root, and its scope may fall apart). So:

1. **Appended rows**: the rows of the source tables' segments the scopes do not cover
   (`meta.index.scope_segments`); a covered segment that is gone means the tables were
   rewritten: `Fallback`.
2. **What the old rows say about them**, each by one DuckDB semi-join over the committed
   files: the deepest old `ancestors` row of every element the new rows name (whether it is
   old, whether it is a root), the old scope of those elements (their own `a` row in
   `index_scope_rows`) and of the vertices (`index_scope_nodes`), the kinds of the new
   complex rows' vertices.
3. **Links** (scopes.py's definitions, over scope-graph nodes: an old scope stands for all
   its roots, a new root for itself): an element's roots, a vertex's elements' roots, an
   edge's two ends' vertices. Connected components of those links with the smallest id as
   label: an old scope's label is its smallest root, so each merged label is the smallest root
   of the merged scope, what a full computation gives.
4. **Rows**: the appended rows in their scopes, one more file per bucket of
   `index_scope_rows`; the old rows of a scope whose label changed (it merged into a smaller
   one) relabelled, the files holding them written again; the `index_scope_nodes` rows of a
   scope that grew or merged changed in place (each carries its scope's label and row count),
   every file read and those holding such a row written again; new vertices' rows added.
   Both through index_rewrite.rewrite_table.

`Fallback` (the reason goes into the meta's `scopes_reason`) when a root gained a parent, an
old vertex gains its first rows under a root (its old edges would join a scope) or a new
vertices row repeats a vertex that has rows, an element appears under a root for the first
time while old complex rows name it, or the tables were rewritten; `update_scopes` then
computes them whole (`index.write_scopes`). The result equals a full computation, table for
table (tests/index/test_index_inmemory.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from store import schema as S
from store.duckdb import index as X
from store.duckdb.index_rewrite import Fallback, one_segment_folder, rewrite_table
from store.engine import duckdb_connect
from store.index import layout as L
from store.index.files import read_keys
from store.index.params import DEFAULT_BUCKETS
from store.index.scopes import (
    REL_ANCESTOR,
    REL_COMPLEX,
    REL_EDGE,
    ROWS_ROW_GROUP_BYTES,
    SOURCE_TABLES,
    source_segments,
    union_find,
)
from store.index.xxh import buckets_of
from store.segments import parquet_files, segment_files

_ROWS = ("scope", "rel", "a", "b", "c", "d")


def _query(files: Sequence[str], sql: str, **arrays):
    """`sql` over `src` (these Parquet files) and the given pyarrow tables, as a pyarrow Table
    (None when there are no files)."""
    if not files:
        return None
    con = duckdb_connect()
    try:
        con.read_parquet(list(files)).create_view("src")
        for name, table in arrays.items():
            con.register(name, table)
        return con.sql(sql).to_arrow_table()
    finally:
        con.close()


def _any(files: Sequence[str], sql: str, **arrays) -> bool:
    """Whether `sql` (see `_query`) returns a row."""
    found = _query(files, sql, **arrays)
    return found is not None and found.num_rows > 0


def _ids(values) -> object:
    import pyarrow as pa  # deferred: only this path needs pyarrow

    return pa.table({"id": pa.array(sorted(set(values)), pa.string())})


def _pairs(table, a: str, b: str) -> dict:
    return dict(zip(table.column(a).to_pylist(), table.column(b).to_pylist(), strict=True)) if table else {}


def _appended(st, meta: dict) -> dict[str, list[str]]:
    before = meta.get("scope_segments") or {}
    out = {}
    for name in SOURCE_TABLES:
        entry = st.manifest.tables.get(name)
        current = list(entry.segments) if entry is not None else []
        if name not in before or not set(before[name]) <= set(current):
            raise Fallback(f"{name} was rewritten since the scopes were computed, not only appended to")
        out[name] = [s for s in current if s not in set(before[name])]
    return out


def update_scopes(tx, st, meta: dict, buckets: int) -> dict:
    """The scope tables brought up to the committed source tables inside `tx` (module
    docstring), or computed whole where that does not apply; returns the meta entries."""
    t0 = time.perf_counter()
    try:
        out = _incremental(tx, st, meta, buckets)
        out["scopes"] = "incremental"
    except Fallback as why:
        out = {**X.write_scopes(tx, st, buckets), "scopes": "recomputed", "scopes_reason": str(why)}
    out["scopes_s"] = round(time.perf_counter() - t0, 3)
    return out


def refresh_scopes(st, meta: dict) -> dict:
    """Only the scopes brought up to the committed tables (the edges did not change), in this
    process: merged where the module docstring allows, else recomputed."""
    buckets = int(meta.get("buckets", DEFAULT_BUCKETS))
    with st.transaction("index: refresh scopes") as tx:
        meta = {k: v for k, v in meta.items() if k not in ("scopes", "scopes_reason")}
        meta = {**meta, **update_scopes(tx, st, meta, buckets), "mode": "scopes", "builder": "local"}
        tx.set_meta(L.META_KEY, meta)
    return meta


def _incremental(tx, st, meta: dict, buckets: int) -> dict:  # noqa: C901, PLR0912, PLR0915
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    added = _appended(st, meta)
    old_segs = meta["scope_segments"]
    nodes_folder, rows_folder = one_segment_folder(st, L.SCOPE_NODES), one_segment_folder(st, L.SCOPE_ROWS_TABLE)
    if not parquet_files(rows_folder):
        raise Fallback("the scopes were empty (no roots)")

    def new(name: str, cols: Sequence[str]) -> list[tuple]:
        t = _query(segment_files(st.storage, added[name]), f"select {', '.join(cols)} from src")  # noqa: S608 - column names
        return list(zip(*[t.column(c).to_pylist() for c in cols], strict=True)) if t else []

    anc = new(S.ANCESTORS, (S.ID, S.ANCESTOR, S.DEPTH))
    cx = new(S.COMPLEX, (S.VERTEX, S.CE, S.ELEM))
    vx = new(S.VERTICES, (S.ID, S.KIND))
    ed = new(S.EDGES, (S.SRC, S.DST, S.PROCESS))
    # 2. the old rows' view of the elements and vertices the new rows name
    named = {e for e, _, _ in anc} | {a for _, a, _ in anc} | {e for _, _, e in cx}
    old_depth = _pairs(_query(segment_files(st.storage, old_segs[S.ANCESTORS]),
                              "select id, max(depth) d from src semi join q using (id) group by id",
                              q=_ids(named)), "id", "d")
    new_depth: dict[str, int] = {}
    for e, _, d in anc:
        new_depth[e] = max(new_depth.get(e, d), d)
    if any(old_depth.get(e) == 0 and d > 0 for e, d in new_depth.items()):
        raise Fallback("an element that was a root gained a parent")

    def is_root(e: str) -> bool:
        return max(old_depth.get(e, -1), new_depth.get(e, -1)) == 0

    fresh = [e for e in new_depth if e not in old_depth]
    if fresh and _any(segment_files(st.storage, old_segs[S.COMPLEX]),
                      "select 1 from src semi join q on src.elem = q.id limit 1",
                      q=_ids(fresh)):
        raise Fallback("old complex rows name an element that appears in ancestors only now")
    old_elems = {e for e in named if e in old_depth}
    el_scope = _pairs(_query([rows_folder + "/**/*.parquet"] if old_elems else [],
                             "select distinct a, scope from src semi join q on src.a = q.id "
                             "where rel = 'a' and a = b", q=_ids(old_elems)), "a", "scope")
    verts = {v for v, _, _ in cx} | {s for s, _, _ in ed} | {d for _, d, _ in ed} | {v for v, _ in vx}
    vt = read_keys(nodes_folder, buckets, "id", pa.array(sorted(verts), pa.string()))
    v_scope = _pairs(vt, "id", "scope")
    size = {s: int(n) for s, n in zip(*[vt.column(c).to_pylist() for c in ("scope", "scope_rows")],
                                      strict=True)} if vt else {}
    if any(v in v_scope for v, _ in vx):
        raise Fallback("a new vertices row repeats a vertex that has rows in a scope")
    # 3. links over scope-graph nodes: an old scope's label, or a new root
    ends: dict[str, list[str]] = {}  # element -> the nodes of its roots

    def node_of_root(r: str) -> str:
        if r in old_depth:
            if r not in el_scope:
                raise Fallback(f"the old root {r!r} has no scope")
            return el_scope[r]
        return r

    for e in {e for e, _, _ in anc} | {e for _, _, e in cx}:
        ends[e] = [el_scope[e]] if e in el_scope else []
    for e, a, _ in anc:
        if is_root(a):
            ends[e].append(node_of_root(a))
    for e in list(ends):
        if e in old_depth and e not in el_scope and ends[e]:
            raise Fallback(f"the old element {e!r} comes under a root only now")
    v_nodes: dict[str, list[str]] = {v: [v_scope[v]] for v in v_scope}
    for v, _, e in cx:
        v_nodes.setdefault(v, []).extend(ends.get(e, ()))
    gained = [v for v, ns in v_nodes.items() if ns and v not in v_scope]
    if gained and _any(segment_files(st.storage, old_segs[S.EDGES]), "select 1 from src semi join q on src.src = q.id "
                       "union all select 1 from src semi join q on src.dst = q.id limit 1", q=_ids(gained)):
        raise Fallback("a vertex with old edges comes under a root only now")
    if gained and _any(segment_files(st.storage, old_segs[S.COMPLEX]),
                       "select 1 from src semi join q on src.vertex = q.id limit 1",
                       q=_ids(gained)):
        raise Fallback("a vertex with old complex rows comes under a root only now")
    links = [(n, n) for ns in [*ends.values(), *v_nodes.values()] for n in ns]
    links += [(ns[0], m) for ns in [*ends.values(), *v_nodes.values()] for m in ns[1:]]
    links += [(v_nodes[s][0], v_nodes[d][0]) for s, d, _ in ed if v_nodes.get(s) and v_nodes.get(d)]
    label = union_find(links)
    # 4. rows: the appended ones in their scopes, the old ones of relabelled scopes
    kinds = {}
    for v, k in vx:
        kinds.setdefault(v, []).append(k)
    old_kind = _query(segment_files(st.storage, old_segs[S.VERTICES]),
                      "select id, kind from src semi join q using (id)",
                      q=_ids({v for v, _, _ in cx}))
    if old_kind:
        for v, k in zip(old_kind.column("id").to_pylist(), old_kind.column("kind").to_pylist(), strict=True):
            kinds.setdefault(v, []).append(k)
    rows = [(label[ends[e][0]], REL_ANCESTOR, e, a, None, None) for e, a, _ in anc if ends[e]]
    rows += [(label[v_nodes[v][0]], REL_COMPLEX, v, str(ce), e, k)
             for v, ce, e in cx if v_nodes.get(v) for k in kinds.get(v, ())]
    rows += [(label[v_nodes[s][0]], REL_EDGE, s, d, p, None) for s, d, p in ed if v_nodes.get(s)]
    old_labels = set(el_scope.values()) | set(v_scope.values())
    olds = {n for n in label if n in old_labels}  # the old scopes the new rows reach
    moved = sorted(n for n in olds if label[n] != n)
    grown = {r[0] for r in rows} | {label[n] for n in moved}
    unknown = sorted(n for n in olds if n not in size and label[n] in grown)
    if unknown:
        counted = _query([rows_folder + "/**/*.parquet"], "select scope, count(*) n from src semi join q "
                         "on src.scope = q.id group by scope", q=_ids(unknown))
        size.update(_pairs(counted, "scope", "n"))
    total: dict[str, int] = {}
    for n in olds:
        total[label[n]] = total.get(label[n], 0) + int(size.get(n, 0))
    for r in rows:
        total[r[0]] = total.get(r[0], 0) + 1
    relabelled = read_keys(rows_folder, buckets, "scope", pa.array(moved, pa.string())) if moved else None
    added_rows = pa.table({c: pa.array([r[i] for r in rows], pa.string()) for i, c in enumerate(_ROWS)})
    if relabelled is not None:
        to = pa.array([label[s] for s in relabelled.column("scope").to_pylist()], pa.string())
        relabelled = relabelled.select(list(_ROWS)).cast(added_rows.schema).set_column(0, "scope", to)
        added_rows = pa.concat_tables([added_rows, relabelled])
    # vertices of the scopes that grew: their rows of index_scope_nodes carry the new label and
    # row count, changed in place in every file (rows sorted by id keep their order)
    changed_old = sorted(n for n in olds if label[n] in grown)
    old_keys = pa.array(changed_old, pa.string())
    to_scope = pa.array([label[n] for n in changed_old], pa.string())
    to_rows = pa.array([total[label[n]] for n in changed_old], pa.int64())
    to_bucket = pa.array(buckets_of(to_scope, buckets) if changed_old else np.zeros(0, np.int32), pa.int32())

    def relabel(t):
        at = pc.index_in(t.column("scope"), value_set=old_keys)
        hit = pc.is_valid(at)
        if not pc.any(hit).as_py():
            return None
        at = pc.fill_null(at, 0)
        for col, to in (("scope", to_scope), ("scope_rows", to_rows), ("scope_bucket", to_bucket)):
            i = t.schema.get_field_index(col)
            t = t.set_column(i, col, pc.if_else(hit, to.take(at), t.column(col)))
        return t

    gained_v = sorted(v for v, ns in v_nodes.items() if ns and v not in v_scope)
    scopes = pa.array([label[v_nodes[v][0]] for v in gained_v], pa.string())
    node_rows = pa.table({"id": pa.array(gained_v, pa.string()), "scope": scopes,
                          "scope_rows": pa.array([total[s] for s in scopes.to_pylist()], pa.int64()),
                          "scope_bucket": pa.array(buckets_of(scopes, buckets) if gained_v else np.zeros(0, np.int32),
                                                   pa.int32())})
    nodes_written = rewrite_table(tx, L.SCOPE_NODES, nodes_folder, pa.table({"id": pa.array([], pa.string())}),
                                  node_rows, buckets, update=relabel if changed_old else None)
    rows_written = rewrite_table(tx, L.SCOPE_ROWS_TABLE, rows_folder, pa.table({"scope": pa.array(moved, pa.string())}),
                                 added_rows, buckets, ROWS_ROW_GROUP_BYTES)
    return {"scope_segments": source_segments(st), "scope_rows_added": len(rows),
            "scopes_merged": len(moved), "scope_files": {
                name: " ".join(f"{n} {what}" for what, n in w.items() if n)
                for name, w in ((L.SCOPE_NODES, nodes_written), (L.SCOPE_ROWS_TABLE, rows_written))}}
