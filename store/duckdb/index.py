"""The component index built in this process: numpy, pyarrow and scipy, no Spark.

The same seven tables as the Spark build (build.py, sets.py, scopes.py), from the same
committed files, for a store on this machine whose derivation edges fit in memory
(`choose_builder`; docs/index.md gives the memory per million triples):

1. **Read** the edges (src, dst, process) and, per value, the ancestor at its largest depth
   (its table) with DuckDB from exactly the files of the committed version
   (store/duckdb/tables.py).
2. **Encode** every id once to an integer code, in sorted (UTF-8 byte) order, as Spark orders
   strings: the smallest member id of a component or set is then its smallest code, and
   sorting rows by code sorts them by id.
3. **Components**: `scipy.sparse.csgraph.connected_components` (weak) over the distinct
   triples; a component's id is its smallest member.
4. **Splits**: the same pure-Python plan (splits.py) from the workflow graph's table pairs.
5. **Connected sets** (Algorithm 3): per level, the active values of large components are
   keyed by (set at the previous level, split of their table at this level); connected
   components of the triples whose ends share a key are the candidate sets, final when they have
   fewer than θ values or their split is a leaf. One scipy run per level.
6. **Set dependencies, summaries, influence scopes** (scopes.py's definitions: root links
   joined by connected components) with array arithmetic.
7. **Write** each table with pyarrow into a segment folder of the transaction
   (`stage_local`): `bucket=N/part-*.parquet`, rows sorted by the table's LAYOUT key inside
   each file, row groups of about layout.ROW_GROUP_BYTES (scopes.ROWS_ROW_GROUP_BYTES for
   index_scope_rows), the manifest entry recording the same partition and sort columns as
   Spark's writer. Buckets are Spark's `pmod(xxhash64(key), buckets)` (xxh.py). The commit
   is one transaction: an exception deletes the staged folders, a killed process leaves them
   unreferenced (never read).

An update with new edges merges them into the committed index (store/duckdb/index_update.py),
and falls back to `build_index` where that does not apply.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from store import progress
from store import schema as S
from store.arrays import unique
from store.duckdb.tables import arrow_schema
from store.engine import duckdb_connect
from store.errors import UserError
from store.index import layout as L
from store.index.scopes import REL_ANCESTOR, REL_COMPLEX, REL_EDGE, ROWS_ROW_GROUP_BYTES, source_segments
from store.index.splits import UNKNOWN_TABLE, plan_meta, plan_splits, split_levels
from store.index.xxh import buckets_of

_NO = np.iinfo(np.int64).max  # "no value" in min-reductions over codes


# ---------------------------------------------------------------------------- encoding
def encode(*arrays) -> tuple[object, list[np.ndarray]]:
    """One sorted dictionary of the strings of all `arrays` and each array's codes (int32, or
    int64 past 2**31 distinct strings).

    Codes follow the dictionary's UTF-8 byte order, the order Spark compares strings in."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    # empty chunks left out: dictionary_encode drops them, which would shift the codes below
    per_array = [[c for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a]) if len(c)] for a in arrays]
    chunks = [c.cast(pa.string()) if not pa.types.is_string(c.type) else c for cs in per_array for c in cs]
    if not chunks or sum(len(c) for c in chunks) == 0:
        return pa.array([], pa.string()), [np.zeros(len(a), np.int32) for a in arrays]
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, pa.string()))
    dictionary = encoded.chunks[-1].dictionary if encoded.num_chunks else pa.array([], pa.string())
    order = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), np.int32 if len(order) < 2**31 else np.int64)
    rank[order] = np.arange(len(order), dtype=rank.dtype)
    codes = [rank[c.indices.to_numpy(zero_copy_only=False)] for c in encoded.chunks]
    out, at = [], 0
    for cs in per_array:
        n = len(cs)
        part = codes[at:at + n]
        out.append(np.concatenate(part) if part else np.zeros(0, rank.dtype))
        at += n
    return dictionary.take(pa.array(order)), out


