"""Ingest on the driver, without Spark: bundles and triples files small enough for one process.

`Store.ingest` sends a source here when the store is a local folder and the input holds at most
the local limit of records (`store.engine`, `$STRATA_LOCAL_ROWS`; `store.ingest.plan` counts them
cheaply), or when `--engine local` forces it. The source is loaded (`store.duckdb.bundle`,
`store.duckdb.triples`), validated (`store.duckdb.validate`: every check of `store.spark.validate`, the
same messages), turned into the rows `store.spark.ingest.table_rows` would make for each core table
(`table_rows` below), and each table's rows are written as one Parquet file with pyarrow into a
new segment of the transaction (`StoreTransaction.append_arrow`), so the commit stays atomic.

What the store already holds is read from the Parquet files of the transaction's tables —
committed segments and those staged by earlier sources of the same commit — with DuckDB, for
the ids the bundle mentions only (`TxTables`; or, for the writer that keeps them across commits,
from the rows store/kept.py keeps of each file).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

import pyarrow as pa

from store import progress
from store import schema as S
from store.duckdb.bundle import LocalBundle, NotLocal, from_dict, from_path
from store.duckdb.tables import arrow_schema
from store.duckdb.validate import Existing, LocalResolved, validate
from store.engine import duckdb_connect
from store.ingest import IngestCounts
from store.kept import KeptRows
from store.segments import segment_files


# ---------------------------------------------------------------------------- the store's tables
class TxTables:
    """DuckDB lookups into the tables of a transaction (committed plus staged segments)."""

    def __init__(self, stx, kept: KeptRows | None = None) -> None:
        self.stx = stx
        self.kept = kept  # the writer's lookups kept across commits (store/kept.py), if any

    @cached_property
    def con(self):
        """A DuckDB connection, opened when a lookup first scans (kept rows need none)."""
        return duckdb_connect()

    def files(self, name: str) -> list[str]:
        entry = self.stx._tx.tables.get(name)
        return segment_files(self.stx.store.storage, entry.segments if entry is not None else ())

    def relation(self, name: str):
        files = self.files(name)
        if not files:
            return None
        return self.con.read_parquet(files)

    def matching(self, name: str, keys: Any, key: str = S.ID):
        """Rows of table `name` whose column `key` is one of `keys` (a pyarrow array or an
        iterable of strings), as a DuckDB relation (None: no row can match — the table has no
        rows, or no key is given, when no file is opened)."""
        if not isinstance(keys, (pa.Array, pa.ChunkedArray)):
            keys = pa.array(list(keys), pa.string())
        rel = self.relation(name) if len(keys) else None
        if rel is None:
            return None
        # a semi join keeps each row once however often its key comes: no need to drop repeats
        return rel.join(self.con.from_arrow(pa.table({key: keys})), key, how="semi")

    def lookup(self, name: str, value: str, ids: Iterable[str]) -> dict[str, Any]:
        """id -> `value` of table `name`'s rows with those ids."""
        if self.kept is not None and self.kept.fits(self.files(name), S.ID, (S.ID, value)):
            return dict(self.kept.matching(self.files(name), S.ID, ids, (S.ID, value)))
        rel = self.matching(name, ids)
        return {} if rel is None else dict(rel.select(S.ID, value).fetchall())

    def counts(self, name: str, value: str, ids: Any) -> dict[Any, int]:
        """`value` -> how many of the distinct ``ids`` (a pyarrow array) are rows of table `name`
        holding it, counted by DuckDB: what `lookup` says of them in a few rows, where `lookup`
        makes a Python pair of every id (a large run's items: millions). It scans the files, kept
        rows or not."""
        if not len(ids):
            return {}
        rel = self.matching(name, ids)
        return {} if rel is None else dict(rel.aggregate(f"{value}, count(DISTINCT {S.ID})", value).fetchall())

    def existing(self) -> Existing:
        return Existing(vertex_kinds=lambda ids: self.lookup(S.VERTICES, S.KIND, ids),
                        element_granularities=lambda ids: self.lookup(S.ELEMENTS, S.GRANULARITY, ids))

    def ancestors(self, ids: Iterable[str]) -> dict[str, list[tuple[str, int]]]:
        select = (S.ID, S.ANCESTOR, S.DEPTH)
        if self.kept is not None and self.kept.fits(self.files(S.ANCESTORS), S.ID, select):
            rows = self.kept.matching(self.files(S.ANCESTORS), S.ID, ids, select)
        else:
            rel = self.matching(S.ANCESTORS, ids)
            rows = [] if rel is None else rel.select(*select).fetchall()
        out: dict[str, list[tuple[str, int]]] = {}
        for ident, anc, depth in rows:
            out.setdefault(ident, []).append((anc, depth))
        return out


