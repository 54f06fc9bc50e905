"""Semi and existence joins record the right items that match each kept row (docs/capture.md,
"Supported operators"): EXISTS, IN (under an OR: Spark's existence join) and INTERSECT, captured
and traced. A traced output row names exactly the right rows that satisfy the condition with it,
as influencing (no value is copied from them), and none of the others; its own left rows
contribute. An anti join (NOT EXISTS) names no right row. Checked against a reference in plain
Python over generated orders and lines; the captured writes equal the plain program's rows.
"""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from capture import capturing
from capture.auto.plan import translate
from capture.storing.runs import read_head
from capture.tracing import parse_pattern, trace
from capture.tracing.checking import exactness
from capture.tracking.tracker import Tracker
from store import Store

ORDERS, LINES = "ok long, v long", "lk long, ok long, c long, r long"

# name -> the query; over the views semi_o (orders) and semi_l (lines)
QUERIES = {
    "exists": "SELECT ok, v FROM semi_o o WHERE EXISTS (SELECT 1 FROM semi_l l WHERE l.ok = o.ok AND l.c < l.r)",
    "in_or": "SELECT ok, v FROM semi_o WHERE ok IN (SELECT ok FROM semi_l WHERE c < r) OR v > 6",
    "intersect": "SELECT ok FROM semi_o INTERSECT SELECT ok FROM semi_l WHERE c < r",
    "not_exists": "SELECT ok, v FROM semi_o o WHERE NOT EXISTS (SELECT 1 FROM semi_l l WHERE l.ok = o.ok "
                  "AND l.c < l.r)",
}


def _reference(name: str, orders: list[tuple], lines: list[tuple]) -> dict[int, tuple[set, set]]:
    """Per output ``ok`` of query ``name``: (the orders it comes from, by position; the lines
    that influence it, by ``lk``) -- the lines of its ``ok`` with ``c < r`` for EXISTS, IN and
    INTERSECT, none for NOT EXISTS."""
    def match(k):
        return {lk for lk, ok, c, r in lines if ok == k and c < r}

    def keep(k, v):
        return {"exists": bool(match(k)), "in_or": bool(match(k)) or v > 6, "intersect": bool(match(k)),
                "not_exists": not match(k)}[name]

    out: dict[int, tuple[set, set]] = {}
    for i, (k, v) in enumerate(orders):
        if keep(k, v):
            mine, _ = out.setdefault(k, (set(), set() if name == "not_exists" else match(k)))
            mine.add(i)
    return out


def _ids(spark, path: str, schema: str, key: str) -> dict[int, int]:
    """item id -> the record's ``key`` (its position for orders), as capture gives the ids."""
    tdf = translate(Tracker(spark), spark.read.schema(schema).json(path))
    return {r["__item"]: r[key] for r in tdf.with_item_ids("__item").collect()}


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(orders=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), min_size=1, max_size=5),
       lines=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 3)), max_size=8))