def first_of_label(labels: np.ndarray, k: int) -> np.ndarray:
    """For each element, the smallest index with its label (labels 0..k-1 of elements in code
    order: the smallest member of its component)."""
    first = np.full(k, len(labels), np.int64)
    np.minimum.at(first, labels, np.arange(len(labels), dtype=np.int64))
    return first[labels]


def components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Weakly connected components of nodes 0..n-1: each node's smallest member (a code, of
    the dtype of `src`)."""
    from scipy.sparse import csr_matrix  # deferred: only this path needs scipy
    from scipy.sparse.csgraph import connected_components  # deferred: only this path needs scipy

    if n == 0:
        return np.zeros(0, np.int64)
    graph = csr_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n))
    k, labels = connected_components(graph, directed=True, connection="weak")
    del graph
    return first_of_label(labels, k).astype(src.dtype if len(src) else np.int64)


def join_index(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (i, j) with left[i] == right[j]: an inner join on integer keys."""
    order = np.argsort(right, kind="stable")
    ordered = right[order]
    lo = np.searchsorted(ordered, left, "left")
    cnt = np.searchsorted(ordered, left, "right") - lo
    li = np.repeat(np.arange(len(left)), cnt)
    offsets = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return li, order[np.repeat(lo, cnt) + offsets]


# ---------------------------------------------------------------------------- reading
@dataclasses.dataclass
class Graph:
    """A store's derivation graph as codes: ids sorted, raw edge rows, distinct triples."""

    ids: object  # pyarrow StringArray, sorted: code -> id
    raw_src: np.ndarray  # per row of `edges` (duplicates included): src code
    raw_dst: np.ndarray
    process: object  # pyarrow array: the process of each row of `edges`
    src: np.ndarray  # distinct triples (src, dst, op) as codes
    dst: np.ndarray
    op: np.ndarray  # code into ops
    ops: object  # pyarrow StringArray, sorted
    table: np.ndarray  # per node: code into tables
    tables: object  # pyarrow StringArray, sorted (includes '' when a value has no table)

    @property
    def n(self) -> int:
        return len(self.ids)


def _relation(st, con, name: str):
    """A committed core table as a relation on DuckDB connection `con`, read from exactly the
    files of the store's version (store/duckdb/tables.py lists them)."""

    tables = st.local()
    files = tables.files(name)
    if not files:
        return con.from_arrow(arrow_schema(tables.schema_json(name)).empty_table())
    return con.read_parquet(files)


def _arrow(st, name: str, columns: Sequence[str], aggregate=None):
    """Columns of a committed table (or `aggregate(relation)`) as a pyarrow Table, read on a
    DuckDB connection of its own, closed after: its buffers do not outlive the read."""
    import duckdb  # deferred: only this path needs duckdb

    con = duckdb_connect()
    try:
        rel = _relation(st, con, name)
        rel = aggregate(rel) if aggregate else rel.project(*[duckdb.ColumnExpression(c) for c in columns])
        return rel.to_arrow_table()
    finally:
        con.close()


