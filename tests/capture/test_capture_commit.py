"""tracker.write: the result and its provenance land in ONE store commit, in the
multi-granularity model (Pipeline ⊇ Run ⊇ Operator, Dataset ⊇ Item) and the capture tables."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from support.capture_helpers import TWEETS
from support.depth import DEEP
from support.running_example import TABLE_2, running_example

from capture import Tracker
from capture.id_columns import item_element_column
from capture.storing import driver_model, load_run, model_later
from capture.storing.associations import identity_rows
from capture.storing.materialize import identity_frame
from capture.storing.tables import OPERATORS, RUNS
from capture.tracing import item_element_id, parse_item_element_id
from store import Store
from store.errors import UserError
from store.spark.semantics import feeds


@pytest.fixture(scope="module")
def committed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("capture-commit")
    st = Store.open(root / "store", spark=spark)
    tracker = Tracker(spark, st, pipeline="running-example")
    result = running_example(tracker.read.json(TWEETS, name="tweets"))
    info = tracker.write(result, str(root / "out"), format="json")
    return st, info, root


def test_one_commit_holds_result_metadata_and_provenance(committed, spark):
    st, info, root = committed
    # the result: 3 users (Table 2)
    assert (st.version, info.version, info.operators, info.items) == (1, 1, 8, 3)
    assert [h["version"] for h in st.history()] == [1]
    out = spark.read.json(str(root / "out")).collect()
    assert {(r.user.id_str, r.user.name): sorted(t.text for t in r.tweets) for r in out} == {
        k: sorted(v) for k, v in TABLE_2.items()}
    (run,) = st.table(RUNS).collect()
    assert (run.run, run.pipeline, run.result_oid, run.output_format, run.items) == (
        info.run, "running-example", 8, "json", 3)
    assert st.meta("capture.last_run")["run"] == info.run


def test_operator_table_keeps_definition_5_1(committed):
    st, info, _ = committed
    stored = load_run(st, info.run)
    ops = {r.oid: r for r in st.table(OPERATORS).collect()}
    assert [(i.pred, list(i.accessed)) for i in ops[2].inputs] == [(1, ["retweet_cnt"])]
    assert [(m.src, m.dst) for m in ops[4].manipulated] == [("text", "text"), ("user_mentions.[pos]", "m_user")]
    assert ops[8].type == "aggregation" and ops[1].dataset == "tweets"
    assert {r.run for r in ops.values()} == {info.run}
    # 45 associations (Table 6), 23 from the stored result's hidden columns: the identity
    # operators' 22 <id, id> rows (filter 2: 4, select 3: 4, select 5: 5, select 7: 9) are derived
    assoc = stored.stored_associations()
    assert assoc.count() == 23 and stored.associations().count() == 45
    assert assoc.filter(F.col("oid") == 4).select("pos").distinct().count() == 3  # positions 1, 2, 3
    per_op = {r.oid: r["count"] for r in assoc.groupBy("oid").count().collect()}
    assert per_op == {4: 5, 6: 9, 8: 9}  # flatten, union, aggregation; no identity rows stored


def test_identity_rows_derive_from_the_stored_ones(committed, spark):
    st, info, _ = committed
    run = load_run(st, info.run)
    ops = list(run.operators)
    stored = run.stored_associations()
    result_ids = run.result.select(run.id_col)
    derived = {tuple(r) for r in identity_frame(stored, ops, 8, result_ids).collect()}
    rows = {tuple(r) for r in stored.collect()}
    assert {o for o, *_ in derived} == {2, 3, 5, 7} and len(derived) == 22
    on_driver = identity_rows(list(rows), ops, 8, [r[0] for r in result_ids.collect()])
    assert len(on_driver) == 22 and set(on_driver) == derived  # the driver's version, each row once
    assert all(out == i and inp == 0 and pos is None for _, out, inp, i, pos in derived)
    # select 7's ids are the aggregation's input ids; select 3's the union's first input's
    assert {r[1] for r in derived if r[0] == 7} == {r[3] for r in rows if r[0] == 8}
    assert {r[1] for r in derived if r[0] == 3} == {r[3] for r in rows if r[0] == 6 and r[2] == 0}
    # filter 2 keeps exactly the ids select 3 has: the tweets with retweet_cnt = 0
    assert {r[1] for r in derived if r[0] == 2} == {r[1] for r in derived if r[0] == 3}


def test_edges_and_elements_follow_the_multi_granularity_model(committed, spark):
    st, info, _ = committed
    edges = st.table("edges").collect()
    assert len(edges) == 45
    assert {e.process for e in edges} == {f"{info.run}/op{k}" for k in range(2, 9)}
    elements = {r.id: r.granularity for r in st.table("elements").collect()}
    assert elements["pipeline:running-example"] == "Pipeline"
    assert elements[info.run] == "Run" and elements[f"{info.run}/op8"] == "Operator"
    assert elements["dataset:tweets"] == "Dataset"
    assert sum(1 for g in elements.values() if g == "Item" and True) == len(
        {e.src for e in edges} | {e.dst for e in edges})
    # lineage over the store: walk edges back from the lp result item to source tweets
    final = [e for e in edges if e.process.endswith("/op8")]
    back: dict[str, set[str]] = {}
    for e in edges:
        back.setdefault(e.dst, set()).add(e.src)
    sizes = {}
    for dst in {e.dst for e in final}:
        frontier, seen = {dst}, set()
        while frontier:
            nxt = set().union(*(back.get(x, set()) for x in frontier))
            seen |= nxt
            frontier = nxt
        sizes[dst] = len({s for s in seen if s.startswith("dataset:tweets#")})
    assert sorted(sizes.values()) == [1, 2, 4]  # ls: tweet 1; jm: 1, 22; lp: 1, 12, 17, 29
    # source items are named as TRACE names them: dataset:tweets#<16 hex digits> of their ids
    tweets = Tracker(spark, None).read.json(TWEETS, name="tweets").with_item_ids("_pid").collect()
    named = {item_element_id("tweets", r._pid) for r in tweets}
    sources = {x for e in edges for x in (e.src, e.dst) if x.startswith("dataset:tweets#")}
    assert sources and sources <= named
    assert all(item_element_id(*parse_item_element_id(x)) == x for x in sources)
    # multi-granularity: the tweets dataset feeds the run (items under it, operators under the run)
    ids = spark.createDataFrame([("dataset:tweets",)], "id string")
    fed = {r.process for r in feeds(st, data=ids).collect()}
    assert info.run in fed and "pipeline:running-example" in fed


def test_item_element_ids_in_spark_are_the_ones_on_the_driver(spark):
    """The bundle's item ids (Spark) and TRACE's (driver) agree, leading zero digits included."""
    values = [0, 1, 255, 2**60 - 1, 2**63 - 1, -1, -(2**63), -2]
    df = spark.createDataFrame([(v,) for v in values], "id long")
    got = [r.e for r in df.select(item_element_column(F.lit("dataset:d"), F.col("id")).alias("e")).collect()]
    assert got == [item_element_id("d", v) for v in values]
    assert got[1] == "dataset:d#0000000000000001" and got[5] == "dataset:d#ffffffffffffffff"
    assert [parse_item_element_id(e) for e in got] == [("d", v) for v in values]
    for bad in ("dataset:d#ff", "d#0000000000000001", "dataset:#0000000000000001", "dataset:d#000000000000000g"):
        with pytest.raises(ValueError):
            parse_item_element_id(bad)


def test_identity_only_pipeline_stores_no_associations_and_keeps_order(spark, tmp_path):
    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, pipeline="sorted", model=False)
    tweets = tracker.read.json(TWEETS, name="tweets")
    result = tweets.filter(F.col("retweet_cnt") >= 0).select("text", "retweet_cnt").orderBy(
        F.col("retweet_cnt").desc(), "text").limit(4)
    cached_before = len(spark.sparkContext._jsc.getPersistentRDDs())
    info = tracker.write(result, str(tmp_path / "out"), format="json")
    assert len(spark.sparkContext._jsc.getPersistentRDDs()) == cached_before  # the cache is released
    plain = spark.read.json(TWEETS).filter(F.col("retweet_cnt") >= 0).select("text", "retweet_cnt").orderBy(
        F.col("retweet_cnt").desc(), "text").limit(4).collect()
    written = spark.read.json(str(tmp_path / "out")).select("text", "retweet_cnt").collect()
    assert [tuple(r) for r in written] == [tuple(r) for r in plain]  # order kept from the cache
    run = load_run(st, info.run)
    assert info.items == 4 and run.stored_associations().count() == 0
    items = run.result.collect()
    source_ids = {r._pid for r in tweets.with_item_ids("_pid").collect()}
    assert len(items) == 4 and {r[run.id_col] for r in items} <= source_ids  # result ids are source ids
    assert run.result.columns[0] == run.id_col and run.visible == ["text", "retweet_cnt"]
    assert {"result", "provenance", "runs"} <= set(info.phases)
    # a second run in the same store appends to the run tables and gets its own result table
    again = tracker.write(result, str(tmp_path / "out2"), format="parquet")
    st = st.refresh()
    assert sorted(r.run for r in st.table(RUNS).collect()) == sorted([info.run, again.run])
    assert load_run(st, again.run).result.count() == 4 and load_run(st).run == again.run
    assert spark.conf.get("spark.sql.inMemoryColumnarStorage.compressed") == "true"  # restored


def test_a_run_reads_the_same_with_pyarrow_and_with_spark(committed):
    """A local store's run is read on the driver (pyarrow, no job); a cluster store's with one
    Spark job: both give the same operators and run row."""
    from capture.storing.runs import _HEAD, _spark_rows, local_rows

    st, info, _ = committed
    head = local_rows(st, RUNS, info.run)
    local = [{**r, **{k: head[0][k] for k in _HEAD}} for r in local_rows(st, OPERATORS, info.run)]
    spark_rows = _spark_rows(st, info.run)
    assert len(local) == 8 and sorted(local, key=lambda r: r["oid"]) == sorted(spark_rows, key=lambda r: r["oid"])
    assert local_rows(st, RUNS, "no-such-run") == []


def test_capture_tables_of_an_older_strata_are_refused_with_a_hint(spark, tmp_path):
    from capture.storing import run_name
    from store.errors import UserError

    st = Store.open(tmp_path / "store", spark=spark)
    old = spark.createDataFrame([("p/run-1", "p", 2, "out", "json", "s", "f", 2, 5)],
                                "run string, pipeline string, result_oid int, output_path string, "
                                "output_format string, started string, finished string, operators int, "
                                "associations long")
    with st.transaction("an older capture") as tx:
        tx.append(RUNS, old)
        tx.set_meta("capture.last_run", {"run": "p/run-1"})
    st = st.refresh()
    assert run_name(st, None) == "p/run-1"
    with pytest.raises(UserError, match="older Strata") as err:
        load_run(st)
    assert "new store" in err.value.hint
    tracker = Tracker(spark, st, pipeline="p", model=False)
    with pytest.raises(UserError, match="older Strata"):
        tracker.write(tracker.read.json(TWEETS, name="tweets"), str(tmp_path / "out"), format="json")
    assert st.refresh().version == 1 and not (tmp_path / "out").exists()  # nothing written


def _model_rows(st, run_ids: list[str], folder) -> dict:
    """Every core table's rows, each run's id replaced by its position (run ids are random), the
    output folder by <dir>, and the run's start and end times left out."""
    def norm(v):
        if isinstance(v, str):
            for i, r in enumerate(run_ids):
                v = v.replace(r, f"<run{i}>")
            return v.replace(str(folder), "<dir>")
        elif isinstance(v, dict):
            return sorted((k, norm(x)) for k, x in v.items() if k not in ("started", "finished"))
        elif isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return {n: sorted((tuple((k, norm(v)) for k, v in sorted(r.asDict().items())) for r in st.table(n).collect()),
                      key=repr) for n in ("elements", "parents", "ancestors", "vertices", "complex", "edges")}