def test_a_kept_row_traces_to_the_right_rows_that_match_it(spark, tmp_path_factory, orders, lines):
    root = tmp_path_factory.mktemp("semi")
    lines = [(lk, ok, c, r) for lk, (ok, c, r) in enumerate(lines)]
    (root / "orders.json").write_text("".join(json.dumps({"pos": i, "ok": k, "v": v}) + "\n"
                                              for i, (k, v) in enumerate(orders)))
    (root / "lines.json").write_text("".join(json.dumps(dict(zip(("lk", "ok", "c", "r"), x, strict=True))) + "\n"
                                             for x in lines))
    o, ln = str(root / "orders.json"), str(root / "lines.json")
    spark.read.schema(ORDERS).json(o).createOrReplaceTempView("semi_o")
    spark.read.schema(LINES).json(ln).createOrReplaceTempView("semi_l")
    store = Store.open(str(root / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="semi", model=False) as cap:
        for name, q in QUERIES.items():
            spark.sql(q).write.parquet(str(root / name))
    order_of, line_of = _ids(spark, o, ORDERS + ", pos long", "pos"), _ids(spark, ln, LINES, "lk")
    for (name, q), info in zip(QUERIES.items(), cap.runs, strict=True):
        plain = sorted(tuple(r) for r in spark.sql(q).collect())
        assert sorted(tuple(r) for r in spark.read.parquet(str(root / name)).collect()) == plain, name
        expected = _reference(name, orders, lines)
        assert sorted({r[0] for r in plain}) == sorted(expected), name
        for k, (mine, influencing) in expected.items():
            got = trace(store, info.run, parse_pattern(f"/ok = {k}"), limit=10).rows()
            from_lines = [r for r in got if r[1] in line_of]
            assert {line_of[r[1]] for r in from_lines} == influencing, (name, k)
            assert {r[3] for r in from_lines} <= {"influencing"}, (name, k, from_lines)
            from_orders = {order_of[r[1]] for r in got if r[1] in order_of and r[3] == "contributing"}
            assert from_orders == mine, (name, k)
            assert all(r[1] in line_of or r[1] in order_of for r in got), (name, k)


def test_a_semi_join_without_a_condition_records_no_right_item(spark, tmp_path):
    """`orders.join(lines, how="left_semi")` with no condition keeps every order if there is any
    line: every line would match every order (n × m pairs), so none is recorded; the order rows
    still contribute, and the written rows are the plain program's."""
    (tmp_path / "orders.json").write_text("".join(json.dumps({"ok": k, "v": k * 10}) + "\n" for k in (1, 2, 3)))
    (tmp_path / "lines.json").write_text("".join(json.dumps({"lk": i, "ok": 9, "c": 0, "r": 1}) + "\n"
                                                 for i in range(4)))
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)

    def program():
        orders = spark.read.schema(ORDERS).json(str(tmp_path / "orders.json"))
        return orders.join(spark.read.schema(LINES).json(str(tmp_path / "lines.json")), how="left_semi")

    with capturing(spark, store, pipeline="semi0", model=False) as cap:
        program().write.parquet(str(tmp_path / "out"))
    assert sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect()) == \
        sorted(tuple(r) for r in program().collect()) == [(1, 10), (2, 20), (3, 30)]
    got = trace(store, cap.runs[0].run, parse_pattern("/ok = 2"), limit=10).rows()
    assert got and {r[0] for r in got} == {str(tmp_path / "orders.json")}, got  # no line is named
    assert ("ok", "contributing") in {(r[2], r[3]) for r in got}, got


def test_in_over_an_aggregate_records_no_right_item(spark, tmp_path):
    """`ok IN (SELECT ok … GROUP BY ok …)`: each right row is a group carrying its members, so
    recording the matches would copy every member into every kept row (TPC-DS Q70: all sales
    into every sale); no right item is recorded and the join's detail says so, which the replay
    check reads as "its right side whole"."""
    (tmp_path / "orders.json").write_text("".join(json.dumps({"ok": k, "v": k}) + "\n" for k in (1, 2, 3)))
    (tmp_path / "lines.json").write_text("".join(json.dumps({"lk": i, "ok": k, "c": 0, "r": 1}) + "\n"
                                                 for i, k in enumerate((1, 1, 2, 3, 3, 3))))
    spark.read.schema(ORDERS).json(str(tmp_path / "orders.json")).createOrReplaceTempView("agg_o")
    spark.read.schema(LINES).json(str(tmp_path / "lines.json")).createOrReplaceTempView("agg_l")
    q = "SELECT ok, v FROM agg_o WHERE ok IN (SELECT ok FROM agg_l GROUP BY ok HAVING count(*) > 1)"
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="semi_agg", model=False) as cap:
        spark.sql(q).write.parquet(str(tmp_path / "out"))
    assert sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect()) == [(1, 1), (3, 3)]
    _right_not_recorded(store, cap.runs[0].run, tmp_path, "LeftSemi", "records no right item")