def read_graph(st) -> Graph:
    """The store's derivation triples and each value's table, encoded (see module docstring)."""
    import duckdb  # deferred: only this path needs duckdb
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    with progress.step("read edges", total=None) as step:
        edges = _arrow(st, S.EDGES, (S.SRC, S.DST, S.PROCESS))
        step.advance(edges.num_rows)
    if edges.num_rows == 0:
        raise UserError(f"nothing to index: store {st.root} has no derivation edges yet",
                        hint="ingest a bundle or a triples file first (strata ingest FILE)")
    with progress.step("encode ids", total=edges.num_rows) as step:
        ids, (raw_src, raw_dst) = encode(edges.column(S.SRC), edges.column(S.DST))
        ops, (raw_op,) = encode(edges.column(S.PROCESS))
        n, n_ops = len(ids), max(len(ops), 1)
        # distinct triples: one integer key per (src, dst, op) when it fits, else a row sort
        if n * n * n_ops < 2**62:
            keys = unique((raw_src.astype(np.int64) * n + raw_dst) * n_ops + raw_op)
            op = (keys % n_ops).astype(raw_op.dtype)
            pair = keys // n_ops
            src, dst = (pair // n).astype(raw_src.dtype), (pair % n).astype(raw_src.dtype)
        else:
            stacked = np.unique(np.stack([raw_src, raw_dst, raw_op], axis=1), axis=0)
            src, dst, op = stacked[:, 0], stacked[:, 1], stacked[:, 2]
        step.advance(edges.num_rows)
    with progress.step("read tables", total=None) as step:
        col = duckdb.ColumnExpression
        top = _arrow(st, S.ANCESTORS, (), lambda rel: rel.aggregate(
            # largest depth; between ancestors at the same depth the largest id (build.py's rule)
            [col(S.ID), duckdb.FunctionExpression(
                "arg_max", col(S.ANCESTOR), duckdb.FunctionExpression("row", col(S.DEPTH), col(S.ANCESTOR)),
            ).alias(L.TABLE)],
            col(S.ID)))
        step.advance(top.num_rows)
        where = pc.index_in(top.column(S.ID), value_set=ids)
        known = pc.is_valid(where)
        nodes_at = pc.filter(where, known).to_numpy(zero_copy_only=False).astype(np.int64)
        names = pc.filter(top.column(L.TABLE), known)
        names = pc.fill_null(names, UNKNOWN_TABLE)
        tables, (tcodes,) = encode(pa.chunked_array([pa.array([UNKNOWN_TABLE], pa.string()),
                                                    *names.cast(pa.string()).chunks]))
        table = np.full(n, tcodes[0], np.int32)
        table[nodes_at] = tcodes[1:]
    return Graph(ids, raw_src, raw_dst, edges.column(S.PROCESS), src, dst, op, ops, table, tables)


# ---------------------------------------------------------------------------- computing
@dataclasses.dataclass
class Index:
    """The computed index as codes (see `compute`)."""

    graph: Graph
    ccid: np.ndarray  # per node: its component (a node code)
    csid: np.ndarray  # per node: its set (a node code)
    level: np.ndarray  # per node: the level its set was final at (0: unsplit component)
    split: np.ndarray  # per node: index into split_names (-1: '')
    split_names: list[str]
    splits: tuple
    workflow: tuple[tuple[str, str], ...]
    stats: dict


def workflow(graph: Graph) -> tuple[list[str], list[tuple[str, str]]]:
    """Tables and the distinct (src_table, dst_table) pairs of the triples."""
    nt = len(graph.tables)
    pairs = unique(graph.table[graph.src].astype(np.int64) * nt + graph.table[graph.dst])
    names = graph.tables.to_pylist()
    used = unique(graph.table)
    return sorted(names[t] for t in used), sorted((names[p // nt], names[p % nt]) for p in pairs.tolist())


def connected_sets(graph: Graph, ccid: np.ndarray, splits, theta: int):
    """Algorithm 3 over codes: (csid, level, split index, split names) per node."""
    n = graph.n
    csid, level = ccid.copy(), np.zeros(n, np.int32)
    split = np.full(n, -1, np.int32)
    depth, levels = split_levels(splits)
    max_level = depth if levels else 0
    names = sorted({s.name for s, _lv in levels})
    name_at = {s: i for i, s in enumerate(names)}
    table_at = {t: i for i, t in enumerate(graph.tables.to_pylist())}
    # split_of[level, table]: the split a table lies in at each level (a leaf at every deeper one)
    split_of = np.full((max_level + 1, len(table_at)), -1, np.int64)
    leaf_of = np.zeros(len(names), bool)
    for s, lv in levels:
        at = np.array([table_at[t] for t in s.tables if t in table_at], np.int64)
        k = name_at[s.name]
        leaf_of[k] = s.leaf
        if s.leaf:
            split_of[lv:, at] = k
        else:
            split_of[lv, at] = k
    size = np.bincount(ccid, minlength=n)
    active = np.flatnonzero(size[ccid] >= theta)
    group = ccid[active]
    # only triples inside large components can join active values
    inside = size[ccid[graph.src]] >= theta
    src, dst = graph.src[inside], graph.dst[inside]
    pos = np.full(n, -1, np.int64)  # active value -> its position in `active`
    with progress.step("connected sets", total=len(active)) as step:
        for lv in range(1, max_level + 1):
            if not len(active):
                break
            sp = split_of[lv][graph.table[active]]
            if (sp < 0).any():  # the plan gives every table a split at every level
                raise RuntimeError(f"split plan has no split at level {lv} for some tables")
            key = group.astype(np.int64) * len(names) + sp
            pos[:] = -1
            pos[active] = np.arange(len(active))
            ls, ld = pos[src], pos[dst]
            # Triples inside one group; groups only get finer, so the others never count again.
            inner = (ls >= 0) & (ld >= 0)
            inner[inner] = key[ls[inner]] == key[ld[inner]]
            src, dst, ls, ld = src[inner], dst[inner], ls[inner], ld[inner]
            first = components(len(active), ls, ld)
            comp = active[first]
            count = np.bincount(first, minlength=len(active))[first]
            done = (count < theta) | leaf_of[sp]
            fin = active[done]
            csid[fin], level[fin], split[fin] = comp[done], lv, sp[done]
            step.advance(len(fin))
            active, group = active[~done], comp[~done]
    return csid, level, split, names


def compute(graph: Graph, params) -> Index:
    """Components, split plan and connected sets of an encoded graph."""
    t0 = time.perf_counter()
    with progress.step("components", total=len(graph.src)) as step:
        ccid = components(graph.n, graph.src, graph.dst)
        step.advance(len(graph.src))
    t1 = time.perf_counter()
    tables, wf = workflow(graph)
    splits = plan_splits(tables, wf, bands=params.bands, user=params.splits)
    csid, level, split, names = connected_sets(graph, ccid, splits, params.theta)
    stats = {"components_s": t1 - t0, "sets_s": time.perf_counter() - t1}
    return Index(graph, ccid, csid, level, split, names, splits, tuple(wf), stats)


# ---------------------------------------------------------------------------- writing
def _field(name: str, type_: str, nullable: bool) -> dict:
    return {"metadata": {}, "name": name, "nullable": nullable, "type": type_}


# The schemas Spark's writer records for the index tables (nullability as its plans infer it),
# so a table written here has exactly the manifest entry a Spark build gives it.
_STR, _INT, _LONG = "string", "integer", "long"
SCHEMAS: dict[str, list[dict]] = {
    L.NODES: [_field("id", _STR, True), _field(L.TABLE, _STR, False), _field(L.CCID, _STR, True),
              _field(L.CSID, _STR, True)],
    L.TRIPLES: [_field(c, _STR, True) for c in ("src", "dst", L.OP, L.CCID, L.SRC_CSID, L.DST_CSID)],
    L.SETDEPS: [_field(c, _STR, True) for c in (L.CCID, L.SRC_CSID, L.DST_CSID)],
    L.SETS: [_field(L.CSID, _STR, True), _field(L.CCID, _STR, True), _field(L.LEVEL, _INT, False),
             _field(L.SPLIT, _STR, False), _field(L.N_NODES, _LONG, False), _field(L.N_TRIPLES, _LONG, False)],
    L.COMPONENTS: [_field(L.CCID, _STR, True), _field(L.N_NODES, _LONG, True), _field(L.N_TRIPLES, _LONG, True),
                   _field(L.N_SETS, _LONG, False)],
    L.SCOPE_NODES: [_field("id", _STR, True), _field("scope", _STR, True), _field("scope_rows", _LONG, False),
                    _field("scope_bucket", _INT, True)],
    L.SCOPE_ROWS_TABLE: [_field("scope", _STR, True), _field("rel", _STR, False),
                         *[_field(c, _STR, True) for c in "abcd"]],
}


def schema_json(name: str) -> str:
    """The Spark schema JSON of an index table as its manifest entry records it (with `bucket`)."""
    return json.dumps({"fields": [*SCHEMAS[name], _field(L.BUCKET, _INT, True)], "type": "struct"},
                      separators=(",", ":"))


def sort_order(bucket: np.ndarray, keys: Sequence[np.ndarray]) -> np.ndarray:
    """Row order by (bucket, *keys): integer keys only (codes sort like their strings)."""
    if not keys:
        return np.argsort(bucket, kind="stable")
    order = np.lexsort([*reversed(keys)]) if len(keys) > 1 else np.argsort(keys[0], kind="stable")
    return order[np.argsort(bucket[order].astype(np.int16 if bucket.max(initial=0) < 2**15 else np.int32),
                            kind="stable")]


def stage(tx, name: str) -> str:
    """A new segment folder that replaces index table `name` in transaction `tx`, recorded with
    the partition and sort columns Spark's writer records (layout.LAYOUT)."""
    folder = tx.stage_local(name, schema_json(name), (L.BUCKET,), L.LAYOUT[name][1])
    if folder is None:
        raise UserError("the in-process index build writes stores on this machine's file system only",
                        hint="use --engine spark for a store on a Hadoop URI")
    return folder


def write_bucketed(tx, name: str, n_rows: int, bucket: np.ndarray, order: np.ndarray,
                   rows_of: Callable[[np.ndarray], object], row_group_bytes: int = L.ROW_GROUP_BYTES) -> None:
    """Write table `name` inside `tx`: one file per non-empty bucket with the rows
    `rows_of(row numbers)` in `order`, row groups of about `row_group_bytes` (uncompressed)."""
    import pyarrow.parquet as pq  # deferred: only this path needs pyarrow

    folder = stage(tx, name)
    ordered = bucket[order]
    present = unique(ordered)
    bounds = np.searchsorted(ordered, present, "left"), np.searchsorted(ordered, present, "right")
    tag = uuid.uuid4()

    def one(i: int) -> int:
        b, lo, hi = int(present[i]), int(bounds[0][i]), int(bounds[1][i])
        table = rows_of(order[lo:hi])
        per_row = max(1, table.nbytes // max(table.num_rows, 1))
        path = os.path.join(folder, f"{L.BUCKET}={b}")
        os.makedirs(path, exist_ok=True)
        pq.write_table(table, os.path.join(path, f"part-{b:05d}-{tag}.c000.zstd.parquet"),
                       compression="zstd", row_group_size=max(1024, row_group_bytes // per_row))
        return hi - lo

    with progress.step(f"write {name}", total=n_rows) as step, ThreadPoolExecutor(2) as pool:
        for done in pool.map(one, range(len(present))):
            step.advance(done)


def _take(dictionary, codes: np.ndarray):
    import pyarrow as pa  # deferred: only this path needs pyarrow

    return dictionary.take(pa.array(codes, pa.int64()))


def write_index_tables(tx, ix: Index, buckets: int) -> dict:
    """The five CSProv tables of `ix` inside `tx`; returns the counts for the manifest meta."""
    import pyarrow as pa  # deferred: only this path needs pyarrow

    g = ix.graph
    ids, n = g.ids, g.n
    bucket_of = buckets_of(ids, buckets)
    split_names = pa.array(["", *ix.split_names], pa.string())
    # index_nodes: sorted by id = by code
    node_codes = np.arange(n)
    write_bucketed(tx, L.NODES, n, bucket_of, sort_order(bucket_of, [node_codes]), lambda r: pa.table({
        "id": _take(ids, r), L.TABLE: _take(g.tables, g.table[r]), L.CCID: _take(ids, ix.ccid[r]),
        L.CSID: _take(ids, ix.csid[r])}))
    # index_triples: bucket of ccid, sorted by ccid, dst_csid, dst
    t_cc, t_src_cs, t_dst_cs = ix.ccid[g.dst], ix.csid[g.src], ix.csid[g.dst]
    write_bucketed(tx, L.TRIPLES, len(g.src), bucket_of[t_cc],
                   sort_order(bucket_of[t_cc], [t_cc, t_dst_cs.astype(np.int64) * n + g.dst]), lambda r: pa.table({
                       "src": _take(ids, g.src[r]), "dst": _take(ids, g.dst[r]), L.OP: _take(g.ops, g.op[r]),
                       L.CCID: _take(ids, t_cc[r]), L.SRC_CSID: _take(ids, t_src_cs[r]),
                       L.DST_CSID: _take(ids, t_dst_cs[r])}))
    # index_setdeps: distinct (src_csid, dst_csid) across sets (ccid follows from the set)
    cross = t_src_cs != t_dst_cs
    pairs = unique(t_src_cs[cross].astype(np.int64) * n + t_dst_cs[cross])
    d_src, d_dst = pairs // n, pairs % n
    d_cc = ix.ccid[d_dst]
    write_bucketed(tx, L.SETDEPS, len(pairs), bucket_of[d_cc], sort_order(bucket_of[d_cc], [d_cc, d_dst]),
                   lambda r: pa.table({L.CCID: _take(ids, d_cc[r]), L.SRC_CSID: _take(ids, d_src[r]),
                                       L.DST_CSID: _take(ids, d_dst[r])}))
    # index_sets: one row per set; a set's id is its smallest member, which carries its level
    sets = np.flatnonzero(ix.csid == node_codes)
    n_nodes = np.bincount(ix.csid, minlength=n)[sets].astype(np.int64)
    n_triples = np.bincount(t_dst_cs, minlength=n)[sets].astype(np.int64)
    s_cc = ix.ccid[sets]
    s_key = s_cc.astype(np.int64) * n + sets
    write_bucketed(tx, L.SETS, len(sets), bucket_of[s_cc], sort_order(bucket_of[s_cc], [s_key]),
                   lambda r: pa.table({
                       L.CSID: _take(ids, sets[r]), L.CCID: _take(ids, s_cc[r]),
                       L.LEVEL: pa.array(ix.level[sets[r]], pa.int32()),
                       L.SPLIT: _take(split_names, ix.split[sets[r]] + 1),
                       L.N_NODES: pa.array(n_nodes[r], pa.int64()), L.N_TRIPLES: pa.array(n_triples[r], pa.int64())}))
    # index_components
    comps = np.flatnonzero(ix.ccid == node_codes)
    c_nodes = np.bincount(ix.ccid, minlength=n)[comps].astype(np.int64)
    c_triples = np.bincount(t_cc, minlength=n)[comps].astype(np.int64)
    c_sets = np.bincount(s_cc, minlength=n)[comps].astype(np.int64)
    write_bucketed(tx, L.COMPONENTS, len(comps), bucket_of[comps], sort_order(bucket_of[comps], [comps]),
                   lambda r: pa.table({L.CCID: _take(ids, comps[r]), L.N_NODES: pa.array(c_nodes[r], pa.int64()),
                                       L.N_TRIPLES: pa.array(c_triples[r], pa.int64()),
                                       L.N_SETS: pa.array(c_sets[r], pa.int64())}))
    return {"components": len(comps), "nodes": int(n), "triples": len(g.src), "sets": len(sets),
            "split_components": int((c_sets > 1).sum()), "set_dependencies": len(pairs)}


# ---------------------------------------------------------------------------- influence scopes
def _has_roots(st) -> bool:
    """True when some element has no parent (its only ancestors row is itself, depth 0)."""
    import duckdb  # deferred: only this path needs duckdb

    col = duckdb.ColumnExpression
    roots = _arrow(st, S.ANCESTORS, (), lambda rel: rel.aggregate(
        [col(S.ID), duckdb.FunctionExpression("max", col(S.DEPTH)).alias("d")], col(S.ID))
        .filter(col("d") == duckdb.ConstantExpression(0)).limit(1))
    return roots.num_rows > 0


def write_scopes(tx, st, buckets: int, edges: tuple | None = None) -> dict:
    """Influence scopes (scopes.py's definitions) computed with arrays and written inside `tx`;
    returns the meta entries recording their sources. `edges`: (ids, src codes, dst codes,
    process) of the rows of `edges`, when already read."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow


    if not _has_roots(st):  # no scopes at all: both tables are empty
        none = np.zeros(0, np.int32)
        for name in (L.SCOPE_NODES, L.SCOPE_ROWS_TABLE):
            write_bucketed(tx, name, 0, none, none, lambda r: None)
        return {"scope_segments": source_segments(st)}
    with progress.step("read scope sources", total=None) as step:
        anc = _arrow(st, S.ANCESTORS, (S.ID, S.ANCESTOR, S.DEPTH))
        cx = _arrow(st, S.COMPLEX, (S.VERTEX, S.CE, S.ELEM))
        vx = _arrow(st, S.VERTICES, (S.ID, S.KIND))
        if edges is None:
            table = _arrow(st, S.EDGES, (S.SRC, S.DST, S.PROCESS))
            e_ids, (e_src, e_dst) = encode(table.column(S.SRC), table.column(S.DST))
            process = table.column(S.PROCESS)
            del table
        else:
            e_ids, e_src, e_dst, process = edges
        step.advance(anc.num_rows + cx.num_rows + vx.num_rows + len(e_src))
    with progress.step("influence scopes", total=anc.num_rows + cx.num_rows + len(e_src)) as step:
        elems, (a_id, a_anc, c_elem) = encode(anc.column(S.ID), anc.column(S.ANCESTOR), cx.column(S.ELEM))
        ne = len(elems)
        depth = anc.column(S.DEPTH).to_numpy()
        max_depth = np.full(ne, -1, np.int64)
        np.maximum.at(max_depth, a_id, depth)
        is_root = np.zeros(ne, bool)
        is_root[a_id] = True
        is_root &= max_depth == 0
        under = is_root[a_anc]  # elem_root rows: (id, a root it lies under)
        er_id, er_root = a_id[under], a_anc[under]
        verts, (v_e, c_vertex, v_id) = encode(e_ids, cx.column(S.VERTEX), vx.column(S.ID))
        nv = len(verts)
        src, dst = v_e[e_src], v_e[e_dst]
        # vert_root: distinct (vertex, root) over complex rows whose element lies under a root
        li, ri = join_index(c_elem, er_id)
        vr = unique(c_vertex[li].astype(np.int64) * max(ne, 1) + er_root[ri])
        vr_v, vr_r = vr // max(ne, 1), vr % max(ne, 1)
        e_min = np.full(ne, _NO, np.int64)
        np.minimum.at(e_min, er_id, er_root)
        v_min = np.full(nv, _NO, np.int64)
        np.minimum.at(v_min, vr_v, vr_r)
        link_a = [e_min[er_id], v_min[vr_v]]
        link_b = [er_root, vr_r]
        both = (v_min[src] != _NO) & (v_min[dst] != _NO)
        link_a.append(v_min[src[both]])
        link_b.append(v_min[dst[both]])
        la, lb = np.concatenate(link_a), np.concatenate(link_b)
        cross = la != lb
        scope_of = components(ne, la[cross], lb[cross])  # a root's scope: smallest linked root
        v_has, e_has = v_min != _NO, e_min != _NO
        v_scope = np.where(v_has, scope_of[np.where(v_has, v_min, 0)], -1)
        e_scope = np.where(e_has, scope_of[np.where(e_has, e_min, 0)], -1)
        # rows: complex (joined with vertices), ancestors, edges, each in its scope
        sel = np.flatnonzero(v_has[c_vertex])
        ci, vi = join_index(c_vertex[sel], v_id)
        ci = sel[ci]
        ai = np.flatnonzero(e_has[a_id])
        ei = np.flatnonzero(v_has[src])
        scope = np.concatenate([e_scope[a_id[ai]], v_scope[c_vertex[ci]], v_scope[src[ei]]])
        rel = np.repeat(np.arange(3, dtype=np.int8), [len(ai), len(ci), len(ei)])  # a < c < e
        which = np.concatenate([ai, np.arange(len(ci)), ei])  # complex: position in (ci, vi)
        sizes = np.bincount(scope, minlength=ne).astype(np.int64)
        step.advance(anc.num_rows + cx.num_rows + len(e_src))
    scope_keys = unique(scope)
    scope_bucket = np.zeros(ne, np.int32)
    scope_bucket[scope_keys] = buckets_of(_take(elems, scope_keys), buckets)
    # index_scope_nodes: the vertices with a scope that has rows
    nodes = np.flatnonzero(v_has)
    nodes = nodes[sizes[v_scope[nodes]] > 0]
    node_bucket = buckets_of(_take(verts, nodes), buckets)
    write_bucketed(tx, L.SCOPE_NODES, len(nodes), node_bucket, sort_order(node_bucket, [nodes]),
                   lambda r: pa.table({
                       "id": _take(verts, nodes[r]), "scope": _take(elems, v_scope[nodes[r]]),
                       "scope_rows": pa.array(sizes[v_scope[nodes[r]]], pa.int64()),
                       "scope_bucket": pa.array(scope_bucket[v_scope[nodes[r]]], pa.int32())}))
    ce = cx.column(S.CE)
    kinds = vx.column(S.KIND)
    null = pa.nulls(0, pa.string())

    def rows_of(r: np.ndarray):
        parts, at = [], []
        for k, letter in enumerate((REL_ANCESTOR, REL_COMPLEX, REL_EDGE)):
            mine = np.flatnonzero(rel[r] == k)
            if not len(mine):
                continue
            i = which[r[mine]]
            if letter == REL_ANCESTOR:
                cols = (_take(elems, a_id[i]), _take(elems, a_anc[i]), pa.nulls(len(i), pa.string()),
                        pa.nulls(len(i), pa.string()))
            elif letter == REL_COMPLEX:
                c = ci[i]
                cols = (_take(verts, c_vertex[c]), pc.cast(ce.take(pa.array(c)), pa.string()),
                        _take(elems, c_elem[c]), kinds.take(pa.array(vi[i])))
            else:
                cols = (_take(verts, src[i]), _take(verts, dst[i]), process.take(pa.array(i)),
                        pa.nulls(len(i), pa.string()))
            parts.append(pa.table({"scope": _take(elems, scope[r[mine]]),
                                   "rel": pa.array([letter] * len(i), pa.string()),
                                   **dict(zip("abcd", cols, strict=True))}))
            at.append(mine)
        if not parts:
            return pa.table({"scope": null, "rel": null, "a": null, "b": null, "c": null, "d": null})
        table = pa.concat_tables(parts)
        back = np.empty(len(r), np.int64)
        back[np.concatenate(at)] = np.arange(len(r))
        return table.take(pa.array(back))

    write_bucketed(tx, L.SCOPE_ROWS_TABLE, len(scope), scope_bucket[scope],
                   sort_order(scope_bucket[scope], [scope.astype(np.int64) * 3 + rel]), rows_of, ROWS_ROW_GROUP_BYTES)
    return {"scope_segments": source_segments(st)}


# ---------------------------------------------------------------------------- entry points
def _base_meta(st, params, ix: Index | None) -> dict:
    meta = {
        "theta": params.theta, "bands": params.bands, "buckets": params.buckets,
        "user_splits": [list(s) for s in params.splits] if params.splits else None,
        "engine": params.engine.value,
    }
    if ix is not None:
        meta.update(plan_meta(ix.splits, ix.workflow))
    meta["edges_segments"] = list(L.edge_segments(st))
    return meta


def build_index(st, params, message: str = "index: full build", extra_meta: dict | None = None,
                scopes: Callable[[object], dict] | None = None) -> dict:
    """Build the whole index in this process and commit it (one transaction); returns the meta.
    `scopes(tx)`, when given, writes the influence scopes instead of `write_scopes` and returns
    their meta entries (an update merges into the committed ones: store/duckdb/scope_update.py)."""
    t0 = time.perf_counter()
    graph = read_graph(st)
    ix = compute(graph, params)
    meta = _base_meta(st, params, ix)
    with st.transaction(message) as tx:
        meta.update(write_index_tables(tx, ix, params.buckets))
        meta.update({"mode": "full", "builder": "local", **(extra_meta or {})})
        meta.update({k: round(v, 3) for k, v in ix.stats.items()})
        # the scopes need only the rows of `edges`: free the rest of the graph first
        edges = (graph.ids, graph.raw_src, graph.raw_dst, graph.process)
        del ix, graph
        t1 = time.perf_counter()
        meta.update(write_scopes(tx, st, params.buckets, edges) if scopes is None else scopes(tx))
        meta["scopes_s"] = round(time.perf_counter() - t1, 3)
        meta["build_s"] = round(time.perf_counter() - t0, 3)
        tx.set_meta(L.META_KEY, meta)
    return meta