# ---------------------------------------------------------------------------- rows
class CheckedItems:
    """What the `ingest_items` calls of one transaction have checked, kept for the calls after
    them (``StoreTransaction.checked_items``): the 64-bit hashes (DuckDB's ``hash``) of the items
    they staged or found in the store as data vertices, in a temporary table of a DuckDB
    connection of its own, and the kind or granularity of each process and parent they found
    (with the parents' ancestors). A large run is staged in parts, every part of items before the
    first part of edges (capture/storing/to_model.py `driver_parts`), and a part of edges would
    otherwise look each of its ends up in the store's vertex files again: a scan that takes
    longer the more the store holds. An end whose hash is recorded is taken as one of those items
    (another id with the same hash, about one chance in 2^64 / recorded items, would pass as a
    data vertex); every other end is looked up as before. The record holds while the
    transaction's vertex and element tables only gain segments, which `of` checks."""

    def __init__(self, stx) -> None:
        self.con = duckdb_connect()
        self.con.execute("CREATE TEMP TABLE checked_items (h UBIGINT)")
        self.known: dict[str, dict[str, Any]] = {S.VERTICES: {}, S.ELEMENTS: {}}  # table -> id -> kind / granularity
        self.ancestors: dict[str, list[tuple[str, int]]] = {}  # parent -> its (ancestor, depth) rows
        self.segments = self._segments(stx)

    @staticmethod
    def _segments(stx) -> tuple[tuple[str, ...], ...]:
        return stx.segments(S.VERTICES), stx.segments(S.ELEMENTS)

    @classmethod
    def of(cls, stx) -> CheckedItems:
        """The transaction's record, a new one when it has none or its tables lost segments."""
        rec = stx.checked_items
        now = cls._segments(stx)
        if rec is None or any(s[:len(old)] != old for s, old in zip(now, rec.segments, strict=True)):
            rec = stx.checked_items = cls(stx)
        return rec

    def staged(self, stx, ids) -> None:
        """Record ``ids`` (a pyarrow string array: items now staged, or found as data vertices)
        and the segments the tables have once the call staged its rows."""
        if len(ids):
            self.con.from_arrow(pa.table({S.ID: ids})).select(f"hash({S.ID}) AS h").insert_into("checked_items")
        self.segments = self._segments(stx)


def arrow_table(rel) -> pa.Table:
    """A DuckDB relation's rows as a pyarrow Table (its ``.arrow()`` gives a Table or, in newer
    DuckDB, a RecordBatchReader)."""
    out = rel.arrow()
    return out if isinstance(out, pa.Table) else out.read_all()


def arrow_column(rel, name: str) -> pa.Array:
    """Column `name` of a DuckDB relation's rows as one pyarrow Array (of strings when it has no
    rows)."""
    table = arrow_table(rel)
    return table.column(name).combine_chunks() if table.num_rows else pa.array([], pa.string())


def stored_schema(name: str, triples: bool = False) -> str:
    """The schema JSON Spark's writer records for core table `name` when an ingest creates it:
    every column nullable but the ones Spark derives as never NULL (`store.spark.ingest.table_rows`
    builds them from literals and positions; from a triples file also the granularities)."""
    required = {(S.COMPLEX, S.CE), (S.VERTICES, S.IMPLICIT)}
    if triples:
        required |= {(S.ELEMENTS, S.GRANULARITY), (S.COMPLEX, S.GRANULARITY)}
    return S.schema_json(pa.schema([f.with_nullable((name, f.name) not in required) for f in S.SCHEMAS[name]]))