def _right_not_recorded(store, run: str, tmp_path, join: str, why: str) -> None:
    """Run ``run``'s trace of ``/ok = 3`` names the orders only; its ``join`` says it records no
    right item, and the replay check reads that side whole, saying ``why``."""
    got = trace(store, run, parse_pattern("/ok = 3"), limit=10).rows()
    assert got and {r[0] for r in got} == {str(tmp_path / "orders.json")}, got
    head = read_head(store, run)
    [op] = [o for o in head.operators if join in (o.detail or "")]
    assert op.detail.endswith("[right items not recorded]"), op.detail
    plan = exactness(head.operators, head.result_oid)
    assert plan.whole and why in " ".join(plan.weaker)


def test_a_filters_scalar_subquery_records_no_right_item(spark, tmp_path):
    """`HAVING sum(v) > (SELECT avg(c) …)` (TPC-DS Q14's shape): the subquery's one row is an
    aggregation over every line, compared with every group; recording it would copy all the
    lines' ids into every group (n × m). The join records no right item and says so: the result's
    hidden columns hold each group's own orders and nothing of the lines, a trace names orders
    only, and the replay check reads the lines whole. The rows are the plain program's."""
    (tmp_path / "orders.json").write_text("".join(json.dumps({"ok": k, "v": v}) + "\n"
                                                  for k, v in ((1, 1), (1, 2), (2, 9), (3, 4), (3, 5))))
    (tmp_path / "lines.json").write_text("".join(json.dumps({"lk": i, "ok": 0, "c": c, "r": 0}) + "\n"
                                                 for i, c in enumerate((2, 4, 6, 8))))
    spark.read.schema(ORDERS).json(str(tmp_path / "orders.json")).createOrReplaceTempView("sc_o")
    spark.read.schema(LINES).json(str(tmp_path / "lines.json")).createOrReplaceTempView("sc_l")
    q = "SELECT ok, sum(v) AS s FROM sc_o GROUP BY ok HAVING sum(v) > (SELECT avg(c) FROM sc_l)"
    ann = translate(Tracker(spark), spark.sql(q)).annotated
    arrays = [f.name for f in ann.schema.fields if f.name.startswith("__strata") and f.dataType.typeName() == "array"]
    assert len(arrays) == 1, ann.schema  # the groups' members; no copy of the subquery's
    assert sorted((r["ok"], r["n"]) for r in ann.select("ok", F.size(arrays[0]).alias("n")).collect()) == \
        [(2, 1), (3, 2)]
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="scalar_filter", model=False) as cap:
        spark.sql(q).write.parquet(str(tmp_path / "out"))
    assert sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect()) == \
        sorted(tuple(r) for r in spark.sql(q).collect()) == [(2, 9), (3, 9)]
    _right_not_recorded(store, cap.runs[0].run, tmp_path, "LeftOuter", "scalar subquery")


