"""Columns of the same name on both sides of a join stay two columns in the recorded provenance.

A join's output path of a right-side column named as a left-side one is ``name~2``
(capture/operators.py ``column_paths``; docs/capture.md, "Columns of the same name"), and the
operators above map Spark's attribute references (by expression id) to it: ``t1.a AS ident``
comes from ``t1``'s ``a`` only, in the operator records, the OpenLineage column lineage and
TRACE. The property test checks random joins of tables with clashing names against a plain
reference of which input column each output column is.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.ol_schema import check_published

from capture import capturing
from capture.auto.plan import translate
from capture.operators import Manipulation, OpType, column_paths, named_path
from capture.storing import load_run
from capture.storing.commit import operator_rows
from capture.storing.to_openlineage import captured_events, column_lineage
from capture.tracing import parse_pattern, trace
from capture.tracking.tracker import Tracker
from store import Store

# small tables whose names clash: every one has k; a, b and c on some
TABLES = {"jt_kab": ("k", "a", "b"), "jt_kac": ("k", "a", "c"), "jt_kba": ("k", "b", "a"), "jt_kc": ("k", "c")}


def test_column_paths_tell_repeated_names_apart():
    assert column_paths(["a", "b", "a", "a"]) == ["a", "b", "a~2", "a~3"]
    assert column_paths(["a", "a", "a~2"]) == ["a", "a~3", "a~2"]  # a real column's name is never reused
    assert column_paths(["x"]) == ["x"] and column_paths([]) == []
    assert [named_path(p) for p in ("a~2", "a~2.x.[pos]", "a~1", "a", "b~10")] == ["a", "a.x.[pos]", "a~1", "a", "b"]


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """name -> its Parquet folder (the dataset capture names), each registered as a temp view."""
    root = tmp_path_factory.mktemp("join_sides")
    out = {}
    for n, (name, cols) in enumerate(TABLES.items()):
        rows = [tuple(10 * n + i if c != "k" else i % 3 for c in cols) for i in range(4)]
        path = str(root / name)
        spark.createDataFrame(rows, ", ".join(f"{c} long" for c in cols)).coalesce(1).write.parquet(path)
        spark.read.parquet(path).createOrReplaceTempView(name)
        out[name] = path
    spark.createDataFrame([(1, 10), (2, 20), (3, 30)], "a long, b long").write.parquet(str(root / "t1"))
    spark.createDataFrame([(2, 200), (3, 300), (4, 400)], "a long, c long").write.parquet(str(root / "t2"))
    for t in ("t1", "t2"):
        out[t] = str(root / t)
        spark.read.parquet(out[t]).createOrReplaceTempView(f"js_{t}")
    return out


def _rows(ops) -> list[dict]:
    """Operator records as the store's capture_operators rows (what the export reads)."""
    return [{"oid": oid, "type": t, "method": m, "dataset": ds, "detail": d,
             "inputs": [{"input": i, "pred": p, "accessed": a} for i, p, a in inputs],
             "manipulated": None if manip is None else [{"input": i, "src": s, "dst": x} for i, s, x in manip]}
            for _, oid, t, m, inputs, manip, ds, d in operator_rows("r", list(ops))]


def _dataset(ops, path: str) -> str:
    (ds,) = {o.dataset for o in ops if o.type is OpType.SOURCE and o.dataset.rstrip("/").endswith(path)}
    return ds


def test_a_right_column_named_as_a_left_one_is_its_own_path(spark, tables, tmp_path):
    """``SELECT t1.a AS ident … FROM t2 JOIN t1 ON t1.a = t2.a``: the join maps t2's ``a`` to ``a``
    and t1's to ``a~2``, the select ``a~2`` to ``ident``; the export gives ``ident`` from t1's
    ``a`` alone (the join's keys are INDIRECT from both); TRACE names t2's row as influencing only."""
    query = "SELECT js_t1.a AS ident, c FROM js_t2 JOIN js_t1 ON js_t1.a = js_t2.a"
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="join_sides") as cap:
        spark.sql(query).write.parquet(str(tmp_path / "out"))
    run = cap.runs[0].run
    ops = load_run(store, run).operators
    t1, t2 = _dataset(ops, "/t1"), _dataset(ops, "/t2")
    (join,) = [o for o in ops if o.type is OpType.JOIN]
    assert [i.accessed for i in join.inputs] == [("a",), ("a",)]
    assert set(join.manipulated) == {Manipulation(0, "a", "a"), Manipulation(0, "c", "c"),
                                     Manipulation(1, "a", "a~2"), Manipulation(1, "b", "b")}
    (select,) = [o for o in ops if o.type is OpType.SELECT and o.inputs[0].pred == join.oid]
    assert set(select.manipulated) == {Manipulation(0, "a~2", "ident"), Manipulation(0, "c", "c")}

    lineage = check_published(captured_events(store, [run])[run])[1]["outputs"][0]["facets"]["columnLineage"]
    assert lineage["fields"]["ident"]["inputFields"] == [{"namespace": "file", "name": t1, "field": "a",
                                                          "transformations": [{"type": "DIRECT",
                                                                               "subtype": "TRANSFORMATION"}]}]
    assert [x["name"] for x in lineage["fields"]["c"]["inputFields"]] == [t2]
    assert sorted((x["name"], x["field"], x["transformations"][0]["subtype"]) for x in lineage["dataset"]) == \
        sorted([(t1, "a", "JOIN"), (t2, "a", "JOIN")])

    got = trace(store, run, parse_pattern("/ident = 2"), limit=10).rows()
    assert {(r[0], r[2]) for r in got if r[3] == "contributing"} == {(t1, "a")}
    assert (t2, "a", "influencing") in {(r[0], r[2], r[3]) for r in got}  # the join's key