def closure(bundle: LocalBundle, old: TxTables) -> tuple[list[str], list[str], list[int]]:
    """The reflexive-transitive ancestor rows (id, ancestor, depth: the shortest path) of the new
    elements, reusing the committed closure of parents already in the store (as
    `store.spark.ingest.ancestors`)."""
    parents = {r[1]: r[3] for r in bundle.elements}
    old_rows = old.ancestors({p for ps in parents.values() for p in ps if p not in parents})
    memo: dict[str, dict[str, int]] = {}

    def up(x: str) -> dict[str, int]:
        hit = memo.get(x)
        if hit is None:
            hit = {x: 0}
            for p in parents[x]:
                above = up(p).items() if p in parents else old_rows.get(p, ())
                for a, d in above:
                    if d + 1 < hit.get(a, d + 2):
                        hit[a] = d + 1
            memo[x] = hit
        return hit

    ids: list[str] = []
    ancs: list[str] = []
    depths: list[int] = []
    for x in parents:
        for a, d in up(x).items():
            ids.append(x)
            ancs.append(a)
            depths.append(d)
    return ids, ancs, depths


def table_rows(bundle: LocalBundle, resolved: LocalResolved, old: TxTables, triples: bool = False
               ) -> dict[str, Any]:
    """The rows this bundle adds to each core table, as pyarrow Tables (`store.spark.ingest.table_rows`)."""

    E, V, D = bundle.elements, bundle.vertices, bundle.edges
    kinds = resolved.kinds
    cols: dict[str, dict[str, list]] = {name: {f.name: [] for f in S.SCHEMAS[name]} for name in S.CORE_TABLES}
    el, par, vx, cx, ed = (cols[S.ELEMENTS], cols[S.PARENTS], cols[S.VERTICES], cols[S.COMPLEX], cols[S.EDGES])
    for _idx, ident, gran, parents, attrs, _types, _problem in E:
        kind = kinds.get(gran)
        el[S.ID].append(ident)
        el[S.GRANULARITY].append(gran)
        el[S.KIND].append(kind)
        for p in parents:
            par[S.ID].append(ident)
            par[S.PARENT].append(p)
        for c, v in ((S.ID, ident), (S.KIND, kind), (S.TYPE, gran), (S.N_CE, 1), (S.CE_SIZE, 1),
                     (S.ATTRS, attrs), (S.IMPLICIT, True)):
            vx[c].append(v)
        for c, v in ((S.VERTEX, ident), (S.CE, 0), (S.GRANULARITY, gran), (S.ELEM, ident)):
            cx[c].append(v)
    for r, (tkey, tkind, size) in zip(V, resolved.vertex_types, strict=True):
        ident, ces, attrs = r[1], r[4], r[5]
        for c, v in ((S.ID, ident), (S.KIND, tkind), (S.TYPE, tkey), (S.N_CE, len(ces)), (S.CE_SIZE, size),
                     (S.ATTRS, attrs), (S.IMPLICIT, False)):
            vx[c].append(v)
        for ce, m in enumerate(ces):
            for g, elem in m.items():
                for c, v in ((S.VERTEX, ident), (S.CE, ce), (S.GRANULARITY, g), (S.ELEM, elem)):
                    cx[c].append(v)
    for _idx, src, proc, dst, _problem in D:
        ed[S.SRC].append(src)
        ed[S.DST].append(dst)
        ed[S.PROCESS].append(proc)
    ids, ancs, depths = closure(bundle, old)
    cols[S.ANCESTORS] = {S.ID: ids, S.ANCESTOR: ancs, S.DEPTH: depths}
    vx[S.ATTRS] = [None if a is None else list(a.items()) for a in vx[S.ATTRS]]
    out = {}
    for name in S.CORE_TABLES:
        schema = arrow_schema(stored_schema(name, triples))
        out[name] = pa.table({f.name: pa.array(cols[name][f.name], f.type) for f in schema}, schema=schema)
    return out


