"""Names, schemas and the on-disk layout of the component index tables.

Every index table is Parquet partitioned by `bucket = pmod(xxhash64(key), buckets)` and sorted
inside each file by its lookup key, written with small row groups. A point query on one
component/set names its bucket with a constant expression (partition pruning: one folder) and
its key (row-group statistics: few row groups of that folder's file).

| table | columns | bucket key, sort |
|---|---|---|
| index_nodes | id, table, ccid, csid | id; sorted by id |
| index_triples | src, dst, op, ccid, src_csid, dst_csid | ccid; sorted by ccid, dst_csid, dst |
| index_setdeps | ccid, src_csid, dst_csid | ccid; sorted by ccid, dst_csid |
| index_sets | csid, ccid, level, split, n_nodes, n_triples | ccid; sorted by ccid, csid |
| index_components | ccid, n_nodes, n_triples, n_sets | ccid; sorted by ccid |
| index_scope_nodes | id, scope, scope_rows | id; sorted by id |
| index_scope_rows | scope, rel, a, b, c, d | scope; sorted by scope, rel |
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from store.storage import spark_conf

CCID = "ccid"
CSID = "csid"
SRC_CSID = "src_csid"
DST_CSID = "dst_csid"
TABLE = "table"
OP = "op"
BUCKET = "bucket"
LEVEL = "level"
SPLIT = "split"
N_NODES = "n_nodes"
N_TRIPLES = "n_triples"
N_SETS = "n_sets"

NODES = "index_nodes"
TRIPLES = "index_triples"
SETDEPS = "index_setdeps"
SETS = "index_sets"
COMPONENTS = "index_components"
SCOPE_NODES = "index_scope_nodes"  # influence scopes for IQL (scopes.py)
SCOPE_ROWS_TABLE = "index_scope_rows"
INDEX_TABLES = (NODES, TRIPLES, SETDEPS, SETS, COMPONENTS, SCOPE_NODES, SCOPE_ROWS_TABLE)

META_KEY = "index"  # manifest meta: parameters, split plan, counts, covered edge segments

# (bucket key, sort columns) per table.
LAYOUT: dict[str, tuple[str, tuple[str, ...]]] = {
    NODES: ("id", ("id",)),
    TRIPLES: (CCID, (CCID, DST_CSID, "dst")),
    SETDEPS: (CCID, (CCID, DST_CSID)),
    SETS: (CCID, (CCID, CSID)),
    COMPONENTS: (CCID, (CCID,)),
    SCOPE_NODES: ("id", ("id",)),
    SCOPE_ROWS_TABLE: ("scope", ("scope", "rel")),
}

ROW_GROUP_BYTES = 1 << 20  # small row groups: statistics then skip most of a large file


def bucket_of(key: Column, buckets: int) -> Column:
    """The bucket of a key column or literal (Spark's xxhash64, so writers and readers agree)."""
    return F.pmod(F.xxhash64(key), F.lit(buckets)).cast("int")


def bucket_of_value(value: str, buckets: int) -> int:
    """The bucket of one key, computed on the driver: Spark's `xxhash64` is XXH64 with seed 42
    over the UTF-8 bytes (tests/test_index_local.py checks it against Spark)."""
    import xxhash

    h = xxhash.xxh64_intdigest(value.encode("utf-8"), seed=42)
    if h >= 1 << 63:  # Spark's hash is a signed long
        h -= 1 << 64
    return h % buckets  # Python's % is pmod for a positive divisor


def bucket_filter(key_col: str, value: str, buckets: int) -> Column:
    """Predicate selecting one key: the bucket part folds to a constant, so it prunes folders."""
    return (F.col(BUCKET) == bucket_of(F.lit(value), buckets)) & (F.col(key_col) == F.lit(value))


def with_bucket(table: str, df: DataFrame, buckets: int) -> DataFrame:
    key, _ = LAYOUT[table]
    return df.withColumn(BUCKET, bucket_of(F.col(key), buckets))


def write_index_table(tx, table: str, df: DataFrame, buckets: int,
                      row_group_bytes: int = ROW_GROUP_BYTES) -> None:
    """Replace one index table inside transaction `tx`, bucketed, sorted, small row groups."""
    _, sort_by = LAYOUT[table]
    spark = df.sparkSession
    if BUCKET not in df.columns:
        df = with_bucket(table, df, buckets)
    with spark_conf(spark, "parquet.block.size", str(row_group_bytes)):
        tx.replace(table, df, partition_by=(BUCKET,), sort_by=sort_by, files=buckets)
