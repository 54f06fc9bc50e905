"""A captured query joins its tables in the order the plain query does (docs/capture.md, "Join
order"): an inner join's id is computed above the chain of inner joins and filters it belongs to,
so Spark's optimizer sees the plain plan's join tree and reorders it the same way. Listed as
`FROM a, b, f WHERE f.ak = a.k AND f.bk = b.k`, the plain plan joins `a` to `f` first (`a` and `b`
share no condition); a plan built join by join would multiply `a` by `b` before it meets `f`.
The captured rows, their hidden columns (in the order joining step by step gives) and every output
row's trace stay as they were.
"""

from __future__ import annotations

import re

from pyspark.sql import functions as F

from capture import capturing
from capture.auto.plan import translate
from capture.tracing import parse_pattern, trace
from capture.tracking.tracker import Tracker
from store import Store

QUERY = "SELECT a.x, b.y, f.v FROM jo_a a, jo_b b, jo_f f WHERE f.ak = a.k AND f.bk = b.k AND b.y > 1"


def _views(spark, tmp_path) -> None:
    spark.createDataFrame([(k, 10 * k) for k in range(40)], "k long, x long").write.parquet(str(tmp_path / "a"))
    spark.createDataFrame([(k, k % 4) for k in range(30)], "k long, y long").write.parquet(str(tmp_path / "b"))
    spark.createDataFrame([(i, i % 40, i % 30, 100 + i) for i in range(200)], "i long, ak long, bk long, v long") \
        .write.parquet(str(tmp_path / "f"))
    for name in "abf":
        spark.read.parquet(str(tmp_path / name)).createOrReplaceTempView(f"jo_{name}")


def _leaves(df) -> list[str]:
    """The tables of the executed plan's joins, in the plan's order (the folder of each scan)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return re.findall(r"FileScan parquet [^\n]*\[file:[^\]]*/(\w+)\]", plan)


def _ids(spark, path: str, key: str) -> dict[int, int]:
    """item id -> the row's ``key``, as capture gives a Parquet file's ids."""
    tdf = translate(Tracker(spark), spark.read.parquet(path))
    return {r["__item"]: r[key] for r in tdf.with_item_ids("__item").collect()}


def test_a_captured_query_joins_its_tables_in_the_plain_querys_order(spark, tmp_path):
    _views(spark, tmp_path)
    plain = spark.sql(QUERY)
    captured = translate(Tracker(spark), spark.sql(QUERY)).annotated
    assert _leaves(captured) == _leaves(plain) == ["a", "f", "b"]
    text = captured._jdf.queryExecution().executedPlan().toString()
    assert "CartesianProduct" not in text and "NestedLoopJoin" not in text
    assert sorted(captured.select("x", "y", "v").collect()) == sorted(plain.collect())
    # the join ids, computed above the chain, are the ones joining step by step gives: ops 1, 2
    # and 4 read a, b and f; op 3 joins a with b, op 5 that with f
    assert [c for c in captured.columns if c.startswith("__strata")] == [f"__strata_id_{k}" for k in range(1, 6)]
    ids = [F.col(f"__strata_id_{k}") for k in range(1, 6)]
    rows = captured.select((F.xxhash64(F.lit(3), ids[0], ids[1]) == ids[2]).alias("j3"),
                           (F.xxhash64(F.lit(5), ids[2], ids[3]) == ids[4]).alias("j5")).collect()
    assert len(rows) == len(plain.collect()) > 0 and all(r.j3 and r.j5 for r in rows)


def test_each_joined_row_traces_to_its_three_rows(spark, tmp_path):
    _views(spark, tmp_path)
    st = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    with capturing(spark, st, pipeline="jo", model=False) as cap:
        spark.sql(QUERY).write.parquet(str(tmp_path / "out"))
    a, b, f = (_ids(spark, str(tmp_path / n), k) for n, k in (("a", "k"), ("b", "k"), ("f", "i")))
    outputs = [r.v for r in spark.read.parquet(str(tmp_path / "out")).collect()]
    assert len(outputs) > 10
    for v in outputs[:: max(1, len(outputs) // 6)]:
        i = v - 100
        got = {r[1] for r in trace(st, cap.runs[0].run, parse_pattern(f"/v = {v}"), limit=10).rows()}
        assert got == {next(k for k, x in a.items() if x == i % 40), next(k for k, x in b.items() if x == i % 30),
                       next(k for k, x in f.items() if x == i)}, v