# ---------------------------------------------------------------------------- ingest
def ingest_bundle(stx, bundle: LocalBundle, triples: bool = False, rows: dict[str, Any] | None = None):
    """Validate `bundle` against everything committed or staged in `stx` (a StoreTransaction),
    then stage its rows; returns its IngestCounts. `rows`: the tables' rows when the caller made
    them, else `table_rows`'s."""
    tables = TxTables(stx)
    with progress.step(f"validate {bundle.source}", total=sum(bundle.sizes())) as step:
        catalog = stx.catalog.merge_gsets(bundle.gsets).merge_types(bundle.types)
        resolved = validate(bundle, catalog, tables.existing())
        step.advance(sum(bundle.sizes()))
    if rows is None:
        rows = table_rows(bundle, resolved, tables, triples)
    stage_rows(stx, bundle.source, rows, resolved.catalog, triples)
    return IngestCounts(*bundle.sizes())


def stage_rows(stx, source: str, rows: Mapping[str, Any], catalog, triples: bool = False) -> None:
    """Stage each core table's new rows (pyarrow Tables) as a segment of `stx` and its catalog."""
    with progress.step(f"write {source}", total=sum(t.num_rows for t in rows.values())) as step:
        stx.append_arrows({name: (rows[name], stored_schema(name, triples)) for name in S.CORE_TABLES},
                          lambda name: step.advance(rows[name].num_rows))
    stx.set_catalog(catalog)