def test_a_small_run_is_modelled_on_the_driver_as_spark_models_it(spark, tmp_path, monkeypatch):
    """A small run on a local store is mapped into the model without Spark
    (capture/storing/driver_model.py `model_files`); forcing Spark gives the same rows in every core
    table, and so does the driver staging its items and edges in parts of 7 rows (as it stages a
    large run's, in parts of `MODEL_PART_ROWS`), and so do runs captured without the model and
    modelled afterwards (capture/storing/model_later.py `model_runs`, `strata model`: the second,
    split, run first with Spark, where the driver's limit is 0, then the first on the driver). Two
    runs per store: the first writes json (the one-pass store copy), the second Parquet (the split
    one) and reuses the source items and the pipeline the first added. The parts run only in
    `make test-deep`: in `make test`, tests/store/test_ingest_items.py stages random items and edges
    in parts of one transaction and compares them with the bundle ingest."""
    out = {}
    for engine in ("auto", "spark", "later", *(("parts",) if DEEP else ())):
        monkeypatch.setattr(driver_model, "MODEL_PART_ROWS", 7 if engine == "parts" else 1_000_000)
        st = Store.open(tmp_path / engine / "store", spark=spark, engine=engine if engine == "spark" else "auto")
        tracker = Tracker(spark, st, pipeline="running-example", model=engine != "later")
        runs = []
        for k, fmt in enumerate(("json", "parquet")):
            info = tracker.write(running_example(tracker.read.json(TWEETS, name="tweets")),
                                 str(tmp_path / engine / f"out{k}"), format=fmt)
            runs.append(info.run)
            assert info.split == (fmt == "parquet") and info.one_pass
        if engine == "later":
            st = st.refresh()
            assert model_later.unmodelled(st) == runs
            with monkeypatch.context() as m:
                m.setattr(driver_model, "DRIVER_MODEL_IDS", 0)
                assert [(d.run, d.spark) for d in model_later.model_runs(st, [runs[1]])] == [(runs[1], True)]
            assert [(d.run, d.spark) for d in model_later.model_runs(st.refresh())] == [(runs[0], False)]
            assert model_later.unmodelled(st.refresh()) == []
            with pytest.raises(UserError, match="already in the model"):
                model_later.model_runs(st.refresh(), [runs[0]])
        out[engine] = _model_rows(st.refresh(), runs, tmp_path / engine)
    for driver in set(out) - {"spark"}:
        for name, rows in out[driver].items():
            other = out["spark"][name]
            assert rows == other, (driver, name, [r for r in rows if r not in other][:3],
                                   [r for r in other if r not in rows][:3])
    assert len(out["auto"]["edges"]) == 90  # 45 associations per run (Table 6)


