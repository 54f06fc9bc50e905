"""Checking a trace by replay (`capture.tracing.check`, `strata trace --check`): the run's script
runs again on exactly the input items each traced result item's trace names, and the item must
come out with the same values.

Two scripts, captured as `strata capture` captures them (in this process, the suite's session):
a join + aggregation over JSON Lines and CSV (after a first write of the same script, so the
replay finds the run's write by its number), whose items all pass; and an ORDER BY ... LIMIT
with ties, a window rank, an EXISTS and a NOT EXISTS subquery, where the LIMIT and the anti join
make the replay a weaker check and say so (the EXISTS replays exactly on its trace alone: the
rows that made it true are traced). A trace tampered with (an input left out of the replay) fails,
with the column, the values and the input it needed; so does an input rewritten since the run
(`strata trace --check` exits with 1); a run captured without a script cannot be checked and
says why.
"""

from __future__ import annotations

import json
import runpy
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from capture import OperatorProv, OpInput, OpType, capturing
from capture.storing import load_run
from capture.storing.runs import read_head
from capture.tracing import check, parse_pattern
from capture.tracing.checking import drawn, exactness
from capture.tracing.entry import wing
from store import Store
from store.engine import Engine
from store.errors import UserError
from strata.cli import main

JOIN_AGG = '''
import sys
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

spark = SparkSession.builder.getOrCreate()
orders = spark.read.json(sys.argv[1])
customers = spark.read.option("header", True).schema("cust long, country string").csv(sys.argv[2])
customers.write.mode("overwrite").parquet(sys.argv[3] + "/customers")
out = (orders.filter(F.col("amount") > 0).join(customers, "cust")
       .groupBy("country").agg(F.sum("amount").alias("total"), F.count("*").alias("n"),
                               F.max("item").alias("top")))
out.write.mode("overwrite").parquet(sys.argv[3] + "/by_country")
'''

RANKS = '''
import sys
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

spark = SparkSession.builder.getOrCreate()
scores = spark.read.json(sys.argv[1])
scores.orderBy(F.desc("score")).limit(3).write.mode("overwrite").parquet(sys.argv[2] + "/top")
ranked = scores.withColumn("rk", F.rank().over(Window.partitionBy("g").orderBy(F.desc("score"))))
ranked.filter("rk <= 2").write.mode("overwrite").parquet(sys.argv[2] + "/ranked")
scores.createOrReplaceTempView("scores")
spark.sql("SELECT name, g FROM scores s WHERE EXISTS (SELECT 1 FROM scores t WHERE t.g = s.g AND t.score > s.score)"
          ).write.mode("overwrite").parquet(sys.argv[2] + "/beaten")
spark.sql("SELECT name, g FROM scores s WHERE NOT EXISTS (SELECT 1 FROM scores t WHERE t.g = s.g AND t.score > s.score)"
          ).write.mode("overwrite").parquet(sys.argv[2] + "/unbeaten")
spark.sql("WITH best AS (SELECT g, max(score) AS top, count(*) AS n FROM scores GROUP BY g) "
          "SELECT a.g, a.top, b.g AS other, b.n FROM best a JOIN best b ON a.top > b.top"
          ).write.mode("overwrite").parquet(sys.argv[2] + "/cte")
'''

ORDERS = [{"cust": c, "amount": a, "item": i} for c, a, i in
          [(1, 10.5, "pen"), (2, 3.25, "ink"), (1, 7.0, "cap"), (3, 0.0, "nib"), (3, 12.0, "pad"), (2, 1.0, "box"),
           (4, 2.0, "tag"), (1, -1.0, "bad")]]
CUSTOMERS = "cust,country\n1,fr\n2,de\n3,fr\n4,it\n5,de\n"
SCORES = [{"name": n, "g": g, "score": s} for n, g, s in
          [("a", "x", 9), ("b", "x", 7), ("c", "x", 7), ("d", "y", 7), ("e", "y", 5), ("f", "y", 5), ("g", "y", 1)]]