def test_intersect_records_each_values_right_copies_once(spark, tmp_path):
    """INTERSECT makes its left side distinct before the semi join: a value with 3 left copies
    and 4 right copies records the 3 copies as the distinct row's members and the 4 right copies
    once, as its matches (7 ids), not the 4 under each left copy (3 × 4; TPC-DS Q14's store ∩
    catalog: 6.8 M ids at sf 0.01). The trace still names all of them."""
    (tmp_path / "orders.json").write_text("".join(json.dumps({"ok": k, "v": v}) + "\n"
                                                  for k, v in ((1, 0), (1, 1), (1, 2), (2, 3))))
    (tmp_path / "lines.json").write_text("".join(json.dumps({"lk": i, "ok": k, "c": 0, "r": 1}) + "\n"
                                                 for i, k in enumerate((1, 1, 1, 1, 3))))
    o, ln = str(tmp_path / "orders.json"), str(tmp_path / "lines.json")
    spark.read.schema(ORDERS).json(o).createOrReplaceTempView("ix_o")
    spark.read.schema(LINES).json(ln).createOrReplaceTempView("ix_l")
    q = "SELECT ok FROM ix_o INTERSECT SELECT ok FROM ix_l"
    ann = translate(Tracker(spark), spark.sql(q)).annotated
    arrays = sorted(f.name for f in ann.schema.fields if f.name.startswith("__strata") and
                    f.dataType.typeName() == "array")
    assert [a.split("_")[3] for a in arrays] == ["agg", "match"], ann.schema
    [row] = ann.select("ok", *(F.size(a) for a in arrays)).collect()
    assert tuple(row) == (1, 3, 4)
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="intersect", model=False) as cap:
        spark.sql(q).write.parquet(str(tmp_path / "out"))
    assert [tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect()] == [(1,)]
    got = trace(store, cap.runs[0].run, parse_pattern("/ok = 1"), limit=10).rows()
    order_of, line_of = _ids(spark, o, ORDERS + ", pos long", "ok"), _ids(spark, ln, LINES, "lk")
    assert sorted({line_of[r[1]] for r in got if r[1] in line_of}) == [0, 1, 2, 3]
    assert len({r[1] for r in got if r[1] in order_of}) == 3


def test_an_in_records_its_matches_without_reading_the_left_side_again(spark, tmp_path):
    """IN (and EXISTS correlated by equalities) is an equi-join: a row's matching right rows
    depend on its key alone, so where the right side is the smaller one capture groups it by key
    and joins that to the join's rows; the left side (here a scan of `orders`, 2,000 rows beside
    60 lines) is read once, as in the plain plan. A condition beyond equalities (`l.c < o.v`)
    still needs the left rows themselves, and so does an IN whose right side is the larger:
    joining first keeps only the right rows that match, where grouping it would take all; those
    pairs then also say which left rows are kept, so the right side is read once."""
    spark.createDataFrame([(k, k % 5, f"order {k}") for k in range(2000)], "okey long, v long, note string") \
        .write.parquet(str(tmp_path / "o"))
    spark.createDataFrame([(i, i % 13, i % 4, 2) for i in range(60)], "lk long, lkey long, c long, r long") \
        .write.parquet(str(tmp_path / "l"))
    spark.read.parquet(str(tmp_path / "o")).createOrReplaceTempView("in_o")
    spark.read.parquet(str(tmp_path / "l")).createOrReplaceTempView("in_l")

    def scans(sql: str, table: str = "o") -> tuple[int, int]:
        def count(df):  # the scans of the files of `table`, plain and captured
            where = re.escape(f"[file:{tmp_path / table}]")
            plan = df._jdf.queryExecution().executedPlan().toString()
            return len(re.findall(rf"FileScan parquet [^\n]*{where}", plan))
        return count(spark.sql(sql)), count(translate(Tracker(spark), spark.sql(sql)).annotated)

    assert scans("SELECT okey, v FROM in_o WHERE okey IN (SELECT lkey FROM in_l WHERE c < r)") == (1, 1)
    assert scans("SELECT okey, v FROM in_o o WHERE EXISTS (SELECT 1 FROM in_l l WHERE l.lkey = o.okey)") == (1, 1)
    assert scans("SELECT okey, v FROM in_o o WHERE EXISTS (SELECT 1 FROM in_l l WHERE l.lkey = o.okey "
                 "AND l.c < o.v)") == (1, 2)
    assert scans("SELECT lk FROM in_l WHERE lkey IN (SELECT okey FROM in_o WHERE note <> 'x')", "l") == (1, 2)
    # without keys alone, the matches are the pairs the join finds, and the rows kept are the
    # left rows that have some: the right side is read once
    assert scans("SELECT okey, v FROM in_o o WHERE EXISTS (SELECT 1 FROM in_l l WHERE l.lkey = o.okey "
                 "AND l.c < o.v)", "l") == (1, 1)
    assert scans("SELECT lk FROM in_l WHERE lkey IN (SELECT okey FROM in_o WHERE note <> 'x')", "o") == (1, 1)
