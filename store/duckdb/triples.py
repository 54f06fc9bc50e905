"""Triples files (docs/triples.md) ingested on the driver, as `store.spark.triples` does with Spark.

The file (CSV with a header, or Parquet) and its table mapping are read with pyarrow and checked
as `store.spark.triples.load_triples` checks them (same messages). The new triples (those not already
in the store's `edges`) become the rows of `store.spark.triples.triples_bundle`'s bundle — values,
tables and ops as elements, triples as edges, ids already in the store reused — computed
column-wise with Arrow (`table_rows`) when a few set-wise checks show they are valid, which is
what every real file hits; otherwise the bundle goes record by record through the local
validation (`store.duckdb.validate`), which names the first problem as the Spark path does.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from store import progress
from store import schema as S
from store.arrays import distinct_rows
from store.bundle import parquet_paths
from store.duckdb.bundle import LocalBundle
from store.duckdb.ingest import TxTables, arrow_column, arrow_table, element_rows, ingest_bundle, stage_rows
from store.errors import BundleError
from store.triples import GSETS, ITEM, OPTIONAL, REQUIRED, TABLE, TRANSFORMATION, VALUE, sibling_tables


def read_frame(path: str | os.PathLike[str]):
    """A CSV (header row, all strings, empty fields NULL as Spark reads them) or Parquet file as a
    pyarrow Table."""

    p = Path(path)
    if not p.exists():
        raise BundleError(f"no such triples file: {p}")
    if p.suffix == ".csv":
        with open(p, encoding="utf-8", newline="") as fh:
            header = next(csv.reader(fh), [])
        if not header:
            return pa.table({})
        return pacsv.read_csv(p, convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in header}, strings_can_be_null=True,
            quoted_strings_can_be_null=True, null_values=[""]))
    if p.suffix == ".parquet" or p.is_dir():
        tables = [pq.read_table(f) for f in parquet_paths(p)]
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    raise BundleError(f"{p}: a triples file is .csv or .parquet",
                      hint="use --format triples only with CSV or Parquet files")


def _require(table, cols: tuple[str, ...], where: str, what: str) -> None:
    missing = [c for c in cols if c not in table.column_names]
    if missing:
        raise BundleError(
            f"{where}: {what} needs the column(s) {', '.join(missing)}; found "
            f"{', '.join(table.column_names) or 'none'}",
            hint="the header row must name src, dst, op (and optionally src_table, dst_table)"
            if what == "a triples file" else "a table mapping file has columns item, table",
        )


def _trimmed(col):
    """Spark's `trim(cast(col as string))`: spaces off both ends."""

    return pc.utf8_trim(pc.cast(col, pa.string()), characters=" ")


def _present(col):

    return pc.and_kleene(pc.is_valid(col), pc.not_equal(col, ""))


def load_triples(path: str | os.PathLike[str], tables: str | os.PathLike[str] | None = None):
    """Validated (triples, mapping) as pyarrow Tables: distinct (src, dst, op), distinct (item, table)."""

    where = str(path)
    df = read_frame(path)
    _require(df, REQUIRED, where, "a triples file")
    for c in REQUIRED + OPTIONAL:
        if c in df.column_names:
            df = df.set_column(df.column_names.index(c), c, _trimmed(df.column(c)))
    ok = None
    for c in REQUIRED:
        ok = _present(df.column(c)) if ok is None else pc.and_(ok, _present(df.column(c)))
    bad = pc.invert(pc.fill_null(ok, False))
    if df.num_rows and pc.any(bad).as_py():
        i = pc.index(bad, True).as_py()
        row = df.slice(i, 1).to_pylist()[0]
        shown = ", ".join(f"{c}={row[c]!r}" for c in df.column_names)
        raise BundleError(f"{where}: row {i + 1}: src, dst and op must all be non-empty ({shown}). "
                          "Nothing was committed.", hint="fix the row and ingest the file again")
    triples = distinct_rows(df, list(REQUIRED))
    maps = []
    for side in ("src", "dst"):
        col = f"{side}_table"
        if col in df.column_names:
            m = df.filter(_present(df.column(col)))
            maps.append(pa.table({ITEM: m.column(side), TABLE: m.column(col)}))
    mapping_path = Path(tables) if tables else sibling_tables(Path(path))
    if mapping_path is not None:
        m = read_frame(mapping_path)
        _require(m, (ITEM, TABLE), str(mapping_path), "a table mapping file")
        m = pa.table({ITEM: _trimmed(m.column(ITEM)), TABLE: _trimmed(m.column(TABLE))})
        maps.append(m.filter(_present(m.column(TABLE))))
    if not maps:
        return triples, pa.table({ITEM: pa.array([], pa.string()), TABLE: pa.array([], pa.string())})
    mapping = distinct_rows(pa.concat_tables(maps), [ITEM, TABLE])
    counts = mapping.group_by(ITEM).aggregate([(TABLE, "count")])
    clashing = counts.filter(pc.greater(counts.column(f"{TABLE}_count"), 1)).column(ITEM).to_pylist()
    if clashing:
        item = min(clashing, key=lambda x: (x is not None, x or ""))
        ts = sorted(mapping.filter(pc.equal(mapping.column(ITEM), item)).column(TABLE).to_pylist())
        raise BundleError(f"{where}: value {item!r} is given two tables ({', '.join(ts)})",
                          hint="a value belongs to exactly one table")
    return triples, mapping