def _capture(spark, store, script, args, cwd) -> list:
    """Run ``script`` under capture as `strata capture` does (its program recorded)."""
    program = {"script": str(script), "args": [str(a) for a in args], "cwd": str(cwd)}
    argv = sys.argv
    sys.argv = [str(script), *program["args"]]
    try:
        with capturing(spark, store, pipeline=script.stem, model=False, program=program) as cap:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv
    return [info.run for info in cap.runs]


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("check")
    (root / "orders.json").write_text("".join(json.dumps(o) + "\n" for o in ORDERS))
    (root / "customers.csv").write_text(CUSTOMERS)
    (root / "scores.json").write_text("".join(json.dumps(s) + "\n" for s in SCORES))
    (root / "join_agg.py").write_text(JOIN_AGG)
    (root / "ranks.py").write_text(RANKS)
    store = Store.open(str(root / "store"), spark=lambda: spark)
    join_agg = _capture(spark, store, root / "join_agg.py",
                        [root / "orders.json", root / "customers.csv", root / "out"], root)
    ranks = _capture(spark, store, root / "ranks.py", [root / "scores.json", root / "out"], root)
    return Store.open(str(root / "store"), spark=lambda: spark), join_agg, ranks, root


def test_join_aggregate_items_come_out_again(runs):
    store, (_, by_country), _, _ = runs
    done = check(store, by_country, parse_pattern("/country"))
    assert done.matched == 3 and len(done.items) == 3
    assert [i.verdict for i in done.items] == ["ok"] * 3, done.render()
    assert done.passed and not done.weaker and done.program["write"] == 2
    fr = next(i for i in done.items if i.expected["country"] == "fr")
    # fr: orders 1 (twice) and 3 (twice, one of amount 0 filtered out) and customers 1 and 3
    assert fr.expected == {"country": "fr", "total": 29.5, "n": 3, "top": "pen"}
    assert sum(fr.inputs.values()) == 5, fr.inputs
    assert done.summary().startswith("3 checked: 3 ok, 0 weaker check, 0 failed, 0 not checkable")


def test_an_input_left_out_fails_and_says_where(runs):
    store, (_, by_country), _, _ = runs

    def drop_one(item_id, keep):  # the orders source (3 items, the customers 2): leave one out
        oid = max(keep, key=lambda o: len(keep[o]))
        return {**keep, oid: set(sorted(keep[oid])[1:])}

    done = check(store, by_country, parse_pattern("/country = 'fr'"), tamper=drop_one)
    [item] = done.items
    assert item.verdict == "differs" and not done.passed, done.render()
    assert any(n.startswith("column total: expected 29.5, got") for n in item.notes), item.notes
    assert any(n.startswith("column n: expected 3, got 2") for n in item.notes), item.notes
    assert item.notes[-1].startswith("it comes out right when the whole input of orders.json (operator"), item.notes

    gone = check(store, by_country, parse_pattern("/country = 'de'"), tamper=lambda i, keep: {})
    [item] = gone.items
    assert item.verdict == "missing" and item.got is None
    assert "came out instead: nothing" in item.notes[0]
    assert gone.render().splitlines()[-1].startswith("1 checked: 0 ok, 0 weaker check, 1 failed")


def test_order_by_limit_with_ties_is_a_weaker_check(runs):
    store, _, (top, ranked, *_), _ = runs
    done = check(store, top, parse_pattern("/name"))
    assert len(done.items) == 3 and done.passed, done.render()
    assert {i.verdict for i in done.items} == {"weaker"}
    assert len(done.weaker) == 1 and "keeps the first rows only" in done.weaker[0]
    assert "not exact: operator" in done.render()
    # a rank's trace names its whole partition: the replay is exact
    ranks = check(store, ranked, parse_pattern("/rk"))
    assert [i.verdict for i in ranks.items] == ["ok"] * len(ranks.items) and len(ranks.items) == 6, ranks.render()
    assert not ranks.weaker