def test_a_write_after_an_expand_hashes_its_groups_and_leaves_the_setting_as_it_was(spark, tmp_path):
    """A ROLLUP's captured write collects its members with Spark's object hash map for up to
    OBJECT_AGG_GROUPS groups a task (after an expand, the sort Spark falls back to at 128 groups
    orders every row once per grouping set); other writes, and a setting the program made, keep
    their value; after each write the session's setting is what it was (docs/capture.md, "Memory")."""
    from capture.auto.plan import translate
    from capture.storing.commit import OBJECT_AGG_FALLBACK, OBJECT_AGG_GROUPS

    st = Store.open(tmp_path / "store", spark=spark)
    tracker = Tracker(spark, st, pipeline="rollup")
    spark.createDataFrame([(i % 7, i % 3, i) for i in range(300)], "a int, b int, x int").createOrReplaceTempView("t")
    rollup = "SELECT a, b, sum(x) AS s FROM t GROUP BY ROLLUP (a, b)"
    seen = []

    def write(sql: str, name: str):
        def sink(df):
            seen.append(spark.conf.get(OBJECT_AGG_FALLBACK, None))
            df.write.parquet(str(tmp_path / name))
        tracker.write(translate(tracker, spark.sql(sql)), str(tmp_path / name), sink=sink)
        return sorted(map(repr, spark.read.parquet(str(tmp_path / name)).collect()))

    assert spark.conf.get(OBJECT_AGG_FALLBACK, None) is None
    assert write(rollup, "r1") == sorted(map(repr, spark.sql(rollup).collect()))
    write("SELECT a, sum(x) AS s FROM t GROUP BY a", "g")
    assert seen == [str(OBJECT_AGG_GROUPS), None]
    assert spark.conf.get(OBJECT_AGG_FALLBACK, None) is None  # unset again after each write
    spark.conf.set(OBJECT_AGG_FALLBACK, "64")
    try:
        write(rollup, "r2")
        assert seen[-1] == "64" and spark.conf.get(OBJECT_AGG_FALLBACK) == "64"
    finally:
        spark.conf.unset(OBJECT_AGG_FALLBACK)