def item_rows(tables: TxTables, catalog, small: Mapping[str, Any], items, edges,
              granularity: str, checked: CheckedItems) -> tuple[dict[str, Any], Any] | None:
    """The rows a bulk of items and edges adds to each core table beside ``small`` (the rows of a
    bundle validated with them, not staged yet: `ingest_items`), computed column-wise with
    Arrow, and the ids to record in ``checked`` (below) — or None when a set-wise check fails,
    and the caller ingests them as a bundle instead (record by record, `ingest_bundle`, which
    names the problem).

    ``items``: a pyarrow Table (id, parent), each a new element of ``granularity`` with one
    parent, distinct ids; those already vertices in the store are left out, as a bundle producer
    leaves out ids it knows. ``edges``: (src, process, dst), distinct. They are the rows
    `table_rows` makes of the bundle of those elements and edges when: ``granularity`` is a data
    granularity; every parent is an element (of ``small``, committed or staged) strictly coarser
    than it; every edge end is one of ``items`` (new or already in the store: a data vertex either
    way) or a data vertex committed or staged before (an earlier part of a large run's items:
    capture/storing/to_model.py `driver_parts`); and every process is a process vertex. Capture's
    model of a run has this shape (`driver_items`): millions of rows at the cost of a few joins.

    ``checked`` is the transaction's `CheckedItems`: ends, processes and parents that earlier calls
    checked are not looked up again, and what this call checks is added to it — its processes
    and parents at once, the ids of its items (staged, or found in the store as data vertices)
    returned, for ``CheckedItems.staged`` once the rows are staged."""
    import numpy as np  # deferred: only this path needs numpy
    import pyarrow.compute as pc  # deferred with it

    def found(name: str, value: str, keys) -> tuple[int, set]:
        """How many of the distinct ``keys`` are rows of table `name` (of ``small``, else of the
        store's), and the values of their column `value`: counted where the rows are, no Python
        object per key."""
        ids = small[name].column(S.ID).combine_chunks()
        mine = pc.is_in(keys, value_set=ids)  # a hash set of the bundle's few ids, not of the keys
        here = small[name].filter(pc.is_in(ids, value_set=keys.filter(mine)))
        counts: dict[Any, int] = {}
        for v in here.column(value).to_pylist():
            counts[v] = counts.get(v, 0) + 1
        for v, c in tables.counts(name, value, keys.filter(pc.invert(mine))).items():
            counts[v] = counts.get(v, 0) + c
        return sum(counts.values()), set(counts)

    def values(name: str, value: str, keys) -> dict[str, Any]:
        """id -> `value` of the few ``keys`` (processes, parents) that are rows of table `name`:
        of ``small``, recorded by an earlier call, else of the store's."""
        here = small[name].filter(pc.is_in(small[name].column(S.ID), value_set=keys))
        out = dict(zip(here.column(S.ID).to_pylist(), here.column(value).to_pylist(), strict=True))
        memo = checked.known[name]
        out.update((k, memo[k]) for k in keys.to_pylist() if k not in out and k in memo)
        rest = [k for k in keys.to_pylist() if k not in out]
        return {**out, **tables.lookup(name, value, rest)} if rest else out

    if catalog.all_kinds().get(granularity) != "data":
        return None
    # in DuckDB: its set operations on a million strings take a fraction of Arrow's time here
    con = checked.con
    rel_edges, rel_items = con.from_arrow(edges), con.from_arrow(items)
    # the ends, less the items of earlier calls (by hash: numbers, cheap to join) and of this one,
    # then made distinct: what is left is normally nothing
    ends = rel_edges.select(f"{S.SRC} AS {S.ID}").union(rel_edges.select(f"{S.DST} AS {S.ID}"))
    ends = ends.select(f"{S.ID}, hash({S.ID}) AS h").join(con.table("checked_items"), "h", how="anti")
    ends = ends.select(S.ID).join(rel_items.select(S.ID), S.ID, how="anti").distinct()
    outside = arrow_column(ends, S.ID)
    processes = arrow_column(rel_edges.select(S.PROCESS).distinct(), S.PROCESS)
    parents = arrow_column(rel_items.select(S.PARENT).distinct(), S.PARENT)
    if len(outside):  # ends that are not among the items must be data vertices already (staged before)
        n, kinds = found(S.VERTICES, S.KIND, outside)
        if n < len(outside) or kinds - {"data"}:
            return None
    process_kinds = values(S.VERTICES, S.KIND, processes)
    if len(process_kinds) < len(processes) or set(process_kinds.values()) - {"process"}:
        return None
    coarser = {p for c, p in catalog.strict_pairs() if c == granularity}
    parent_grans = values(S.ELEMENTS, S.GRANULARITY, parents)
    if len(parent_grans) < len(parents) or not set(parent_grans.values()) <= coarser:
        return None
    checked_ids = items.column(S.ID)  # the items that are data vertices once this call is staged
    stored = tables.relation(S.VERTICES) if items.num_rows else None
    if stored is not None:  # each item with the kind of the vertex the store has of its id, if any
        joined = arrow_table(tables.con.from_arrow(items).join(stored.select(S.ID, S.KIND), S.ID, how="left"))
        kind = joined.column(S.KIND)
        checked_ids = joined.column(S.ID).filter(pc.fill_null(pc.equal(kind, "data"), True))
        items = joined.filter(pc.is_null(kind)).select([S.ID, S.PARENT])
    new_ancestors: dict[str, list[tuple[str, int]]] = {}
    staged = small[S.ANCESTORS].filter(pc.is_in(small[S.ANCESTORS].column(S.ID), value_set=parents))
    for ident, anc, depth in zip(*(staged.column(c).to_pylist() for c in (S.ID, S.ANCESTOR, S.DEPTH)), strict=True):
        new_ancestors.setdefault(ident, []).append((anc, depth))
    above_parents = [p for p in parents.to_pylist() if p not in new_ancestors]
    old_ancestors = {p: checked.ancestors[p] for p in above_parents if p in checked.ancestors}
    rest = [p for p in above_parents if p not in old_ancestors]
    old_ancestors.update(tables.ancestors(rest) if rest else {})
    n = items.num_rows
    ids = items.column(S.ID)
    # ancestors: each item itself (depth 0), then its parent's ancestors one deeper (the parent
    # itself among them, at depth 0 + 1)
    above = [pa.table({S.ID: ids, S.ANCESTOR: ids, S.DEPTH: pa.array(np.zeros(n, np.int32))})]
    for parent, rows in {**old_ancestors, **new_ancestors}.items():
        under = ids.filter(pc.equal(items.column(S.PARENT), parent))
        for anc, depth in rows:
            above.append(pa.table({S.ID: under,
                                   S.ANCESTOR: pa.repeat(pa.scalar(anc, pa.string()), len(under)),
                                   S.DEPTH: pa.array(np.full(len(under), depth + 1, np.int32))}))
    ancestors = pa.concat_tables(above)
    grans = pa.repeat(pa.scalar(granularity, pa.string()), n)  # a million strings without an object each
    kind = pa.repeat(pa.scalar("data", pa.string()), n)
    rows = element_rows(ids, grans, kind, (ids, items.column(S.PARENT)), ancestors,
                        (edges.column(S.SRC), edges.column(S.DST), edges.column(S.PROCESS)))
    # for the calls after it: the processes and parents found, and the bundle's elements (staged with the items)
    for name, value, found_here in ((S.VERTICES, S.KIND, process_kinds), (S.ELEMENTS, S.GRANULARITY, parent_grans)):
        checked.known[name].update(found_here)
        checked.known[name].update(zip(*(small[name].column(c).to_pylist() for c in (S.ID, value)), strict=True))
    checked.ancestors.update(old_ancestors)
    checked.ancestors.update(new_ancestors)
    return rows, checked_ids