def test_both_sides_of_a_repeated_name_trace_to_their_own_side(spark, tables):
    """``SELECT t1.a, t2.a``: two output columns named ``a`` (paths ``a`` and ``a~2``), each from
    its own side; the DataFrame API's join of two tracked frames records the same."""
    df = spark.sql("SELECT js_t1.a, js_t2.a, js_t2.c AS a FROM js_t1 JOIN js_t2 ON js_t1.a = js_t2.a")
    tracker = Tracker(spark)
    tdf = translate(tracker, df)
    ops = tracker.operators(tdf)
    t1, t2 = _dataset(ops, "/t1"), _dataset(ops, "/t2")
    direct, indirect = column_lineage(_rows(ops), tdf.oid, column_paths(df.columns))
    assert direct == {"a": [(t1, "a", "IDENTITY")], "a~2": [(t2, "a", "IDENTITY")],
                      "a~3": [(t2, "c", "TRANSFORMATION")]}
    assert set(indirect) == {(t1, "a", "JOIN"), (t2, "a", "JOIN")}

    one, two = tracker.read.parquet(tables["t1"], name="t1"), tracker.read.parquet(tables["t2"], name="t2")
    out = one.join(two, one["a"] == two["a"]).select(two["a"].alias("ident"), one["a"])
    direct, _ = column_lineage(_rows(tracker.operators(out)), out.oid, ["ident", "a"])
    assert direct == {"ident": [("t2", "a", "TRANSFORMATION")], "a": [("t1", "a", "IDENTITY")]}


@pytest.mark.parametrize("query, expected", [
    ("SELECT DISTINCT js_t1.a, js_t2.a FROM js_t1 JOIN js_t2 ON js_t1.a = js_t2.a",
     {"a": ("t1", "a"), "a~2": ("t2", "a")}),
    ("SELECT * FROM js_t1 JOIN js_t2 ON js_t1.a = js_t2.a "
     "UNION ALL SELECT * FROM js_t1 JOIN js_t2 ON js_t1.b = js_t2.c",
     {"a": ("t1", "a"), "b": ("t1", "b"), "a~2": ("t2", "a"), "c": ("t2", "c")}),
], ids=["distinct", "union"])
def test_operators_above_a_join_keep_its_sides_apart(spark, tables, query, expected):
    """DISTINCT and UNION over a join's two a: by attribute, each from its own side."""
    df = spark.sql(query)
    tracker = Tracker(spark)
    tdf = translate(tracker, df)
    ops = tracker.operators(tdf)
    ds = {t: _dataset(ops, f"/{t}") for t in ("t1", "t2")}
    direct, _ = column_lineage(_rows(ops), tdf.oid, column_paths(df.columns))
    assert direct == {p: [(ds[t], c, "IDENTITY")] for p, (t, c) in expected.items()}
    # the same rows (read by position: tdf.untracked() reads columns by name)
    names = tdf.annotated.columns
    plain = tdf.annotated.toDF(*map(str, range(len(names)))).select(
        *[str(i) for i, n in enumerate(names) if not n.startswith("__strata_")])
    assert sorted(map(tuple, plain.collect())) == sorted(map(tuple, df.collect()))


@st.composite
def joins(draw):
    """A join of two of TABLES (maybe one with itself) on a column both have, inner or left, and
    a select list picking columns of both sides, some renamed; with the reference: per output
    column, the (table, column) it is and whether it keeps its name."""
    lt, rt = draw(st.sampled_from(sorted(TABLES))), draw(st.sampled_from(sorted(TABLES)))
    key = draw(st.sampled_from([c for c in TABLES[lt] if c in TABLES[rt]]))
    how = draw(st.sampled_from(["JOIN", "LEFT JOIN"]))
    side = st.sampled_from([("l", lt), ("r", rt)])
    picks = draw(st.lists(st.tuples(side, st.integers(0, 2), st.sampled_from([None, "ident", "a", "k", "x"])),
                          min_size=1, max_size=4))
    items, ref = [], []
    for (alias, table), n, rename in picks:
        col = TABLES[table][n % len(TABLES[table])]
        items.append(f"{alias}.{col}" + (f" AS {rename}" if rename else ""))
        ref.append((table, col, rename or col))
    sql = f"SELECT {', '.join(items)} FROM {lt} l {how} {rt} r ON l.{key} = r.{key}"  # noqa: S608 - test names
    return sql, ref, (lt, rt, key)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=joins())
def test_random_joins_of_clashing_names_match_the_reference(spark, tables, case):
    sql, ref, (lt, rt, key) = case
    df = spark.sql(sql)
    tracker = Tracker(spark)
    tdf = translate(tracker, df)
    ops = tracker.operators(tdf)
    ds = {t: _dataset(ops, f"/{t}") for t in {lt, rt}}
    paths = column_paths(df.columns)
    assert [name for _, _, name in ref] == df.columns
    direct, indirect = column_lineage(_rows(ops), tdf.oid, paths)
    assert direct == {p: [(ds[t], col, "IDENTITY" if named_path(p) == col else "TRANSFORMATION")]
                      for p, (t, col, _) in zip(paths, ref, strict=True)}, sql
    assert set(indirect) == {(ds[lt], key, "JOIN"), (ds[rt], key, "JOIN")}, sql
