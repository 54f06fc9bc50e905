"""GROUPING SETS, ROLLUP and CUBE (docs/capture.md, "Grouping sets"): Spark expands every input
row once per grouping set and aggregates the copies. Capture computes an aggregation of
order-free functions (sum, count, avg, min, max, …) in two levels -- the input grouped by the
grouping columns, each group expanded -- and must store exactly what the row-by-row expand
stores: the same rows, values, member ids and positions. Checked against that row-by-row
computation and, for traces, against a reference in plain Python over generated rows with
null keys; the captured writes equal the plain program's rows.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

from capture import capturing
from capture.auto.plan import translate
from capture.tracing import parse_pattern, trace
from capture.tracking import grouping
from capture.tracking.tracker import Tracker
from store import Store

ROWS = "pos long, k1 long, k2 string, v int"
KEYS = ("k1", "k2")

# name -> (query over the view gs_rows, its grouping sets as the key columns each keeps)
QUERIES = {
    # count(k2) counts the input's values of k2, not its copies' (nulls where k2 is rolled up)
    "rollup": ("SELECT k1, k2, sum(v) AS s, count(*) AS n, count(k2) AS c, grouping_id() AS g FROM gs_rows "
               "GROUP BY ROLLUP (k1, k2)",
               [("k1", "k2"), ("k1",), ()]),
    "cube": ("SELECT k2, k1, avg(v) AS a, min(v) AS lo, grouping_id() AS g FROM gs_rows GROUP BY CUBE (k1, k2)",
             [("k1", "k2"), ("k1",), ("k2",), ()]),
    "sets": ("SELECT k1, k2, max(v) + count(v) AS m, sum(v) / count(*) AS r, grouping_id() AS g FROM gs_rows "
             "GROUP BY GROUPING SETS ((k1), (k2), ())", [("k1",), ("k2",), ()]),
}


def _canonical(value) -> str:
    """A value with every array's elements in sorted order (a group's members are collected in
    no particular order), as text."""
    if isinstance(value, list):
        return json.dumps(sorted(_canonical(v) for v in value))
    if isinstance(value, dict):
        return json.dumps(sorted((k, _canonical(v)) for k, v in value.items()))
    return json.dumps(value, default=str)


def _annotated(spark, query: str, row_by_row: bool, monkeypatch) -> tuple[list[str], bool]:
    """The captured rows of ``query``, hidden member columns included (:func:`_canonical`), and
    whether the two-level computation made them."""
    made = []

    def spy(*args, **kwargs):
        got = real(*args, **kwargs)
        made.append(got is not None)
        return got

    real = grouping.by_groups
    with monkeypatch.context() as m:
        m.setattr(grouping, "by_groups", (lambda *a, **k: None) if row_by_row else spy)
        df = translate(Tracker(spark), spark.sql(query)).annotated
        rows = sorted(_canonical(r.asDict(recursive=True)) for r in df.collect())
    return rows, any(made)


def _reference(rows: list[tuple], keeps: tuple[str, ...], group: dict) -> set[int]:
    """The positions of the rows of ``group`` (its kept keys' values) in grouping set ``keeps``."""
    at = {"k1": 1, "k2": 2}
    return {r[0] for r in rows if all(r[at[k]] == group[k] for k in keeps)}


@settings(max_examples=examples(2, 8), deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(st.tuples(st.sampled_from([0, 1, None]), st.sampled_from(["a", "b", None]),
                               st.integers(0, 5)), min_size=1, max_size=9))
def test_grouping_sets_store_what_the_row_by_row_expand_stores(spark, tmp_path_factory, monkeypatch, rows):
    root = tmp_path_factory.mktemp("sets")
    rows = [(i, *r) for i, r in enumerate(rows)]
    (root / "rows.json").write_text("".join(json.dumps(dict(zip(("pos", "k1", "k2", "v"), r, strict=True))) + "\n"
                                            for r in rows))
    spark.read.schema(ROWS).json(str(root / "rows.json")).createOrReplaceTempView("gs_rows")
    for name, (query, _) in QUERIES.items():
        two_level, used = _annotated(spark, query, False, monkeypatch)
        assert used, name
        assert two_level == _annotated(spark, query, True, monkeypatch)[0], name

    store = Store.open(str(root / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="sets", model=False) as cap:
        for name, (query, _) in QUERIES.items():
            spark.sql(query).write.parquet(str(root / name))
    ids = translate(Tracker(spark), spark.read.schema(ROWS).json(str(root / "rows.json"))).with_item_ids("__item")
    pos_of = {r["__item"]: r["pos"] for r in ids.collect()}
    for (name, (query, sets)), info in zip(QUERIES.items(), cap.runs, strict=True):
        plain = sorted(map(tuple, spark.sql(query).collect()), key=str)
        assert sorted(map(tuple, spark.read.parquet(str(root / name)).collect()), key=str) == plain, name
        for out in spark.sql(query).collect():
            keeps = sets[[i for i, s in enumerate(sets)
                          if out["g"] == sum(1 << (len(KEYS) - 1 - j) for j, k in enumerate(KEYS) if k not in s)][0]]
            if any(out[k] is None for k in keeps):
                continue  # a null key value: patterns compare values, not nulls
            where = " and ".join([f"/g = {out['g']}", *(f"/{k} = {json.dumps(out[k])}" for k in keeps)])
            got = trace(store, info.run, parse_pattern(where.replace('"', "'")), limit=50).rows()
            assert {pos_of[r[1]] for r in got} == _reference(rows, keeps, out.asDict()), (name, where)


@pytest.mark.parametrize("query", [
    "SELECT k1, collect_list(v) AS x FROM gs_rows GROUP BY ROLLUP (k1, k2)",
    "SELECT k1, first(v) AS x FROM gs_rows GROUP BY ROLLUP (k1, k2)",
    "SELECT k1, count(DISTINCT v) AS x FROM gs_rows GROUP BY ROLLUP (k1, k2)",
    "SELECT k1, sum(v * 0.5D) AS x FROM gs_rows GROUP BY ROLLUP (k1, k2)",
])
def test_values_that_do_not_merge_exactly_keep_the_row_by_row_expand(spark, monkeypatch, query):
    """collect_list's i-th value is its i-th member's (docs/capture.md, "Notes") and first()
    depends on the rows' order; a DISTINCT count does not add up over parts, and a sum of doubles
    depends on the order of its additions. Such an aggregation is computed row by row."""
    spark.createDataFrame([(0, 1, "a", 3), (1, 1, "b", 4), (2, 2, None, 4)], ROWS).createOrReplaceTempView("gs_rows")
    rows, used = _annotated(spark, query, False, monkeypatch)
    assert not used
    assert len(rows) == len(spark.sql(query).collect())



@pytest.mark.parametrize("query", ["SELECT k1, k2, sum(v) AS s FROM gs_rows GROUP BY ROLLUP (k1, k2)",
                                   "SELECT k1, sum(v) AS s FROM gs_rows GROUP BY k1"])
def test_sql_aggregations_keep_their_keys_whatever_the_session_says_of_group_columns(spark, monkeypatch, query):
    """`spark.sql.retainGroupColumns` shapes the DataFrame API's groupBy().agg(), not a SQL
    GROUP BY, whose output lists its keys itself: captured, it gives the plain rows."""
    spark.createDataFrame([(0, 1, "a", 3), (1, 1, "b", 4), (2, 2, None, 4)], ROWS).createOrReplaceTempView("gs_rows")
    spark.conf.set("spark.sql.retainGroupColumns", "false")
    try:
        df = translate(Tracker(spark), spark.sql(query)).annotated
        shown = df.select(*[c for c in df.columns if not c.startswith("__strata_")])
        got = sorted(map(tuple, shown.collect()), key=str)
        plain = sorted(map(tuple, spark.sql(query).collect()), key=str)
    finally:
        spark.conf.unset("spark.sql.retainGroupColumns")
    assert got == plain
