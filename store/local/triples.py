"""Triples files (docs/triples.md) ingested on the driver, as `store.triples` does with Spark.

The file (CSV with a header, or Parquet) and its table mapping are read with pyarrow and checked
as `store.triples.load_triples` checks them (same messages); the triples become the same bundle
as `store.triples.triples_bundle` makes — values, tables and ops as elements, new triples as
edges, ids already in the store reused — which then goes through the local validation and ingest
(`store.local.ingest.ingest_bundle`).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from store.errors import BundleError
from store.local.bundle import LocalBundle, line_count, parquet_paths, parquet_rows
from store.triples import GSETS, ITEM, OPTIONAL, REQUIRED, TABLE, TRANSFORMATION, VALUE, _sibling_tables


def count_triples(path: Path) -> int:
    """Rows of a triples file and of its sibling table mapping (line counts, Parquet footers)."""
    n = 0
    for p in (path, _sibling_tables(path)):
        if p is None or not p.exists():
            continue
        n += max(line_count(p) - 1, 0) if p.suffix == ".csv" else parquet_rows(p)
    return n


def read_frame(path: str | os.PathLike[str]):
    """A CSV (header row, all strings, empty fields NULL as Spark reads them) or Parquet file as a
    pyarrow Table."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

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
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.utf8_trim(pc.cast(col, pa.string()), characters=" ")


def _present(col):
    import pyarrow.compute as pc

    return pc.and_kleene(pc.is_valid(col), pc.not_equal(col, ""))


def load_triples(path: str | os.PathLike[str], tables: str | os.PathLike[str] | None = None):
    """Validated (triples, mapping) as pyarrow Tables: distinct (src, dst, op), distinct (item, table)."""
    import pyarrow as pa
    import pyarrow.compute as pc

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
    triples = df.select(list(REQUIRED)).group_by(list(REQUIRED)).aggregate([])
    maps = []
    for side in ("src", "dst"):
        col = f"{side}_table"
        if col in df.column_names:
            m = df.filter(_present(df.column(col)))
            maps.append(pa.table({ITEM: m.column(side), TABLE: m.column(col)}))
    mapping_path = Path(tables) if tables else _sibling_tables(Path(path))
    if mapping_path is not None:
        m = read_frame(mapping_path)
        _require(m, (ITEM, TABLE), str(mapping_path), "a table mapping file")
        m = pa.table({ITEM: _trimmed(m.column(ITEM)), TABLE: _trimmed(m.column(TABLE))})
        maps.append(m.filter(_present(m.column(TABLE))))
    if not maps:
        return triples, pa.table({ITEM: pa.array([], pa.string()), TABLE: pa.array([], pa.string())})
    mapping = pa.concat_tables(maps).group_by([ITEM, TABLE]).aggregate([])
    counts = mapping.group_by(ITEM).aggregate([(TABLE, "count")])
    clashing = counts.filter(pc.greater(counts.column(f"{TABLE}_count"), 1)).column(ITEM).to_pylist()
    if clashing:
        item = min(clashing, key=lambda x: (x is not None, x or ""))
        ts = sorted(mapping.filter(pc.equal(mapping.column(ITEM), item)).column(TABLE).to_pylist())
        raise BundleError(f"{where}: value {item!r} is given two tables ({', '.join(ts)})",
                          hint="a value belongs to exactly one table")
    return triples, mapping


def triples_bundle(triples, mapping, existing_elements: set[str], source: str) -> LocalBundle:
    """The bundle for validated triples (`store.triples.triples_bundle`); `existing_elements`:
    the ids among them already in the store (reused, not added)."""
    import pyarrow as pa
    import pyarrow.compute as pc

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
    parent = dict(zip(mapping.column(ITEM).to_pylist(), mapping.column(TABLE).to_pylist(), strict=True))
    elements: list[tuple] = []
    for ids, gran in ((tables, TABLE), (values, VALUE), (ops, TRANSFORMATION)):
        for x in ids.to_pylist():
            if x not in existing_elements:
                p = parent.get(x) if gran == VALUE else None
                elements.append((None, x, gran, [p] if p is not None else [], None, None, None))
    edges = [(None, s, o, d, None) for s, d, o in zip(*(triples.column(c).to_pylist() for c in ("src", "dst", "op")),
                                                      strict=True)]
    return LocalBundle(GSETS, [], elements, [], edges, source=source)


def ingest_triples(stx, path: str | os.PathLike[str], tables: str | os.PathLike[str] | None = None):
    """Stage a triples file in transaction `stx` (a StoreTransaction) without Spark; its counts."""
    import duckdb
    import pyarrow as pa

    from store.local.ingest import TxTables, ingest_bundle

    triples, mapping = load_triples(path, tables)
    store_tables = TxTables(stx)
    ids: Any = pa.chunked_array([*triples.column("src").chunks, *triples.column("dst").chunks,
                                 *triples.column("op").chunks, *mapping.column(ITEM).chunks,
                                 *mapping.column(TABLE).chunks], pa.string())
    rel = store_tables.matching("elements", ids)
    existing = set() if rel is None else {r[0] for r in rel.select("id").fetchall()}
    old_edges = store_tables.relation("edges")
    if old_edges is not None:
        probe = store_tables.con.from_arrow(triples)
        known = old_edges.select(duckdb.ColumnExpression("src"), duckdb.ColumnExpression("process").alias("op"),
                                 duckdb.ColumnExpression("dst"))
        triples = probe.join(known, "src, op, dst", how="anti").arrow()
        if not isinstance(triples, pa.Table):
            triples = triples.read_all()
    return ingest_bundle(stx, triples_bundle(triples, mapping, existing, str(path)), triples=True)