def ingest_items(stx, bundle: LocalBundle, items, edges, granularity: str) -> IngestCounts | None:
    """Validate `bundle` (a few elements) and stage its rows together with a bulk of items and
    edges computed column-wise (`item_rows`), one segment per table; None when a set-wise check
    of the items fails (nothing staged: the caller ingests both as bundles)."""
    tables = TxTables(stx)
    catalog = stx.catalog.merge_gsets(bundle.gsets).merge_types(bundle.types)
    resolved = validate(bundle, catalog, tables.existing())
    small = table_rows(bundle, resolved, tables)
    checked = CheckedItems.of(stx)
    out = item_rows(tables, resolved.catalog, small, items, edges, granularity, checked)
    if out is None:
        return None
    rows, checked_ids = out
    stage_rows(stx, bundle.source, {name: pa.concat_tables([small[name], rows[name]]) for name in S.CORE_TABLES},
               resolved.catalog)
    checked.staged(stx, checked_ids)
    counts = IngestCounts(*bundle.sizes())
    return counts + IngestCounts(rows[S.ELEMENTS].num_rows, 0, rows[S.EDGES].num_rows)


def element_rows(ids, grans, kind, parents, ancestors, edges, triples: bool = False) -> dict[str, Any]:
    """Each core table's new rows, as pyarrow Tables of its stored schema, for new elements that
    are their own vertices (``ids`` with their granularities ``grans`` and kinds ``kind``, arrays
    of one length: one vertex, one complex element of one member each), their ``parents`` rows
    (id, parent arrays), their ``ancestors`` (a Table of id, ancestor, depth) and new ``edges``
    (src, dst, process arrays): what `table_rows` makes of such a bundle, column-wise."""
    import numpy as np  # deferred: only the column-wise paths need numpy
    import pyarrow.compute as pc  # deferred: and pyarrow's compute functions

    n = len(ids)
    ones = pa.array(np.ones(n, np.int32))
    columns = {
        S.ELEMENTS: {S.ID: ids, S.GRANULARITY: grans, S.KIND: kind},
        S.PARENTS: {S.ID: parents[0], S.PARENT: parents[1]},
        S.ANCESTORS: {c: ancestors.column(c) for c in (S.ID, S.ANCESTOR, S.DEPTH)},
        S.VERTICES: {S.ID: ids, S.KIND: kind, S.TYPE: grans, S.N_CE: ones, S.CE_SIZE: ones,
                     S.ATTRS: None, S.IMPLICIT: pa.array(np.ones(n, bool))},
        S.COMPLEX: {S.VERTEX: ids, S.CE: pa.array(np.zeros(n, np.int32)), S.GRANULARITY: grans, S.ELEM: ids},
        S.EDGES: {S.SRC: edges[0], S.DST: edges[1], S.PROCESS: edges[2]},
    }
    out = {}
    for name, cols in columns.items():
        schema = arrow_schema(stored_schema(name, triples))
        size = len(next(v for v in cols.values() if v is not None))
        out[name] = pa.table([pa.nulls(size, f.type) if cols[f.name] is None else pc.cast(cols[f.name], f.type)
                              for f in schema], schema=schema)
    return out


def load(source: Mapping[str, Any] | str | os.PathLike[str]) -> LocalBundle:
    """A bundle source (a dict, a .json, a .jsonl, a folder) read on the driver."""
    if isinstance(source, Mapping):
        return from_dict(source)
    with progress.step(f"read {source}"):
        return from_path(source)


__all__ = ["NotLocal", "TxTables", "element_rows", "ingest_bundle", "ingest_items", "item_rows", "load",
           "stage_rows",
           "stored_schema", "table_rows"]
