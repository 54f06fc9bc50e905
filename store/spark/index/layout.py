"""Spark's side of the index layout (store/index/layout.py): bucket columns and the bucketed,
sorted writes of an index table."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from store.index.layout import BUCKET, LAYOUT, ROW_GROUP_BYTES
from store.storage import spark_conf


def bucket_of(key: Column, buckets: int) -> Column:
    """The bucket of a key column or literal (Spark's xxhash64, so writers and readers agree)."""
    return F.pmod(F.xxhash64(key), F.lit(buckets)).cast("int")


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
