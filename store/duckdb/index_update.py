"""Incremental update of the component index in this process (no Spark): new edges merged into
the committed index, reading and writing only what they touch.

It applies when the edges were only appended since the index was built (the index meta's
`edges_segments` are all still committed), the meta records the split plan in full, the tables
of indexed values did not change, the split plan over the new workflow graph is the one the
index was built with, and the affected components hold at most MAX_AFFECTED_SHARE of the
index's triples (the merge costs about twice the full build per triple it handles). Otherwise
(`Fallback`, its reason recorded as `update_reason`) the component tables are recomputed
(store/duckdb/index.py `build_index`), the influence scopes merged all the same. The steps
mirror the Spark merge (store/spark/index/maintenance.py):

1. **New triples**: the rows of the `edges` segments the index does not cover, made distinct.
2. **Touched values**: their rows of `index_nodes`, read by key (`files.read_keys`: the bucket
   of each id, then only the row groups whose statistics hold it).
3. **Components**: connected components of the new triples plus (touched value -> its old
   ccid). An old ccid is the smallest id of its component, so each label, the smallest id of a
   merged component, is what a full build gives. The affected components are these labels.
4. **Their rows**: `index_triples`, `index_sets`, `index_setdeps`, `index_components` of the
   old components merged into them (bucketed by ccid and sorted by it: a few row groups each),
   and the `index_nodes` rows of the members whose row may change (a component whose id
   changes, or one with at least θ values, whose sets are recomputed).
5. **Tables** of new values (and of indexed values whose `ancestors` rows changed, which must
   be unchanged) from the `ancestors` rows of just those ids; the workflow graph gains the
   table pairs of the new triples, and the split plan must stay the one in the meta. (This is
   checked before step 4 reads anything, so a fallback costs little; so is the cost rule, from
   the affected components' rows of `index_components`.)
6. **Sets** (Algorithm 3, `index.connected_sets`) inside the affected components with at
   least θ values; the others are one set each. Set dependencies and summaries follow.
7. **Write**: the new rows of the affected keys are compared with the old ones (triples and
   nodes as integer codes, the small tables as whole rows), giving the rows removed (changed or
   gone) and added. Every table stays one segment (what the readers expect): in each bucket, a
   file that holds no removed row is hard-linked into the new segment folder (row-group
   statistics of the bucket key rule most files out unread), a file that holds some is written
   again without them, in its order, as pieces of about PIECE_BYTES; the bucket's added rows
   become one more file sorted by the table's sort columns; a bucket that gathers more than
   MAX_ADDED_FILES such files is merged and sorted into pieces (store/duckdb/index_rewrite.py).
   The full build writes one file per bucket, so the first update that changes a bucket writes
   all of it again, in pieces; later ones only the pieces they hit. The influence scopes take
   the appended rows (store/duckdb/scope_update.py), unless the store had and still has no
   roots (empty scope tables, kept). All of it is one transaction.

What this does not bound by the append: a touched component with at least θ values is read
whole (its triples, its members' `index_nodes` rows) and Algorithm 3 runs over all of it; new
values' tables are looked up in all of `ancestors`; and the commit hashes every file of the new
segments, hard-linked ones included (store/seal.py).

The lineage skeletons of large components that were not affected are moved to the new index's
folder (`index_reads.carry_skeletons`); `write_skeletons` then writes those of affected ones.
The result equals a full in-process build over the same edges, table for table
(tests/index/test_index_inmemory.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from store import progress
from store import schema as S
from store.arrays import distinct_rows, unique
from store.duckdb import index as X
from store.duckdb.index_rewrite import Fallback, conform, one_segment_folder, rewrite_table, row_strings, table_schema
from store.duckdb.scope_update import update_scopes
from store.engine import duckdb_connect
from store.index import layout as L
from store.index.files import read_keys
from store.index.scopes import source_segments
from store.index.splits import UNKNOWN_TABLE, plan_meta, plan_splits
from store.segments import parquet_files, segment_files

# The merge reads, recomputes and writes again the affected components' rows at about twice the
# full build's cost per triple (benchmarks/bench_index_update.py: the scale-1 trace and an
# OpenLineage store): it runs while the affected components hold at most this share of the
# index's triples, else the component tables are recomputed whole (the scopes still merged).
MAX_AFFECTED_SHARE = 0.5
_COMPONENT_TABLES = (L.NODES, L.TRIPLES, L.SETDEPS, L.SETS, L.COMPONENTS)


def _read(files: Sequence[str], columns: Sequence[str], aggregate=None):
    """Columns of these Parquet files (or `aggregate(relation)`) as a pyarrow Table."""
    import duckdb  # deferred: only this path needs duckdb
    import pyarrow as pa  # deferred: only this path needs pyarrow

    if not files:
        return pa.table({c: pa.array([], pa.string()) for c in columns})
    con = duckdb_connect()
    try:
        rel = con.read_parquet(list(files))
        rel = aggregate(rel, con) if aggregate else rel.project(*[duckdb.ColumnExpression(c) for c in columns])
        return rel.to_arrow_table()
    finally:
        con.close()


def _tables_of(st, ids) -> dict[str, str]:
    """The table (outermost ancestor: largest depth, then largest id, as read_graph) of each of
    `ids` that has `ancestors` rows, read from the committed files with the ids joined in."""
    import duckdb  # deferred: only this path needs duckdb
    import pyarrow as pa  # deferred: only this path needs pyarrow

    if not len(ids):
        return {}
    col = duckdb.ColumnExpression
    wanted = pa.table({S.ID: pa.array(ids, pa.string())})

    def top(rel, con):
        rel = rel.join(con.from_arrow(wanted), S.ID, how="semi")
        return rel.aggregate([col(S.ID), duckdb.FunctionExpression(
            "arg_max", col(S.ANCESTOR), duckdb.FunctionExpression("row", col(S.DEPTH), col(S.ANCESTOR)),
        ).alias(L.TABLE)], col(S.ID))

    out = _read(st.local().files(S.ANCESTORS), (), top)
    return dict(zip(out.column(S.ID).to_pylist(), out.column(L.TABLE).to_pylist(), strict=True))


def _changes(name: str, old, new):
    """(removed, added): the old rows that are not among the new ones and the new rows that are
    not among the old ones (whole rows compared)."""
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    cols = table_schema(name).names
    ko, kn = row_strings(old, cols), row_strings(new, cols)
    return old.filter(pc.invert(pc.is_in(ko, value_set=kn))), new.filter(pc.invert(pc.is_in(kn, value_set=ko)))


def _new_edges(st, meta: dict):
    """The distinct (src, dst, op) of the edges the index does not cover, and the current edge
    segments; Fallback when a covered segment is gone."""
    import pyarrow as pa  # deferred: only this path needs pyarrow

    current = list(L.edge_segments(st))
    covered = set(meta.get("edges_segments") or [])
    if not covered <= set(current):
        raise Fallback("edges were rewritten or removed since the index was built, not only appended")
    added = [s for s in current if s not in covered]
    rows = _read(segment_files(st.storage, added), (S.SRC, S.DST, S.PROCESS))
    rows = rows.rename_columns(["src", "dst", L.OP])
    rows = distinct_rows(rows, ["src", "dst", L.OP]) if rows.num_rows else rows
    return rows.select(["src", "dst", L.OP]).cast(pa.schema([(c, pa.string()) for c in ("src", "dst", L.OP)])), current


@dataclasses.dataclass
class AncestorChanges:
    """What changed in `ancestors` since the index was built."""

    ids: list[str]  # ids with rows in an added or removed segment: their table may differ
    removed: bool  # some segment the index saw is gone
    root_candidates: list[str]  # ids whose added rows are all at depth 0 (a new root, unless deeper rows exist)


def _ancestor_changes(st, meta: dict) -> AncestorChanges:
    import duckdb  # deferred: only this path needs duckdb

    scope = meta.get("scope_segments") or {}
    if S.ANCESTORS not in scope:
        raise Fallback("the index meta does not record the ancestors segments it saw")
    entry = st.manifest.tables.get(S.ANCESTORS)
    current = list(entry.segments) if entry is not None else []
    before = list(scope[S.ANCESTORS])
    added = [s for s in current if s not in set(before)]
    removed = [s for s in before if s not in set(current)]
    if not added and not removed:
        return AncestorChanges([], False, [])
    col = duckdb.ColumnExpression
    rows = _read(segment_files(st.storage, [*added, *removed]), (), lambda rel, con: rel.aggregate(
        [col(S.ID), duckdb.FunctionExpression("max", col(S.DEPTH)).alias("d")], col(S.ID)))
    ids = rows.column(S.ID).to_pylist()
    depth = rows.column("d").to_pylist()
    return AncestorChanges(ids, bool(removed), [i for i, d in zip(ids, depth, strict=True) if d == 0])


def _scopes_stay_empty(st, meta: dict, changes: AncestorChanges) -> bool:
    """True when the influence scopes had no roots (empty tables) and still have none: `ancestors`
    was only appended to, and no id of the appended rows is a root (an element with no row
    deeper than 0). Then write_scopes would write the same empty tables."""
    import duckdb  # deferred: only this path needs duckdb

    entry = st.manifest.tables.get(L.SCOPE_ROWS_TABLE)
    if entry is None or len(entry.segments) != 1 or changes.removed:
        return False
    folder = st.storage.file_path(entry.segments[0])
    if folder is None or parquet_files(folder):
        return False
    if not changes.root_candidates:
        return True
    import pyarrow as pa  # deferred: only this path needs pyarrow

    col = duckdb.ColumnExpression
    wanted = pa.table({S.ID: pa.array(changes.root_candidates, pa.string())})
    deepest = _read(st.local().files(S.ANCESTORS), (), lambda rel, con: rel.join(
        con.from_arrow(wanted), S.ID, how="semi").aggregate(
        [col(S.ID), duckdb.FunctionExpression("max", col(S.DEPTH)).alias("d")], col(S.ID)))
    return all(d > 0 for d in deepest.column("d").to_pylist())


def update_index(st, params, meta: dict, extra_meta: dict | None = None) -> dict:
    """Merge the edges committed since the index into it (module docstring); a full in-process
    build when that does not apply (`update` `recomputed`, `update_reason` saying why)."""
    t0 = time.perf_counter()
    try:
        return _incremental(st, params, meta, extra_meta or {}, t0)
    except Fallback as why:  # the component tables recomputed; the scopes merged where they can be
        return X.build_index(st, params, "index: update (recomputed in-process)",
                             {**(extra_meta or {}), "update": "recomputed", "update_reason": str(why)},
                             scopes=_scope_writer(st, meta, params.buckets))


def _scope_writer(st, meta: dict, buckets: int):
    """What writes the scopes inside a recompute's transaction: nothing when they stay empty
    (no roots before or after: the empty tables are kept), else `update_scopes`."""
    try:
        empty = _scopes_stay_empty(st, meta, _ancestor_changes(st, meta))
    except Fallback:
        empty = False
    if empty:
        return lambda tx: {"scope_segments": source_segments(st)}
    return lambda tx: update_scopes(tx, st, meta, buckets)


def _incremental(st, params, meta: dict, extra_meta: dict, t0: float) -> dict:  # noqa: C901, PLR0915
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    from store.duckdb.index_reads import LocalIndex, carry_skeletons  # deferred: the DuckDB wing

    if "splits" not in meta or "workflow" not in meta:
        raise Fallback("the index meta lists no split plan (more than 10,000 tables)")
    buckets, theta = int(meta["buckets"]), params.theta
    folders = {name: one_segment_folder(st, name) for name in _COMPONENT_TABLES}
    timings: dict[str, float] = {}
    # 1-2. new triples, the touched values' rows
    with progress.step("read new edges", total=None) as step:
        new, edge_segments = _new_edges(st, meta)
        anc_changes = _ancestor_changes(st, meta)
        step.advance(new.num_rows)
    touched = pc.unique(pa.chunked_array([new.column("src"), new.column("dst")]).combine_chunks())
    old_touched = conform(L.NODES, read_keys(folders[L.NODES], buckets, "id", touched))
    # 3. merged components over (new triples + touched value -> old ccid)
    ids_c, (s_c, d_c, ot_id, ot_cc) = X.encode(new.column("src"), new.column("dst"),
                                               old_touched.column("id"), old_touched.column(L.CCID))
    lab = X.components(len(ids_c), np.concatenate([s_c, ot_id]), np.concatenate([d_c, ot_cc]))
    is_old = np.zeros(len(ids_c), bool)
    is_old[ot_id] = True
    o0 = unique(ot_cc)
    o0_ids, o0_lab = X._take(ids_c, o0), X._take(ids_c, lab[o0])
    nv = unique(np.concatenate([s_c, d_c]))
    nv = nv[~is_old[nv]]
    nv_ids, nv_lab = X._take(ids_c, nv), X._take(ids_c, lab[nv])
    timings["touched_s"] = time.perf_counter() - t0
    # 5 (checked before reading more). tables: new values', and those of indexed values whose
    # ancestors changed (must not differ); the split plan must stay
    t1 = time.perf_counter()
    stored: dict[str, str] = {}
    if anc_changes.ids:
        hit = conform(L.NODES, read_keys(folders[L.NODES], buckets, "id", pa.array(anc_changes.ids, pa.string())))
        stored = dict(zip(hit.column("id").to_pylist(), hit.column(L.TABLE).to_pylist(), strict=True))
    found = _tables_of(st, nv_ids.to_pylist() + list(stored))
    for v, t in stored.items():
        if (found.get(v) or UNKNOWN_TABLE) != t:
            raise Fallback(f"the table of indexed value {v!r} changed ({t!r} -> {found.get(v) or UNKNOWN_TABLE!r})")
    table_of = dict(zip(old_touched.column("id").to_pylist(), old_touched.column(L.TABLE).to_pylist(), strict=True))
    nv_tables = [found.get(v) or UNKNOWN_TABLE for v in nv_ids.to_pylist()]
    table_of.update(zip(nv_ids.to_pylist(), nv_tables, strict=True))
    wf = {tuple(p) for p in meta["workflow"]}
    wf |= set(zip([table_of[v] for v in new.column("src").to_pylist()],
                  [table_of[v] for v in new.column("dst").to_pylist()], strict=True))
    wf = sorted(wf)
    old_tables = {t for top in meta["splits"] for t in top["tables"]}
    tables = sorted(old_tables | set(nv_tables))
    splits = plan_splits(tables, wf, bands=params.bands, user=params.splits)
    plan = plan_meta(splits, wf)
    if plan.get("splits") != meta["splits"]:
        raise Fallback("the split plan changed (the workflow graph gained tables or edges that move them)")
    timings["tables_s"] = time.perf_counter() - t1
    # 4. the old rows of the merged components, once their size says merging costs less
    t1 = time.perf_counter()
    old = {L.COMPONENTS: conform(L.COMPONENTS, read_keys(folders[L.COMPONENTS], buckets, L.CCID, o0_ids))}
    affected_triples = int(pc.sum(old[L.COMPONENTS].column(L.N_TRIPLES)).as_py() or 0)
    if affected_triples > MAX_AFFECTED_SHARE * int(meta["triples"]):
        raise Fallback(f"the affected components hold {affected_triples:,} of the index's {int(meta['triples']):,} "
                       f"triples, more than {MAX_AFFECTED_SHARE:.0%}: a full recompute costs less")
    old.update({name: conform(name, read_keys(folders[name], buckets, L.CCID, o0_ids))
                for name in (L.TRIPLES, L.SETS, L.SETDEPS)})
    otr = old[L.TRIPLES]
    ids, (tr_s, tr_d, tr_cc, tr_scs, tr_dcs, n_s, n_d, oc, ol, vv, vl) = X.encode(
        otr.column("src"), otr.column("dst"), otr.column(L.CCID), otr.column(L.SRC_CSID),
        otr.column(L.DST_CSID), new.column("src"), new.column("dst"), o0_ids, o0_lab, nv_ids, nv_lab)
    n = len(ids)
    occ = np.full(n, -1, np.int64)  # old members: old ccid, old csid
    occ[tr_s], occ[tr_d] = tr_cc, tr_cc
    ocs = np.full(n, -1, np.int64)
    ocs[tr_s], ocs[tr_d] = tr_scs, tr_dcs
    relabel = np.full(n, -1, np.int64)
    relabel[oc] = ol
    ccid = np.full(n, -1, np.int64)
    member = occ >= 0
    ccid[member] = relabel[occ[member]]
    ccid[vv] = vl
    if (ccid < 0).any():
        raise RuntimeError("index update: a value of an affected component has no component")
    size = np.bincount(ccid, minlength=n)
    big = size[ccid] >= theta
    # members whose index_nodes row may change: their component's id changes, or it is split
    may_change = member & ((ccid != occ) | big)
    read_ids = X._take(ids, np.flatnonzero(may_change))
    old_nodes = conform(L.NODES, read_keys(folders[L.NODES], buckets, "id", read_ids))
    table_of.update(zip(old_nodes.column("id").to_pylist(), old_nodes.column(L.TABLE).to_pylist(), strict=True))
    timings["read_s"] = time.perf_counter() - t1
    # 6. sets inside the affected components
    t1 = time.perf_counter()
    names_t, (tcode,) = X.encode(pa.array([UNKNOWN_TABLE, *table_of.values()], pa.string()))
    table = np.full(n, tcode[0], np.int32)
    at = pc.index_in(pa.array(list(table_of), pa.string()), value_set=ids)
    hit = pc.is_valid(at).to_numpy(zero_copy_only=False)
    table[pc.filter(at, pc.is_valid(at)).to_numpy(zero_copy_only=False)] = tcode[1:][hit]
    ops, (o_old, o_new) = X.encode(otr.column(L.OP), new.column(L.OP))
    n_ops = max(len(ops), 1)
    int_keys = n * n * n_ops < 2**62
    if int_keys:
        keys = unique(np.concatenate([(tr_s.astype(np.int64) * n + tr_d) * n_ops + o_old,
                                        (n_s.astype(np.int64) * n + n_d) * n_ops + o_new]))
        k_op = (keys % n_ops).astype(np.int64)
        pair = keys // n_ops
        k_src, k_dst = (pair // n).astype(np.int64), (pair % n).astype(np.int64)
    else:
        stacked = np.unique(np.stack([np.concatenate([tr_s, n_s]), np.concatenate([tr_d, n_d]),
                                      np.concatenate([o_old, o_new])], axis=1).astype(np.int64), axis=0)
        k_src, k_dst, k_op = stacked[:, 0], stacked[:, 1], stacked[:, 2]
    graph = X.Graph(ids, None, None, None, k_src, k_dst, k_op, ops, table, names_t)
    csid, level, split, split_names = X.connected_sets(graph, ccid, splits, theta)
    timings["sets_s"] = time.perf_counter() - t1
    # 7. the new rows of the affected keys, compared with the old ones, written
    t1 = time.perf_counter()
    take = X._take
    all_names = pa.array(["", *split_names], pa.string())
    m = np.flatnonzero(may_change)
    chg = m[(ccid[m] != occ[m]) | (csid[m] != ocs[m])]  # members whose row changes (tables cannot)
    rows_of = np.concatenate([chg, vv]) if len(vv) else chg
    fresh = {L.NODES: pa.table({"id": take(ids, rows_of), L.TABLE: take(names_t, table[rows_of]),
                                L.CCID: take(ids, ccid[rows_of]), L.CSID: take(ids, csid[rows_of])})}
    changes = {L.NODES: (pa.table({"id": take(ids, chg)}), fresh[L.NODES])}
    t_cc, t_scs, t_dcs = ccid[k_dst], csid[k_src], csid[k_dst]
    fresh[L.TRIPLES] = pa.table({"src": take(ids, k_src), "dst": take(ids, k_dst), L.OP: take(ops, k_op),
                                 L.CCID: take(ids, t_cc), L.SRC_CSID: take(ids, t_scs), L.DST_CSID: take(ids, t_dcs)})
    if int_keys:  # old and new triples compared as integer keys: no strings built
        ko = (tr_s.astype(np.int64) * n + tr_d) * n_ops + o_old
        pos = np.minimum(np.searchsorted(keys, ko), max(len(keys) - 1, 0))
        same = (keys[pos] == ko) & (t_cc[pos] == tr_cc) & (t_scs[pos] == tr_scs) & (t_dcs[pos] == tr_dcs) \
            if len(keys) else np.zeros(len(ko), bool)
        ident = np.zeros(len(keys), bool)
        ident[pos[same]] = True
        changes[L.TRIPLES] = (otr.filter(pa.array(~same)), fresh[L.TRIPLES].filter(pa.array(~ident)))
    cross = t_scs != t_dcs
    pairs = unique(t_scs[cross] * n + t_dcs[cross])
    d_src, d_dst = pairs // n, pairs % n
    fresh[L.SETDEPS] = pa.table({L.CCID: take(ids, ccid[d_dst]), L.SRC_CSID: take(ids, d_src),
                                 L.DST_CSID: take(ids, d_dst)})
    nodes = np.arange(n)
    sets = np.flatnonzero(csid == nodes)
    s_nodes = np.bincount(csid, minlength=n)[sets]
    s_triples = np.bincount(t_dcs, minlength=n)[sets]
    fresh[L.SETS] = pa.table({L.CSID: take(ids, sets), L.CCID: take(ids, ccid[sets]),
                              L.LEVEL: pa.array(level[sets], pa.int32()), L.SPLIT: take(all_names, split[sets] + 1),
                              L.N_NODES: pa.array(s_nodes, pa.int64()), L.N_TRIPLES: pa.array(s_triples, pa.int64())})
    comps = np.flatnonzero(ccid == nodes)
    c_sets = np.bincount(ccid[sets], minlength=n)[comps]
    fresh[L.COMPONENTS] = pa.table({L.CCID: take(ids, comps),
                                    L.N_NODES: pa.array(np.bincount(ccid, minlength=n)[comps], pa.int64()),
                                    L.N_TRIPLES: pa.array(np.bincount(t_cc, minlength=n)[comps], pa.int64()),
                                    L.N_SETS: pa.array(c_sets, pa.int64())})
    for name in (L.TRIPLES, L.SETDEPS, L.SETS, L.COMPONENTS):
        if name not in changes:
            changes[name] = _changes(name, old[name], conform(name, fresh[name]))
    written = {}
    keep_scopes = _scopes_stay_empty(st, meta, anc_changes)
    with st.transaction("index: incremental update (in-process)") as tx:
        with progress.step("write index", total=len(_COMPONENT_TABLES)) as step:
            for name in _COMPONENT_TABLES:
                removed, added = changes[name]
                written[name] = rewrite_table(tx, name, folders[name], removed, conform(name, added), buckets)
                step.advance(1)
        timings["write_s"] = time.perf_counter() - t1
        ocomp = old[L.COMPONENTS]
        counts = {
            "components": int(meta["components"]) - ocomp.num_rows + len(comps),
            "nodes": int(meta["nodes"]) + len(vv),
            "triples": int(meta["triples"]) - otr.num_rows + len(k_src),
            "sets": int(meta["sets"]) - old[L.SETS].num_rows + len(sets),
            "split_components": int(meta["split_components"])
            - int(pc.sum(pc.greater(ocomp.column(L.N_SETS), 1)).as_py() or 0) + int((c_sets > 1).sum()),
            "set_dependencies": int(meta["set_dependencies"]) - old[L.SETDEPS].num_rows + len(pairs),
        }
        out = {k: v for k, v in meta.items() if k not in ("components_s", "sets_s", "update", "update_reason",
                                                          "plan_tables", "plan_splits", "plan_workflow_edges")}
        out.update(plan)
        out.update(counts)
        out.update({"edges_segments": edge_segments, "mode": "incremental", "builder": "local", **extra_meta,
                    "affected_components": len(comps), "affected_triples": affected_triples,
                    "new_triples": new.num_rows,
                    "files": {k: " ".join(f"{n} {what}" for what, n in v.items() if n) for k, v in written.items()}})
        for k in ("scopes", "scopes_reason", "scope_rows_added", "scopes_merged", "scope_files"):
            out.pop(k, None)
        if keep_scopes:  # no roots before, none now: the scope tables stay empty
            out.update({"scope_segments": source_segments(st), "scopes_s": 0.0})
        else:  # merged where scope_update.py allows, else computed whole
            out.update(update_scopes(tx, st, meta, buckets))
        out.update({k: round(v, 3) for k, v in timings.items()})
        out["build_s"] = round(time.perf_counter() - t0, 3)
        tx.set_meta(L.META_KEY, out)
    index = LocalIndex.of(st)
    if index is not None:
        carry_skeletons(st, folders[L.TRIPLES], [*o0_ids.to_pylist(), *take(ids, comps).to_pylist()])
    return out
