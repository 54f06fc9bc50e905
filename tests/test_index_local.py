"""Driver-side point reads find the bucket a key hashes to exactly as Spark's writer did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as hst
from pyspark.sql import functions as F

from store.index import layout as L


@settings(max_examples=5, deadline=None, derandomize=True)
@given(keys=hst.lists(hst.text(max_size=40), min_size=1, max_size=200), buckets=hst.integers(1, 64))
def test_driver_bucket_equals_spark_bucket(spark, keys, buckets):
    rows = (spark.createDataFrame([(k,) for k in keys], "k string")
            .select("k", L.bucket_of(F.col("k"), buckets).alias("b")).collect())
    assert {(r["k"], r["b"]) for r in rows} == {(k, L.bucket_of_value(k, buckets)) for k in keys}
