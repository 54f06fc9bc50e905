"""Ingest attribute-value provenance triples (docs/triples.md) as an Ibis bundle.

A triples file (CSV with a header, or Parquet) has columns `src`, `dst`, `op` and optionally
`src_table`, `dst_table`. Instead of the table columns, a mapping file with columns `item`,
`table` may be given (`tables=`), or placed next to the triples as `<name>.tables.csv` /
`<name>.tables.parquet`. The triples become:

- each value: a basic element (and implicit vertex) of granularity `Value`, with its table as
  parent when known; each table: an element of granularity `Table` (`Value ⪯ Table`);
- each op: a process element of granularity `Transformation`;
- each triple: an edge (src, op, dst) — the store's `edges` table is the raw triples table the
  lineage baseline (RQ) reads and the component index (`store.index`) is built from.

The bundle goes through the same validation and ingest as any bundle (`StoreTransaction.ingest`),
so ids must be unique across values, tables and ops; values already in the store are reused.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType

from store.errors import BundleError
from store.schema import ELEMENTS, ID
from store.spark.bundle import SECTION_SCHEMAS, Bundle
from store.spark.frames import local_frame
from store.triples import GSETS, ITEM, OPTIONAL, REQUIRED, TABLE, TRANSFORMATION, VALUE, sibling_tables


def read_frame(spark, path: str | os.PathLike[str]) -> DataFrame:
    """A CSV (header row, all strings) or Parquet file as a DataFrame."""
    p = Path(path)
    if not p.exists():
        raise BundleError(f"no such triples file: {p}")
    if p.suffix == ".csv":
        return spark.read.option("header", True).option("inferSchema", False).csv(str(p))
    if p.suffix == ".parquet" or p.is_dir():
        return spark.read.parquet(str(p))
    raise BundleError(f"{p}: a triples file is .csv or .parquet",
                      hint="use --format triples only with CSV or Parquet files")




def _require(df: DataFrame, cols: tuple[str, ...], where: str, what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise BundleError(
            f"{where}: {what} needs the column(s) {', '.join(missing)}; found {', '.join(df.columns) or 'none'}",
            hint="the header row must name src, dst, op (and optionally src_table, dst_table)"
            if what == "a triples file" else "a table mapping file has columns item, table",
        )


def _first_bad_row(df: DataFrame, bad, where: str, reason: str) -> None:
    """Raise naming the first row (1-based, after the header) where `bad` holds."""
    if df.where(bad).limit(1).count() == 0:
        return
    cols = df.columns
    schema = StructType([StructField("_row", LongType(), False), *df.schema.fields])
    numbered = df.sparkSession.createDataFrame(  # only on this error path
        df.rdd.zipWithIndex().map(lambda p: (p[1], *p[0])), schema)
    row = numbered.where(bad).orderBy("_row").first()
    shown = ", ".join(f"{c}={row[c]!r}" for c in cols)
    raise BundleError(f"{where}: row {row['_row'] + 1}: {reason} ({shown}). Nothing was committed.",
                      hint="fix the row and ingest the file again")


def load_triples(spark, path: str | os.PathLike[str], tables: str | os.PathLike[str] | None = None
                 ) -> tuple[DataFrame, DataFrame]:
    """Validated (triples[src, dst, op], tables[item, table]) from the files."""
    where = str(path)
    df = read_frame(spark, path)
    _require(df, REQUIRED, where, "a triples file")
    for c in REQUIRED + OPTIONAL:
        if c in df.columns:
            df = df.withColumn(c, F.trim(F.col(c).cast("string")))
    empty = F.lit(False)
    for c in REQUIRED:
        empty = empty | F.col(c).isNull() | (F.col(c) == "")
    _first_bad_row(df, empty, where, "src, dst and op must all be non-empty")
    triples = df.select(*REQUIRED).distinct()
    maps: list[DataFrame] = []
    for side in ("src", "dst"):
        col = f"{side}_table"
        if col in df.columns:
            maps.append(df.where(F.col(col).isNotNull() & (F.col(col) != ""))
                        .select(F.col(side).alias(ITEM), F.col(col).alias(TABLE)))
    mapping_path = Path(tables) if tables else sibling_tables(Path(path))
    if mapping_path is not None:
        m = read_frame(spark, mapping_path)
        _require(m, (ITEM, TABLE), str(mapping_path), "a table mapping file")
        maps.append(m.select(F.trim(F.col(ITEM).cast("string")).alias(ITEM),
                             F.trim(F.col(TABLE).cast("string")).alias(TABLE))
                    .where(F.col(TABLE).isNotNull() & (F.col(TABLE) != "")))
    if not maps:
        return triples, local_frame(spark, [], f"{ITEM} string, {TABLE} string")
    mapping = maps[0]
    for m in maps[1:]:
        mapping = mapping.unionByName(m)
    mapping = mapping.distinct()
    clash = mapping.groupBy(ITEM).agg(F.count(F.lit(1)).alias("n"), F.collect_set(TABLE).alias("ts"))
    bad = clash.where(F.col("n") > 1).orderBy(ITEM).limit(1).collect()
    if bad:
        raise BundleError(
            f"{where}: value {bad[0][ITEM]!r} is given two tables ({', '.join(sorted(bad[0]['ts']))})",
            hint="a value belongs to exactly one table",
        )
    return triples, mapping


def triples_bundle(spark, triples: DataFrame, mapping: DataFrame, existing: DataFrame,
                   source: str) -> Bundle:
    """The bundle for validated triples; `existing` = ids already in the store (reused)."""
    values = (
        triples.select(F.col("src").alias(ID)).union(triples.select(F.col("dst").alias(ID)))
        .union(mapping.select(F.col(ITEM).alias(ID))).distinct()
    )
    ops = triples.select(F.col("op").alias(ID)).distinct()
    clash = values.join(ops, ID, "inner").orderBy(ID).limit(1).collect()
    if clash:
        raise BundleError(
            f"{source}: {clash[0][ID]!r} is both a value and an op; ids are shared by values, "
            "tables and ops", hint="rename the op (e.g. prefix it) or the value")
    tables = mapping.select(F.col(TABLE).alias(ID)).distinct()
    tclash = tables.join(values.unionByName(ops), ID, "inner").orderBy(ID).limit(1).collect()
    if tclash:
        raise BundleError(f"{source}: {tclash[0][ID]!r} names both a table and a value or op",
                          hint="table names share the id space with values and ops")
    parents = mapping.select(F.col(ITEM).alias(ID), F.array(F.col(TABLE)).alias("parents"))
    empty_parents = F.lit(None).cast(ArrayType(StringType()))
    elements = (
        tables.select(ID, F.lit(TABLE).alias("granularity"), empty_parents.alias("parents"))
        .unionByName(values.join(parents, ID, "left").select(ID, F.lit(VALUE).alias("granularity"),
                                                               "parents"))
        .unionByName(ops.select(ID, F.lit(TRANSFORMATION).alias("granularity"),
                                empty_parents.alias("parents")))
        .join(existing, ID, "left_anti")
    )
    smap = MapType(StringType(), StringType(), True)
    # The records are Strata's, not the user's: they have no index (errors name their ids).
    no_idx = F.lit(None).cast("long")
    elements = elements.select(
        no_idx.alias("idx"), ID, "granularity", "parents",
        F.lit(None).cast(smap).alias("attrs"), F.lit(None).cast(smap).alias("attr_types"),
        F.lit(None).cast("string").alias("problem"),
    )
    edges = triples.select(
        no_idx.alias("idx"), F.col("src"), F.col("op").alias("process"),
        F.col("dst"), F.lit(None).cast("string").alias("problem"),
    )
    vertices = local_frame(spark, [], SECTION_SCHEMAS["vertices"])
    return Bundle(GSETS, [], elements, vertices, edges, source=source)


def ingest_triples(tx, path: str | os.PathLike[str], tables: str | os.PathLike[str] | None = None):
    """Stage a triples file in transaction `tx` (a `store.StoreTransaction`); returns its counts."""
    spark = tx.store.spark
    triples, mapping = load_triples(spark, path, tables)
    existing = tx.table(ELEMENTS).select(ID)
    new_edges = triples.join(
        tx.table("edges").select("src", F.col("process").alias("op"), "dst"), ["src", "op", "dst"],
        "left_anti")
    return tx.ingest(triples_bundle(spark, new_edges, mapping, existing, str(path)))
