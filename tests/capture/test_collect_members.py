"""Strata's member collector (capture/jvm/io/strata/capture/CollectMembers.java) gives what Spark's
``collect_list`` gives — the same type, elements and order — for the columns capture collects
(a ``bigint``; a struct of ``bigint`` and ``int`` fields, null fields included), grouped,
global, in a window frame, and across a shuffle; and its copies of lists (grouping sets) give what
``flatten(collect_list(transform(list, x -> struct(x.*, j))))`` gives."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from capture import jvm
from capture.tracking.grouping import collect_list

LONGS = st.one_of(st.none(), st.integers(-(2 ** 63), 2 ** 63 - 1))
INTS = st.one_of(st.none(), st.integers(-(2 ** 31), 2 ** 31 - 1))
ROWS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), LONGS, INTS, LONGS), min_size=0, max_size=40)
SCHEMA = "g int, o int, a bigint, b int, c bigint"


@pytest.fixture(scope="module")
def jar(spark):
    if not jvm.available(spark, jvm.COLLECT):
        pytest.fail("the suite's Spark has no capture jar (make jvm)")
    return spark


def _rows(df) -> list:
    return [tuple(r) for r in df.collect()]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS)
def test_collected_members_equal_collect_list(jar, rows):
    """Each aggregation computes collect_list and the collector side by side (so both see the
    rows in one order, also after the shuffle that merges partial lists): the two columns are
    equal in type and value in every row."""
    spark = jar
    df = spark.createDataFrame(rows, SCHEMA).repartition(2, "o")
    values = [F.struct("a", "b", "c"), F.struct(F.col("o").cast("bigint").alias("o"), "g"),  # nullable fields, or not
              F.coalesce("a", F.lit(0)).alias("a")]  # a bare id
    spec = [F.collect_list(v) for v in values]
    mine = [collect_list(spark, v, True) for v in values]
    assert all("strata_collect_members" in c._jc.toString() for c in mine)

    def side_by_side(over=lambda c: c):
        return [*(over(c).alias(f"s{i}") for i, c in enumerate(spec)),
                *(over(c).alias(f"m{i}") for i, c in enumerate(mine))]

    w = Window.partitionBy("g").orderBy("o", "a", "b", "c").rowsBetween(-2, 0)
    for made in (df.groupBy("g").agg(*side_by_side()), df.agg(*side_by_side()),  # global: also over no rows
                 df.select("g", *side_by_side(lambda c: c.over(w)))):
        fields = {f.name: f.dataType for f in made.schema.fields}
        assert [fields[f"m{i}"] for i in range(len(values))] == [fields[f"s{i}"] for i in range(len(values))]
        for r in made.collect():
            assert [r[f"m{i}"] for i in range(len(values))] == [r[f"s{i}"] for i in range(len(values))]


def _positioned(j: int):
    return lambda x: F.struct(x["a"].alias("a"), x["b"].alias("b"), x["c"].alias("c"), F.lit(j).alias("p"))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, sets=st.integers(1, 3))
def test_copies_of_lists_equal_the_transformed_lists_flattened(jar, rows, sets):
    spark = jar
    lists = spark.createDataFrame(rows, SCHEMA).coalesce(1).sortWithinPartitions("o", "a", "b", "c") \
        .groupBy("g").agg(F.collect_list(F.struct("a", "b", "c")).alias("m"))
    copies = lists.select(F.inline(F.array(*[
        F.struct((F.col("g") % (j + 1)).alias("k"), F.col("m").alias("_m"), F.lit(j).alias("_j"),
                 F.transform("m", _positioned(j)).alias("_t"))
        for j in range(sets)]))).coalesce(1)
    cm = getattr(spark._jvm, jvm.COLLECT)
    mine = copies.groupBy("k").agg(Column(cm.copies(F.col("_m")._jc, F.col("_j")._jc, "p")).alias("m")).orderBy("k")
    spec = copies.groupBy("k").agg(F.flatten(F.collect_list("_t")).alias("m")).orderBy("k")
    assert mine.schema == spec.schema
    assert _rows(mine) == _rows(spec)



def test_a_filter_on_the_keys_still_runs_before_the_aggregation(jar):
    """The collector is deterministic where collect_list is (its order is the rows' order), so
    Spark still pushes a filter on the grouping keys below the aggregation (TPC-DS Q4 filters
    its year totals by year above the aggregation: without the push every year was aggregated)."""
    spark = jar
    df = spark.createDataFrame([(1, 2, 3)], "g int, a bigint, b bigint")
    for value in (F.collect_list(F.struct("a", "b")), collect_list(spark, F.struct("a", "b"), True)):
        plan = df.groupBy("g").agg(value.alias("m")).filter(F.col("g") == 1)._jdf.queryExecution().optimizedPlan()
        assert plan.toString().index("Filter") > plan.toString().index("Aggregate"), plan.toString()