def test_cli_check_lines_summary_and_errors(runs):
    store, (_, by_country), _, root = runs
    runner = CliRunner()
    out = runner.invoke(main, ["--store", store.root, "trace", "--check", "--run", by_country, "--limit", "2",
                               "/country"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith(f"check run {by_country!r}: 2 result items matched")
    assert sum(line.startswith("ok ") for line in lines) == 2
    assert lines[-1].startswith("2 checked: 2 ok, 0 weaker check, 0 failed, 0 not checkable")
    bad = runner.invoke(main, ["--store", store.root, "trace", "--check", "--run", "nope/run-1", "/country"])
    assert bad.exit_code == 2 and "no captured run 'nope/run-1'" in bad.output
    js = runner.invoke(main, ["--store", store.root, "trace", "--check", "--run", by_country, "--limit", "2",
                              "--format", "json", "/country"])
    assert js.exit_code == 0, js.output
    doc = json.loads(js.output)
    assert doc["passed"] and doc["counts"] == {"ok": 2, "weaker": 0, "failed": 0, "notCheckable": 0}
    assert [i["verdict"] for i in doc["items"]] == ["ok", "ok"] and all(i["inputs"] for i in doc["items"])
    assert doc["items"][0]["expected"] == doc["items"][0]["got"]
    bad = runner.invoke(main, ["--store", store.root, "trace", "--check", "--format", "csv", "/country"])
    assert bad.exit_code == 2 and "--no-values do not apply" in bad.output


def test_a_run_without_a_recorded_program_is_refused(spark, tmp_path):
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="block", model=False):
        spark.createDataFrame([(1, "a")], "k long, v string").write.parquet(str(tmp_path / "out"))
    with pytest.raises(UserError, match="records no program to replay"):
        check(store, None, parse_pattern("/k"))


def test_samples_and_random_values_are_not_checkable_a_limit_is_weaker():
    src = OperatorProv(1, OpType.SOURCE, "read.json", (), (), detail="json x", dataset="x")

    def on(op: OperatorProv):
        return exactness((src, op), 2)

    def one(type_, method, detail=""):
        return OperatorProv(2, type_, method, (OpInput(1, None),), None, detail=detail)

    plan = on(one(OpType.FILTER, "sample", "Sample 0.0, 0.5, false, 7"))
    assert plan.not_checkable.startswith("operator 2 is a sample") and plan.weaker == ()
    plan = on(one(OpType.SELECT, "select", "Project [a#1, rand(7) AS r#2]"))
    assert plan.not_checkable.startswith("operator 2 (select) computes values with rand()")
    plan = on(one(OpType.SELECT, "select", "Project [p_brand(a#1) AS b#2, operand#3]"))
    assert plan.not_checkable is None and plan.weaker == ()
    plan = on(one(OpType.LIMIT, "limit", "GlobalLimit 3"))
    assert plan.not_checkable is None and len(plan.weaker) == 1
    assert plan.weaker[0].startswith("operator 2 (limit) keeps the first rows only")
    # a semi or existence join's matching right items are traced: exact; an anti join's right side is read whole
    for detail, whole in [("Join LeftSemi, (a#1 = b#2)", set()), ("Join ExistenceJoin(exists#3), (a#1 = b#2)", set()),
                          ("Join LeftAnti, (a#1 = b#2)", {1}), ("Join LeftSemi [right items not recorded]", {1}),
                          ("Join ExistenceJoin(exists#3), (a#1 = b#2) [right items not recorded]", {1})]:
        plan = on(OperatorProv(2, OpType.JOIN, "join", (OpInput(1, ("a",)), OpInput(1, ("b",))), (), detail=detail))
        assert plan.whole == whole and len(plan.weaker) == len(whole), detail
        if whole:
            assert plan.weaker[0].startswith("operator 2 is a " + ("left anti join (NOT EXISTS" if "Anti" in detail
                                                                    else "semi join that records no right")), detail


def test_exists_replays_on_its_trace_alone(runs):
    store, _, (_, _, beaten, *_), _ = runs
    done = check(store, beaten, parse_pattern("/name"))
    # b, c (beaten by a), e, f (by d) and g (by d, e and f): each traced to its own row and the
    # rows that beat it (the semi join's matching right items), nothing read whole
    given = {i.expected["name"]: sum(i.inputs.values()) for i in done.items}
    assert given == {"b": 2, "c": 2, "e": 2, "f": 2, "g": 4}, done.render()
    assert {i.verdict for i in done.items} == {"ok"} and not done.weaker, done.render()

    def outer_only(item_id, keep):  # the subquery's rows left out (its scan is the later source)
        return {oid: ids for oid, ids in keep.items() if oid == min(keep)}

    gone = check(store, beaten, parse_pattern("/name = 'g'"), tamper=outer_only)
    [item] = gone.items
    assert item.verdict == "missing" and not gone.passed, gone.render()
    assert item.notes[-1].startswith("it comes out right when the whole input of scores.json (operator"), item.notes


def test_not_exists_reads_its_subquery_whole_and_says_so(runs):
    store, _, (_, _, _, unbeaten, _), _ = runs
    done = check(store, unbeaten, parse_pattern("/name"))
    # a and d: no row of their g scores higher; the anti join traces them to their own rows only
    assert sorted(i.expected["name"] for i in done.items) == ["a", "d"]
    assert {i.verdict for i in done.items} == {"weaker"}, done.render()
    assert len(done.weaker) == 1 and "left anti join" in done.weaker[0] and "scores.json (operator" in done.weaker[0]
    assert all(list(i.inputs.values()) == [-1] for i in done.items), done.render()  # the subquery's input: whole


def test_a_cte_read_twice_is_one_set_of_operators_and_replays(runs):
    """A CTE referenced twice is translated once (capture/auto/plan.py `visit_CTERelationRef`):
    its aggregation is one operator, read by both sides of the join, and the joined row traces
    to the rows of both groups and comes out again from them alone."""
    store, _, (*_, cte), _ = runs
    ops = load_run(store, cte).operators
    assert [o.type for o in ops].count(OpType.AGGREGATION) == 1, ops
    [join] = [o for o in ops if o.type is OpType.JOIN]
    [agg] = [o for o in ops if o.type is OpType.AGGREGATION]
    assert [i.pred for i in join.inputs] == [agg.oid, agg.oid]
    done = check(store, cte, parse_pattern("/g"))
    [item] = done.items
    assert item.expected == {"g": "x", "top": 9, "other": "y", "n": 4}
    assert item.verdict == "ok" and done.passed, done.render()
    assert sum(item.inputs.values()) == 7, item.inputs  # every score: x's 3 and y's 4


def test_cli_exit_code_1_when_an_item_comes_out_otherwise(spark, tmp_path):
    # Parquet ids are file and row index: a file rewritten in place keeps them, not its values
    pq.write_table(pa.table({"k": ["a", "a", "b"], "v": [1, 2, 3]}), tmp_path / "t.parquet")
    (tmp_path / "sums.py").write_text(
        "import sys\nfrom pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "spark.read.parquet(sys.argv[1]).groupBy('k').sum('v').write.parquet(sys.argv[2])\n")
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    _capture(spark, store, tmp_path / "sums.py", [tmp_path / "t.parquet", tmp_path / "out"], tmp_path)
    pq.write_table(pa.table({"k": ["a", "a", "b"], "v": [1, 5, 3]}), tmp_path / "t.parquet")
    out = CliRunner().invoke(main, ["--store", store.root, "trace", "--check", "/k"])
    assert out.exit_code == 1, out.output
    assert "differs" in out.output and "column sum(v): expected 3, got 6" in out.output
    assert "does not come out right even from the whole input" in out.output
    assert out.output.splitlines()[-1].startswith("2 checked: 1 ok, 0 weaker check, 1 failed")


def test_a_count_of_rows_traces_to_the_rows_it_counts(spark, tmp_path):
    """count(*) reads no column: the rows it counts contribute to it as a whole (docs/capture.md,
    "Aggregates over no column"), so its trace names them and the replay gives the count back,
    also over an EXCEPT (TPC-DS Q87's shape), where the subtracted side is read whole."""
    pq.write_table(pa.table({"g": ["x", "x", "y", "y", "z"], "s": [9, 7, 5, 5, 1]}), tmp_path / "t.parquet")
    pq.write_table(pa.table({"g": ["x", "q"]}), tmp_path / "u.parquet")
    (tmp_path / "counts.py").write_text(
        "import sys\nfrom pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "spark.read.parquet(sys.argv[1]).createOrReplaceTempView('t')\n"
        "spark.read.parquet(sys.argv[2]).createOrReplaceTempView('u')\n"
        "spark.sql('SELECT count(*) AS n FROM t').write.parquet(sys.argv[3] + '/all')\n"
        "spark.sql('SELECT count(*) AS n FROM (SELECT g FROM t EXCEPT SELECT g FROM u)')"
        ".write.parquet(sys.argv[3] + '/n')\n")
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    every, kept = _capture(spark, store, tmp_path / "counts.py",
                           [tmp_path / "t.parquet", tmp_path / "u.parquet", tmp_path / "out"], tmp_path)
    done = check(store, every, parse_pattern("/n"))
    [item] = done.items
    assert item.verdict == "ok" and item.expected == {"n": 5}, done.render()
    assert item.inputs == {str(tmp_path / "t.parquet"): 5}, done.render()
    done = check(store, kept, parse_pattern("/n"))
    [item] = done.items  # y, y and z are counted; u, which takes x away, is read whole
    assert item.verdict == "weaker" and item.expected == {"n": 2}, done.render()
    assert item.inputs == {str(tmp_path / "t.parquet"): 3, str(tmp_path / "u.parquet"): -1}, done.render()


def test_a_sample_is_drawn_from_every_matched_item_alike_on_both_engines(runs):
    store, _, (_, ranked, *_), _ = runs
    head = read_head(store, ranked)
    pattern = parse_pattern("/rk")
    matched = {e: wing(store, head, e).matched_rows(store, head, pattern, None, True)
               for e in (Engine.LOCAL, Engine.SPARK)}
    assert {len(rows) for rows in matched.values()} == {6}
    draws = {e: [r["id"] for r in drawn(rows, 3, 7)] for e, rows in matched.items()}
    assert draws[Engine.LOCAL] == draws[Engine.SPARK] and len(set(draws[Engine.LOCAL])) == 3
    assert len({tuple(sorted(r["id"] for r in drawn(matched[Engine.LOCAL], 3, s))) for s in range(8)}) > 1
    done = check(store, ranked, pattern, sample=2, seed=7)
    assert done.matched == 6 and [i.item_id for i in done.items] == draws[Engine.LOCAL][:2], done.render()
    assert done.render().splitlines()[0].endswith("6 result items matched, a sample of 2 checked (seed 7)")
    assert done.passed and done.as_json()["seed"] == 7
    with pytest.raises(UserError, match="not both"):
        check(store, ranked, pattern, 2, sample=2)
    runner = CliRunner()
    for args, says in [(["--sample", "2"], "use it with --check"),
                       (["--check", "--sample", "2", "--limit", "2"], "give one")]:
        out = runner.invoke(main, ["--store", store.root, "trace", "--run", ranked, *args, "/rk"])
        assert out.exit_code == 2 and says in out.output, out.output
