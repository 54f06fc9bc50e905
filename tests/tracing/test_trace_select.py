"""SELECT ... FROM TRACE(...) and EXPLAIN TRACE: IQL's SELECT/WHERE over the trace rows."""

from __future__ import annotations

import pytest
from support.capture_helpers import TWEETS
from support.paths import ROOT
from support.running_example import running_example

import iql
from capture import Tracker
from iql.errors import IqlSemanticError
from store import Store

QUESTION = ("//id_str = ''lp'' and /tweets[count(text = ''Hello World'') >= 2]/text = ''Hello World''")
TRACE = f"TRACE(MATCH '{QUESTION}')"


def q(*parts: str) -> str:
    """An IQL statement from constant parts (no user values)."""
    return " ".join(parts)


@pytest.fixture(scope="module")
def traced(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("trace-select") / "store"
    store = Store.open(str(root), spark=spark)
    tracker = Tracker(spark, store, pipeline="running-example", model=False)
    result = running_example(tracker.read.json(TWEETS, name="tweets"))
    info = tracker.write(result, str(root.parent / "out"), format="parquet")
    store = Store.open(str(root), spark=spark)
    return store, info.run, iql.run(store, f"TRACE MATCH '{QUESTION}'").rows()


def test_where_filters_trace_rows_and_select_projects(traced):
    store, _, rows = traced
    res = iql.run(store, q("SELECT item_id, path FROM", TRACE, "t WHERE t.role = 'influencing' ORDER BY path, item_id"))
    assert res.columns == ("item_id", "path")
    want = sorted((r[2], r[3]) for r in rows if r[4] == "influencing")
    assert sorted(res.rows()) == want
    assert {p for _, p in want} == {"user.name", "retweet_cnt"}  # the running example's medium green
    assert [p for _, p in res.rows()] == sorted(p for _, p in want)


def test_group_by_counts_items_per_role_like_a_small_audit(traced):
    store, _, rows = traced
    res = iql.run(store, q("SELECT role, count(distinct item_id) AS items, count(*) AS nodes FROM", TRACE,
                           "GROUP BY role ORDER BY 1"))
    assert res.columns == ("role", "items", "nodes")
    expect = {}
    for r in rows:
        items, nodes = expect.get(r[4], (set(), 0))
        expect[r[4]] = (items | {r[2]}, nodes + 1)
    assert res.rows() == [(role, len(i), n) for role, (i, n) in sorted(expect.items())]


def test_in_list_distinct_and_limit(traced):
    store, run, rows = traced
    res = iql.run(store, q("SELECT DISTINCT dataset, path FROM", f"TRACE('{run}' MATCH '{QUESTION}')",
                           "WHERE path IN ('text', 'user.id_str') AND NOT role = 'influencing' ORDER BY path LIMIT 1"))
    assert res.rows() == [("tweets", "text")]


@pytest.mark.parametrize(
    ("query", "what", "column"),
    [
        ("SELECT colour FROM TRACE(MATCH '/user')", "trace rows have no column 'colour'", 8),
        ("SELECT x.path FROM TRACE(MATCH '/user') t", "unknown alias 'x'", 8),
        ("SELECT path, count(*) FROM TRACE(MATCH '/user')", "trace.path must appear in GROUP BY", 8),
        ("SELECT path FROM TRACE(MATCH '/user') WHERE count(*) > 1", "aggregate count() is not allowed here", 45),
        ("SELECT DISTINCT path FROM TRACE(MATCH '/user') ORDER BY role",
         "with DISTINCT or aggregates, ORDER BY must name a SELECT column", 57),
        ("SELECT t.id FROM TRACE(MATCH '/user') t", "trace rows have no column 'id'", 8),
        ("SELECT path FROM TRACE(MATCH '/user') WHERE accessed_by = 2", "cannot compare", 45),
    ],
)
def test_mistakes_point_at_the_query(traced, query, what, column):
    store, *_ = traced
    with pytest.raises(IqlSemanticError) as err:
        iql.run(store, query)
    assert what in str(err.value) and err.value.column == column and err.value.hint


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_explain_trace_shows_how_it_matches_and_the_associations_read(traced, spark, engine):
    _, run, _ = traced
    store = Store.open(traced[0].root, spark=spark, engine=engine)
    res = iql.run(store, q("EXPLAIN SELECT path FROM", f"TRACE(MATCH '{QUESTION}' LIMIT 5)",
                           "WHERE role = 'contributing'"))
    assert res.explain and res.columns == ("plan",)
    text = "\n".join(r[0] for r in res.rows())
    assert text.startswith(f"engine: {engine} ")
    assert f"Trace run '{run}', the first 5 matching result items" in text
    if engine == "spark":
        assert "compiled: Spark higher-order functions" in text and "NOT compiled" not in text
        assert "over the stored result's columns (no JSON)" in text and "pre-filter" not in text
        assert "items' schema: the run's stored result (no job)" in text
        assert "pyarrow reads their row groups on a local store, else a broadcast join" in text
    else:
        assert ("on the driver (no Spark job): the reference matcher over each item of the linked output files, "
                "read with pyarrow file by file, as its JSON view") in text
        assert "compiled:" not in text and "broadcast join" not in text
        assert "(the run's stored copy is split): pyarrow reads their row groups\n" in text
    # the running example: aggregation and union need associations; selects and the filter keep ids
    assert "8 aggregation (groupBy.agg <- 7): associations of the traced items only" in text
    assert "6 union (union <- 3,5): associations of the traced items only" in text
    assert "2 filter (filter <- 1): keeps item ids: no associations read" in text
    assert "1 source (read.json): source tweets: traced items end here" in text
    assert "filter: trace.role = 'contributing'" in text


def test_backtrace_never_reads_the_associations_of_operators_that_keep_ids(traced):
    """Tracing over the run's whole P (Table 6, derived from the stored result) without the <id, id>
    rows of filter/select/map/sort/limit gives what TRACE gives from the matched rows alone."""
    from pyspark.sql import functions as F
    from support.backtrace_helpers import spark_fetcher

    from capture.operators import OpType
    from capture.storing import load_run
    from capture.tracing.backtrace import backtrace
    from capture.tracing.spark.compile import prepare_items, run_match

    store, run, rows = traced
    stored = load_run(store, run)
    keep = [o.oid for o in stored.operators if o.type in (OpType.FILTER, OpType.SELECT, OpType.MAP,
                                                          OpType.SORT, OpType.LIMIT)]
    assert keep  # the running example has selects and a filter
    full = stored.associations()
    assert full.filter(F.col("oid").isin(keep)).count() > 0
    without = full.filter(~F.col("oid").isin(keep))
    matched = run_match(prepare_items(stored.result, stored.id_col, stored.visible, QUESTION.replace("''", "'")),
                        None)
    t = backtrace(stored.operators, stored.result_oid, matched, spark_fetcher(without))
    assert sorted((i, p, r) for _, i, p, r, _, _ in t.rows()) == sorted((r[2], r[3], r[4]) for r in rows)


def test_the_examples_in_docs_iql_run(traced):
    """Every statement of docs/iql.md's "SELECT ... FROM TRACE(...)" examples runs on the running example."""
    import re

    store, run, _ = traced
    doc = (ROOT / "docs" / "iql.md").read_text()
    section = doc[doc.index("### SELECT ... FROM TRACE(...)"):doc.index("### EXPLAIN TRACE")]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    code = "\n".join(line for line in block.splitlines() if not line.startswith("--"))
    statements = [s.strip() for s in code.split(";") if s.strip()]
    assert len(statements) == 3
    results = [iql.run(store, s.replace("running-example/run-20261121T150000-1a2b3c4d", run)).rows()
               for s in statements]
    influencing, audit, contributing = results
    assert {r[1] for r in influencing} == {"retweet_cnt", "user.name"}
    assert {(r[0], r[1]) for r in audit} >= {("tweets", "contributing")}
    assert contributing  # /user: user.id_str contributes
