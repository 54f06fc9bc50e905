"""`store.spark.frames.local_frame` gives the rows `spark.createDataFrame` gives, as a LocalRelation
(no Python worker reads it), for every schema shape Strata builds frames of; other types keep
Spark's own conversion."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.spark.frames import local_frame

SCHEMA = ("n int, big long, x double, flag boolean, s string, b binary, tags array<string>, "
          "m map<string,string>, ms array<map<string,string>>, st struct<k:string, v:int>")

_text = st.text(max_size=4)
_row = st.tuples(
    st.none() | st.integers(-2**31, 2**31 - 1), st.none() | st.integers(-2**63, 2**63 - 1),
    st.none() | st.floats(allow_nan=False), st.none() | st.booleans(), st.none() | _text,
    st.none() | st.binary(max_size=3), st.none() | st.lists(st.none() | _text, max_size=3),
    st.none() | st.dictionaries(_text, st.none() | _text, max_size=3),
    st.none() | st.lists(st.dictionaries(_text, _text, max_size=2), max_size=2),
    st.none() | st.tuples(st.none() | _text, st.none() | st.integers(-5, 5)),
)


def _plan(df) -> str:
    return df._jdf.queryExecution().analyzed().toString()


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(_row, max_size=6))
def test_rows_equal_createDataFrame(spark, rows):
    got = local_frame(spark, rows, SCHEMA)
    want = spark.createDataFrame(rows, SCHEMA)
    assert got.schema == want.schema
    assert got.collect() == want.collect()
    assert _plan(got).startswith("LocalRelation")


def test_dict_rows_and_an_empty_frame(spark):
    got = local_frame(spark, [{"s": "a", "n": 1}, {"n": 2}], "n int, s string")
    assert [tuple(r) for r in got.collect()] == [(1, "a"), (2, None)]
    empty = local_frame(spark, [], "id string")
    assert empty.count() == 0 and "LocalRelation" in _plan(empty)


def test_a_null_in_a_non_nullable_column_is_sparks_own_error(spark):
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("id", StringType(), False)])
    with pytest.raises(Exception, match="not nullable|NULLABLE|nullable"):
        local_frame(spark, [("a",), (None,)], schema).collect()


def test_dates_keep_sparks_own_conversion(spark):
    day = datetime.date(2024, 5, 1)
    got = local_frame(spark, [(day,)], "d date")
    assert got.collect()[0][0] == day
    assert not _plan(got).startswith("LocalRelation")  # Spark's pickled path, unchanged