@dataclass
class Ids:
    """The distinct ids of a triples file's new triples and its mapping, by role."""

    values: Any  # pyarrow Arrays of strings
    tables: Any
    ops: Any


def ids_of(triples, mapping, source: str) -> Ids:
    """Values, tables and ops; raises BundleError when an id has two roles (ids are shared by
    values, tables and ops)."""

    values = pc.unique(pa.chunked_array(
        [*triples.column("src").chunks, *triples.column("dst").chunks, *mapping.column(ITEM).chunks],
        pa.string()))
    ops = pc.unique(triples.column("op"))
    both = values.filter(pc.is_in(values, value_set=ops)).to_pylist()
    if both:
        raise BundleError(
            f"{source}: {min(both)!r} is both a value and an op; ids are shared by values, "
            "tables and ops", hint="rename the op (e.g. prefix it) or the value")
    tables = pc.unique(mapping.column(TABLE))
    named = tables.filter(pc.is_in(tables, value_set=pa.concat_arrays([values, ops]))).to_pylist()
    if named:
        raise BundleError(f"{source}: {min(named)!r} names both a table and a value or op",
                          hint="table names share the id space with values and ops")
    return Ids(values, tables, ops)


def triples_bundle(triples, mapping, ids: Ids, existing_elements, source: str) -> LocalBundle:
    """The bundle for validated triples (`store.spark.triples.triples_bundle`) whose ids are `ids`
    (`ids_of`); `existing_elements`: the ids among them already in the store (a pyarrow array;
    reused, not added)."""
    parent = dict(zip(mapping.column(ITEM).to_pylist(), mapping.column(TABLE).to_pylist(), strict=True))
    elements: list[tuple] = []
    for group, gran in ((ids.tables, TABLE), (ids.values, VALUE), (ids.ops, TRANSFORMATION)):
        for x in _not_in(group, existing_elements).to_pylist():
            p = parent.get(x) if gran == VALUE else None
            elements.append((None, x, gran, [p] if p is not None else [], None, None, None))
    edges = [(None, s, o, d, None) for s, d, o in zip(*(triples.column(c).to_pylist() for c in ("src", "dst", "op")),
                                                      strict=True)]
    return LocalBundle(GSETS, [], elements, [], edges, source=source)


# ---------------------------------------------------------------------------- the common case
def _not_in(a, value_set):

    return a.filter(pc.invert(pc.is_in(a, value_set=value_set)))


def _only(counts: dict[str, int], keys, want: str) -> bool:
    """Every one of the distinct `keys` was found (``TxTables.counts``), all with the value `want`."""
    return sum(counts.values()) == len(keys) and set(counts) <= {want}


def table_rows(ids: Ids, triples, mapping, existing, old, catalog) -> dict[str, Any] | None:
    """The rows a triples file adds to each core table, computed column-wise with Arrow — or None
    when validation might find a problem, and the caller takes the record-by-record path
    (`triples_bundle` + `store.duckdb.validate`), which names it as the Spark path does.

    The rows are those `store.duckdb.ingest.table_rows` makes of `triples_bundle`, and they are
    valid when: the three granularities have their kinds; no new id is a vertex in the store;
    the table of each new value is a new table (then `Value` must be strictly finer than
    `Table`) or an element in the store of a granularity strictly coarser than `Value`; and each
    endpoint already in the store is a vertex of the right kind (data for src and dst, process
    for op). Everything else holds by
    construction (new ids are distinct, new values are data, new ops process)."""

    kinds = catalog.all_kinds()
    if (kinds.get(VALUE), kinds.get(TABLE), kinds.get(TRANSFORMATION)) != ("data", "data", "process"):
        return None
    new = {g: _not_in(a, existing) for g, a in ((TABLE, ids.tables), (VALUE, ids.values),
                                                (TRANSFORMATION, ids.ops))}
    new_ids = pa.concat_arrays(list(new.values()))
    clash = old.matching(S.VERTICES, new_ids)
    if clash is not None and clash.limit(1).fetchall():
        return None
    m = mapping.filter(pc.is_in(mapping.column(ITEM), value_set=new[VALUE]))
    coarser = {p for c, p in catalog.strict_pairs() if c == VALUE}
    parent_tables = pc.unique(m.column(TABLE))
    old_parents = _not_in(parent_tables, new[TABLE])
    if len(old_parents) < len(parent_tables) and TABLE not in coarser:
        return None
    found = old.counts(S.ELEMENTS, S.GRANULARITY, old_parents)
    if sum(found.values()) < len(old_parents) or not set(found) <= coarser:
        return None
    ends = pc.unique(pa.chunked_array([*triples.column("src").chunks, *triples.column("dst").chunks], pa.string()))
    for keys, want in ((ends.filter(pc.is_in(ends, value_set=existing)), "data"),
                       (ids.ops.filter(pc.is_in(ids.ops, value_set=existing)), "process")):
        if not _only(old.counts(S.VERTICES, S.KIND, keys), keys, want):
            return None

    grans = pa.concat_arrays([pa.repeat(pa.scalar(g, pa.string()), len(a)) for g, a in new.items()])
    kind = pc.if_else(pc.equal(grans, TRANSFORMATION), "process", "data")
    n = len(new_ids)
    parents = pa.table({S.ID: m.column(ITEM), S.PARENT: m.column(TABLE)})
    # ancestors: each new element itself; a new value's new table (depth 1); a new value's table
    # already in the store, and that table's ancestors, one deeper
    under_new = parents.filter(pc.invert(pc.is_in(parents.column(S.PARENT), value_set=old_parents)))
    under_old = parents.filter(pc.is_in(parents.column(S.PARENT), value_set=old_parents))
    old_anc = old.matching(S.ANCESTORS, old_parents)
    above = pa.table({S.ID: pa.array([], pa.string()), S.ANCESTOR: pa.array([], pa.string()),
                      S.DEPTH: pa.array([], pa.int32())})
    if old_anc is not None and under_old.num_rows:
        rows = arrow_table(old_anc.select(S.ID, S.ANCESTOR, S.DEPTH))
        joined = under_old.join(rows.rename_columns([S.PARENT, S.ANCESTOR, S.DEPTH]), S.PARENT)
        above = pa.table({S.ID: joined.column(S.ID), S.ANCESTOR: joined.column(S.ANCESTOR),
                          S.DEPTH: pc.add(pc.cast(joined.column(S.DEPTH), pa.int32()), 1)})
    ancestors = pa.concat_tables([
        pa.table({S.ID: new_ids, S.ANCESTOR: new_ids, S.DEPTH: pa.array(np.zeros(n, np.int32))}),
        pa.table({S.ID: under_new.column(S.ID), S.ANCESTOR: under_new.column(S.PARENT),
                  S.DEPTH: pa.array(np.ones(under_new.num_rows, np.int32))}),
        above], promote_options="permissive")
    return element_rows(new_ids, grans, kind, (parents.column(S.ID), parents.column(S.PARENT)), ancestors,
                        (triples.column("src"), triples.column("dst"), triples.column("op")), triples=True)


def ingest_triples(stx, path: str | os.PathLike[str], tables: str | os.PathLike[str] | None = None,
                   columnar: bool = True):
    """Stage a triples file in transaction `stx` (a StoreTransaction) without Spark; its counts.
    columnar: build the rows with Arrow when they are valid (`table_rows`); False takes the
    record-by-record path of any bundle (tests compare the two)."""
    import duckdb  # deferred: only this path needs duckdb

    from store.ingest import IngestCounts  # deferred: store.ingest imports this wing lazily too

    source = str(path)
    with progress.step(f"read {source}"):
        triples, mapping = load_triples(path, tables)
    store_tables = TxTables(stx)
    old_edges = store_tables.relation("edges")
    if old_edges is not None:
        probe = store_tables.con.from_arrow(triples)
        known = old_edges.select(duckdb.ColumnExpression("src"), duckdb.ColumnExpression("process").alias("op"),
                                 duckdb.ColumnExpression("dst"))
        triples = arrow_table(probe.join(known, "src, op, dst", how="anti"))
    ids = ids_of(triples, mapping, source)
    rel = store_tables.matching("elements", pa.concat_arrays([ids.values, ids.tables, ids.ops]))
    existing = pa.array([], pa.string()) if rel is None else arrow_column(rel.select("id"), "id")
    if columnar:
        with progress.step(f"validate {source}"):
            catalog = stx.catalog.merge_gsets(GSETS).merge_types([])
            rows = table_rows(ids, triples, mapping, existing, store_tables, catalog)
        if rows is not None:
            stage_rows(stx, source, rows, catalog, triples=True)
            return IngestCounts(rows[S.ELEMENTS].num_rows, 0, rows[S.EDGES].num_rows)
    return ingest_bundle(stx, triples_bundle(triples, mapping, ids, existing, source), triples=True)

