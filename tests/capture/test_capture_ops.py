"""Per-operator capture: each small input has its provenance (paths, ids, positions) by hand."""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F
from support.capture_helpers import TWEETS, USERS, USERS_SCHEMA, assoc, ids_by

from capture import OpType, Tracker, UnsupportedOperation, jvm
from capture.operators import Manipulation
from store.storage import spark_conf

# tweets.json, by text: the Section 2 running example (text is unique except "Hello World").
T1, T22, T29 = "Hello @ls @jm @ls", "This is me @jm", "Hello @lp"


@pytest.fixture()
def tracker(spark):
    return Tracker(spark, None, pipeline="test")


@pytest.fixture()
def tweets(tracker):
    return tracker.read.json(TWEETS, name="tweets")


@pytest.fixture()
def src_ids(tweets):
    """The source id of each tweet, keyed by (text, position in the file)."""
    rows = tweets.with_item_ids("_pid").select("text", "_pid").collect()
    return [(r.text, r._pid) for r in rows]


def _id(src_ids, text):
    (pid,) = [p for t, p in src_ids if t == text]
    return pid


def test_filter_accesses_condition_paths_and_keeps_ids(tracker, tweets, src_ids):
    out = tweets.filter(F.col("retweet_cnt") == 0)
    op = tracker.capture(out).operator(out.oid)
    assert (op.type, op.inputs[0].pred, op.inputs[0].accessed, op.manipulated) == (
        OpType.FILTER, tweets.oid, ("retweet_cnt",), ())
    expected = {(p, 0, p, None) for t, p in src_ids if t != T29}
    assert assoc(tracker, out, out.oid) == expected


def test_where_on_nested_field_records_the_nested_path(tracker, tweets):
    out = tweets.where(F.col("user.id_str") == "jm")
    assert tracker.capture(out).operator(out.oid).inputs[0].accessed == ("user.id_str",)
    assert sorted(r.text for r in out.collect()) == [T29, T22]


def test_select_maps_nested_paths_to_new_names(tracker, tweets, src_ids):
    out = tweets.select(F.col("user.name").alias("n"), "text", F.col("user_mentions.id_str").alias("ids"))
    op = tracker.capture(out).operator(out.oid)
    assert op.type is OpType.SELECT
    assert op.inputs[0].accessed == ("user.name", "text", "user_mentions.[pos].id_str")
    assert op.manipulated == (
        Manipulation(0, "user.name", "n"), Manipulation(0, "text", "text"),
        Manipulation(0, "user_mentions.[pos].id_str", "ids"))
    assert assoc(tracker, out, out.oid) == {(p, 0, p, None) for _, p in src_ids}
    assert out.columns == ["n", "text", "ids"]


@pytest.mark.parametrize("cols", [("*",), ("*", "text"), ("text", "text")])
def test_select_of_star_or_a_repeated_name_keeps_one_copy_of_each_id(tweets, src_ids, cols):
    out = tweets.select(*cols)
    assert out.columns == tweets.untracked().select(*cols).columns
    assert len(out.annotated.columns) == len(out.columns) + len(tweets.hidden())
    assert sorted(r._pid for r in out.with_item_ids("_pid").collect()) == sorted(p for _, p in src_ids)


def test_select_struct_nesting_and_literal_index(tracker, tweets):
    out = tweets.selectExpr("named_struct('who', user.name, 'first', user_mentions[0].id_str) AS s")
    op = tracker.capture(out).operator(out.oid)
    assert op.inputs[0].accessed == ("user.name", "user_mentions.[1].id_str")
    assert op.manipulated == (Manipulation(0, "user.name", "s.who"),
                              Manipulation(0, "user_mentions.[1].id_str", "s.first"))


def test_with_column_records_only_the_new_column_as_accessed(tracker, tweets):
    out = tweets.withColumn("shout", F.upper("text"))
    op = tracker.capture(out).operator(out.oid)
    assert op.inputs[0].accessed == ("text",)
    assert Manipulation(0, "text", "shout") in op.manipulated
    assert Manipulation(0, "retweet_cnt", "retweet_cnt") in op.manipulated


def test_rename_and_drop(tracker, tweets):
    renamed = tweets.withColumnRenamed("text", "body")
    dropped = renamed.drop("user_mentions", "retweet_cnt")
    cap = tracker.capture(dropped)
    assert Manipulation(0, "text", "body") in cap.operator(renamed.oid).manipulated
    op = cap.operator(dropped.oid)
    assert (op.inputs[0].accessed, op.manipulated) == (
        (), (Manipulation(0, "body", "body"), Manipulation(0, "user", "user")))
    assert dropped.columns == ["body", "user"]


def test_explode_is_a_flatten_with_positions(tracker, tweets, src_ids):
    out = tweets.select("text", F.explode("user_mentions").alias("m"))
    op = tracker.capture(out).operator(out.oid)
    assert op.type is OpType.FLATTEN
    assert "user_mentions.[pos]" in op.inputs[0].accessed
    assert Manipulation(0, "user_mentions.[pos]", "m") in op.manipulated
    pairs = {(i, pos) for _, _, i, pos in assoc(tracker, out, out.oid)}
    t1, t22, t29 = (_id(src_ids, t) for t in (T1, T22, T29))
    assert pairs == {(t1, 1), (t1, 2), (t1, 3), (t22, 1), (t29, 1)}
    # the positions point at the flattened element: m == user_mentions[pos] of the input item
    by_id = {r._pid: r.m.id_str for r in out.with_item_ids("_pid").collect()}
    src = {p: t for t, p in src_ids}
    mentions = {r.text: [m.id_str for m in r.user_mentions] for r in tweets.collect()}
    for o, _, i, pos in assoc(tracker, out, out.oid):
        assert by_id[o] == mentions[src[i]][pos - 1]


def _stored(tracker, tdf, oid: int) -> list[tuple]:
    """The (in_id, pos) of the STORED rows of operator `oid`, duplicates kept, sorted."""
    rows = tracker.capture(tdf).stored_associations().collect()
    return sorted((r.in_id, r.pos) for r in rows if r.oid == oid)


def test_rows_a_later_flatten_repeats_are_stored_once_also_after_a_filter(tracker, tweets, src_ids):
    first = tweets.select("text", "user_mentions", F.explode("user_mentions").alias("m1"))  # 5 rows
    second = first.select("text", "m1", F.posexplode("user_mentions").alias("p", "m2"))  # 3*3 + 1 + 1
    t1, t22, t29 = (_id(src_ids, t) for t in (T1, T22, T29))
    assert _stored(tracker, second, first.oid) == sorted([(t1, 1), (t1, 2), (t1, 3), (t22, 1), (t29, 1)])
    assert len(_stored(tracker, second, second.oid)) == 11
    # the filter drops every first copy (p = 0): T1's mentions still come once each, the others go
    kept = second.filter(F.col("p") >= 1)
    assert _stored(tracker, kept, first.oid) == sorted([(t1, 1), (t1, 2), (t1, 3)])
    outer = first.withColumn("m2", F.explode_outer("user_mentions")).limit(100)
    assert _stored(tracker, outer, first.oid) == sorted([(t1, 1), (t1, 2), (t1, 3), (t22, 1), (t29, 1)])


def test_explode_outer_keeps_empty_arrays_without_position(tracker, tweets, src_ids):
    out = tweets.withColumn("m", F.explode_outer("user_mentions"))
    rows = assoc(tracker, out, out.oid)
    assert len(rows) == 7
    hello_world = {p for t, p in src_ids if t == "Hello World"}
    assert {(i, pos) for _, _, i, pos in rows if i in hello_world} == {(h, None) for h in hello_world}
    assert tracker.capture(out).operator(out.oid).type is OpType.FLATTEN


def test_posexplode_and_inline(tracker, tweets, src_ids):
    pe = tweets.select("text", F.posexplode("user_mentions").alias("p", "m"))
    assert sorted((r.text, r.p) for r in pe.collect() if r.text == T1) == [(T1, 0), (T1, 1), (T1, 2)]
    il = tweets.select("text", F.inline("user_mentions"))
    op = tracker.capture(il).operator(il.oid)
    assert op.manipulated == (Manipulation(0, "text", "text"),
                              Manipulation(0, "user_mentions.[pos].id_str", "id_str"),
                              Manipulation(0, "user_mentions.[pos].name", "name"))
    assert {(i, pos) for _, _, i, pos in assoc(tracker, il, il.oid)} == {
        (i, pos) for _, _, i, pos in assoc(tracker, pe, pe.oid)}


@pytest.fixture()
def users(tracker, spark):
    return tracker.track(spark.createDataFrame(USERS, USERS_SCHEMA), name="users")


def test_inner_join_on_expression(tracker, tweets, users, src_ids):
    out = tweets.join(users, tweets["user.id_str"] == users["id"])
    op = tracker.capture(out).operator(out.oid)
    assert op.type is OpType.JOIN
    assert [(i.pred, i.accessed) for i in op.inputs] == [(tweets.oid, ("user.id_str",)), (users.oid, ("id",))]
    assert Manipulation(1, "followers", "followers") in op.manipulated
    uid = ids_by(users, "id")
    rows = assoc(tracker, out, out.oid)
    author = {T1: "lp", "Hello World": "lp", T22: "jm", T29: "jm"}
    expected = {(t, p, uid[author[t]]) for t, p in src_ids}
    by_out: dict = {}
    for o, inp, i, _ in rows:
        by_out.setdefault(o, {})[inp] = i
    src = {p: t for t, p in src_ids}
    assert {(src[v[0]], v[0], v[1]) for v in by_out.values()} == expected


@pytest.mark.parametrize("how,n_out,n_right", [("right", 6, 6), ("full", 6, 6)])
def test_outer_joins_leave_the_missing_side_out(tracker, tweets, users, how, n_out, n_right):
    out = tweets.join(users, tweets["user.id_str"] == users["id"], how)
    rows = assoc(tracker, out, out.oid)
    assert out.count() == n_out
    assert len({o for o, *_ in rows}) == n_out
    assert sum(1 for _, inp, *_ in rows if inp == 1) == n_right
    assert sum(1 for _, inp, *_ in rows if inp == 0) == 5


@pytest.mark.parametrize("how,texts", [("left_semi", {T1, "Hello World", T22, T29}), ("anti", set())])
def test_semi_and_anti_joins_filter_the_left_input(tracker, tweets, users, src_ids, how, texts):
    out = tweets.join(users, tweets["user.id_str"] == users["id"], how)
    op = tracker.capture(out).operator(out.oid)
    assert op.inputs[1].accessed == ("id",) and all(m.input == 0 for m in op.manipulated)  # nothing copied from users
    assert {r.text for r in out.collect()} == texts
    rows = assoc(tracker, out, out.oid)
    kept = {r._pid for r in out.with_item_ids("_pid").collect()}
    assert {(o, i) for o, inp, i, _ in rows if inp == 0} == {(p, p) for p in kept}
    # a semi join's kept tweet: the user that matches it, as input 1 (an anti join's: none)
    text, uid = {p: t for t, p in src_ids}, ids_by(users, "id")
    author = {T1: "lp", "Hello World": "lp", T22: "jm", T29: "jm"} if how == "left_semi" else {}
    assert {(text[o], i) for o, inp, i, _ in rows if inp == 1} == {(t, uid[a]) for t, a in author.items()}


def test_join_on_column_names_and_self_join(tracker, spark):
    a = tracker.track(spark.createDataFrame([("x", 1), ("y", 2)], "k string, v int"), name="a")
    out = a.join(a.withColumnRenamed("v", "w"), on="k")
    assert sorted((r.k, r.v, r.w) for r in out.collect()) == [("x", 1, 1), ("y", 2, 2)]
    rows = assoc(tracker, out, out.oid)
    aid = ids_by(a, "k")
    assert {(inp, i) for _, inp, i, _ in rows} == {(0, aid["x"]), (1, aid["x"]), (0, aid["y"]), (1, aid["y"])}


def test_an_aggregate_joined_with_itself_stores_each_association_once(tracker, spark):
    """Both sides of the join read the same aggregation, so its collected members reach the
    result twice (a slot per side); its associations are stored once each, as Pebble's P is a
    set (capture/storing/materialize.py `assoc_frame`)."""
    a = tracker.track(spark.createDataFrame([("x", 1), ("x", 2), ("y", 3)], "k string, v int"), name="a")
    g = a.groupBy("k").agg(F.sum("v").alias("s"))
    out = g.join(g.withColumnRenamed("s", "t"), on="k")
    assert sorted((r.k, r.s, r.t) for r in out.collect()) == [("x", 3, 3), ("y", 3, 3)]
    df = tracker.capture(out).associations()
    rows = [(r.out_id, r.input, r.in_id, r.pos) for r in df.filter(df.oid == g.oid).collect()]
    gid, aid = ids_by(g, "k"), ids_by(a, "v")
    assert sorted(rows) == sorted([(gid["x"], 0, aid[1], 1), (gid["x"], 0, aid[2], 2), (gid["y"], 0, aid[3], 1)]) \
        or sorted(rows) == sorted([(gid["x"], 0, aid[1], 2), (gid["x"], 0, aid[2], 1), (gid["y"], 0, aid[3], 1)])


def test_union_records_which_input_each_item_came_from(tracker, tweets, users, src_ids):
    a = tweets.select(F.col("user.id_str").alias("id"))
    b = users.select("id")
    out = a.union(b)
    op = tracker.capture(out).operator(out.oid)
    assert [(i.pred, i.accessed) for i in op.inputs] == [(a.oid, ()), (b.oid, ())]
    rows = assoc(tracker, out, out.oid)
    uid = ids_by(users, "id")
    assert {(inp, i) for _, inp, i, _ in rows} == {(0, p) for _, p in src_ids} | {(1, p) for p in uid.values()}
    assert len({o for o, *_ in rows}) == 8


def test_self_union_keeps_the_two_sides_apart(tracker, tweets, src_ids):
    left = tweets.filter(F.col("retweet_cnt") == 0)
    out = left.unionByName(tweets)
    cap = tracker.capture(out)
    # the filter saw only the left side: its associations are the 4 kept tweets, not all 5
    assert len(assoc(tracker, out, left.oid)) == 4
    assert {inp for _, inp, _, _ in assoc(tracker, out, out.oid)} == {0, 1}
    assert len(cap.operators) == 3


@pytest.mark.parametrize("allow_missing", [False, True])
def test_union_by_name_matches_names_as_spark_does(tracker, spark, allow_missing):
    """Names match ignoring case (Spark's default), missing columns are null: the same rows as
    the untracked union, and a right column matched under another case is recorded as renamed."""
    a = spark.createDataFrame([(1, "x")], "Key int, v string")
    b = spark.createDataFrame([(2, "y")], "key int, v string") if not allow_missing else \
        spark.createDataFrame([(2, "z")], "KEY int, w string")
    out = tracker.track(a, name="a").unionByName(tracker.track(b, name="b"), allowMissingColumns=allow_missing)
    plain = a.unionByName(b, allowMissingColumns=allow_missing)
    assert out.columns == plain.columns == ["Key", "v", "w"][:3 if allow_missing else 2]
    assert sorted(out.collect()) == sorted(plain.collect())
    renamed = {(m.input, m.src, m.dst) for m in tracker.capture(out).operator(out.oid).manipulated}
    assert renamed == {(1, b.columns[0], "Key")}


def test_a_union_of_unequal_inputs_raises_sparks_own_error(tweets):
    """The counts in the message are the user's columns, not ours (Spark's plan dump below it
    still shows the hidden columns)."""
    with pytest.raises(Exception, match="NUM_COLUMNS_MISMATCH") as err:
        tweets.select("text").union(tweets.select("text", "retweet_cnt"))
    assert "first input has 1 columns and the second input has 2 columns" in str(err.value).replace("`", "")


def test_group_by_aggregation_positions_match_the_nested_list(tracker, tweets, src_ids):
    out = tweets.groupBy(F.col("user.id_str").alias("uid")).agg(
        F.count(F.lit(1)).alias("n"), F.collect_list("text").alias("texts"), F.max("retweet_cnt").alias("mx"))
    op = tracker.capture(out).operator(out.oid)
    assert op.type is OpType.AGGREGATION
    assert op.inputs[0].accessed == ("user.id_str", "text", "retweet_cnt")
    counted = {Manipulation(0, c, "n") for c in tweets.visible()}  # count(1) counts the rows: each as a whole
    assert len(counted) > 3
    assert set(op.manipulated) == {Manipulation(0, "user.id_str", "uid"), Manipulation(0, "text", "texts.[pos]"),
                                   Manipulation(0, "retweet_cnt", "mx"), *counted}
    texts = {r._pid: r.texts for r in out.with_item_ids("_pid").collect()}
    src = {p: t for t, p in src_ids}
    rows = assoc(tracker, out, out.oid)
    assert len(rows) == 5
    for o, _, i, pos in rows:
        assert texts[o][pos - 1] == src[i]
    assert sorted(len(v) for v in texts.values()) == [2, 3]


def test_distinct_associates_every_duplicate(tracker, tweets, src_ids):
    out = tweets.select("text").distinct()
    rows = assoc(tracker, out, out.oid)
    hw = ids_by(out, "text")["Hello World"]
    assert {(i, pos is not None) for o, _, i, pos in rows if o == hw} == {
        (p, True) for t, p in src_ids if t == "Hello World"}
    assert len(rows) == 5 and out.count() == 4


def test_group_ids_tell_apart_keys_that_differ_only_in_nulls_or_array_bounds(spark, tracker):
    """A group's id hashes its key; Spark's hash skips nulls and runs array elements together, so
    (null, 1) / (1, null), s(null, "x") / s("x", null) and ([1, 2], []) / ([1], [2]) would share an
    id if the key were hashed as it is. Each group gets its own id, the same on a re-run."""
    rows = [(None, 1, "x", None, [1, 2], []), (1, None, None, "x", [1], [2]), (1, None, None, "x", [1], [2]),
            (None, None, None, None, None, [None]), (None, None, None, None, [None], None)]
    df = spark.createDataFrame(rows, "a int, b int, x string, y string, p array<int>, q array<int>")

    def grouped(tr):
        t = tr.track(df, name="keys")
        return t.groupBy("a", "b", F.struct("x", "y").alias("s"), "p", "q").agg(F.count(F.lit(1)).alias("n"))

    out = grouped(tracker)
    ids = [r._pid for r in out.with_item_ids("_pid").collect()]
    assert out.count() == 4 and len(set(ids)) == 4
    again = grouped(Tracker(spark, None, pipeline="test"))  # a re-run: same operator ids, same keys
    assert sorted(r._pid for r in again.with_item_ids("_pid").collect()) == sorted(ids)
    members = sorted(len(r.m) for r in out.annotated.select(F.col(f"__strata_agg_{out.oid}").alias("m")).collect())
    assert members == [1, 1, 1, 2]


def test_group_keys_with_repeated_field_names_and_without_retained_group_columns(spark, tracker, tweets):
    """The group id reads the key columns by position: a struct key that repeats a field name, and
    ``spark.sql.retainGroupColumns=false`` (no key columns in the output) give Spark's own columns."""
    def pipelines(t):
        yield t.groupBy(F.struct(F.col("user.id_str"), F.col("user_mentions.id_str")).alias("k")).count()
        yield t.groupBy(F.col("user.id_str").alias("uid")).agg(F.collect_list("text").alias("texts"))

    def rows(df):
        return sorted(map(repr, df.collect()))

    plain = spark.read.json(TWEETS)
    for retain in ("true", "false"):
        with spark_conf(spark, "spark.sql.retainGroupColumns", retain):
            for tracked, untracked in zip(pipelines(tweets), pipelines(plain), strict=True):
                assert tracked.columns == untracked.columns and rows(tracked) == rows(untracked)
                ids = [r._pid for r in tracked.with_item_ids("_pid").collect()]
                assert len(set(ids)) == len(ids) == untracked.count()
                op = tracker.capture(tracked).operator(tracked.oid)
                assert {m.dst.split(".")[0] for m in op.manipulated} <= set(tracked.columns), retain


def test_drop_duplicates_on_a_subset(tracker, tweets):
    out = tweets.select("text", F.col("user.id_str").alias("uid")).dropDuplicates(["uid"])
    op = tracker.capture(out).operator(out.oid)
    assert (op.method, op.inputs[0].accessed) == ("dropDuplicates", ("uid",))
    assert out.columns == ["text", "uid"] and out.count() == 2
    assert len(assoc(tracker, out, out.oid)) == 5


def test_order_by_and_limit(tracker, tweets):
    out = tweets.orderBy(F.col("user.name").desc(), "text").limit(2)
    cap = tracker.capture(out)
    assert cap.operator(out.oid - 1).inputs[0].accessed == ("user.name", "text")
    assert cap.operator(out.oid).type is OpType.LIMIT
    assert [r.text for r in out.collect()] == ["Hello @ls @jm @ls", "Hello World"]
    assert len(assoc(tracker, out, out.oid)) == 2


def test_python_udf_is_an_opaque_map(tracker, tweets, src_ids):
    shout = F.udf(lambda s: s.upper(), "string")
    out = tweets.select(shout("text").alias("t"))
    op = tracker.capture(out).operator(out.oid)
    assert (op.type, op.inputs[0].accessed, op.manipulated, op.opaque) == (OpType.MAP, None, None, True)
    assert assoc(tracker, out, out.oid) == {(p, 0, p, None) for _, p in src_ids}


def test_map_in_pandas_is_an_opaque_map(tracker, tweets, src_ids):
    def lengths(batches):
        for pdf in batches:
            yield pdf[["text"]].assign(n=pdf["text"].str.len())

    out = tweets.mapInPandas(lengths, "text string, n long")
    assert sorted(r.n for r in out.collect()) == [9, 11, 11, 14, 17]
    assert tracker.capture(out).operator(out.oid).opaque
    assert assoc(tracker, out, out.oid) == {(p, 0, p, None) for _, p in src_ids}


def test_map_in_pandas_must_keep_one_row_per_input(tracker, tweets):
    def drop_all(batches):
        for pdf in batches:
            yield pdf.iloc[0:0][["text"]]

    with pytest.raises(Exception, match="one row per input row"):
        tweets.mapInPandas(drop_all, "text string").collect()


@pytest.mark.parametrize("call", [
    lambda t: t.sample(0.5), lambda t: t.rdd, lambda t: t.groupBy("text").pivot("user"),
    lambda t: t.agg({"retweet_cnt": "max"}), lambda t: t.select(F.json_tuple("text", "a")),
], ids=["sample", "rdd", "pivot", "agg-dict", "json_tuple"])
def test_unsupported_operations_name_the_operation(tweets, call):
    with pytest.raises(UnsupportedOperation) as err:
        call(tweets)
    assert "not supported on a tracked DataFrame" in str(err.value)


def test_join_with_an_untracked_dataframe_is_refused(tweets, spark):
    with pytest.raises(UnsupportedOperation, match="tracker.track"):
        tweets.join(spark.createDataFrame(USERS, USERS_SCHEMA), "text")


def test_hidden_columns_stay_hidden(tweets):
    assert tweets.columns == ["retweet_cnt", "text", "user", "user_mentions"]
    assert "__strata" not in repr(tweets.collect()[0])
    with pytest.raises(UnsupportedOperation, match="reserved"):
        tweets.withColumn("__strata_id_1", F.lit(1))


def test_ids_are_deterministic_across_trackers(spark, src_ids):
    again = Tracker(spark, None).read.json(TWEETS, name="tweets")
    assert sorted((r.text, r._pid) for r in again.with_item_ids("_pid").collect()) == sorted(src_ids)
    other = Tracker(spark, None).read.json(TWEETS, name="another name")
    assert not {p for _, p in src_ids} & {r._pid for r in other.with_item_ids("_pid").collect()}


def test_a_given_schema_is_applied_and_keeps_the_ids(spark, src_ids):
    """``schema=`` works as in ``spark.read.json``: the columns are the schema's (no inference),
    and the rows keep the ids they have when the schema is inferred."""
    for schema in ("text string, retweet_cnt long", spark.read.schema("text string, retweet_cnt long").json(
            TWEETS).schema):
        given = Tracker(spark, None).read.json(TWEETS, name="tweets", schema=schema)
        assert given.columns == spark.read.json(TWEETS, schema=schema).columns == ["text", "retweet_cnt"]
        assert sorted((r.text, r._pid) for r in given.with_item_ids("_pid").collect()) == sorted(src_ids)


def _read_ids(spark) -> list[tuple[str, int]]:
    again = Tracker(spark, None).read.json(TWEETS, name="tweets")
    return sorted((r.text, r._pid) for r in again.with_item_ids("_pid").collect())


def test_json_ids_are_line_offsets_whatever_the_cut(spark, src_ids):
    """With the offset reader (capture/jvm) a JSON item's id names its file and line: the same
    on a 1-core or an 8-core machine and under any cut of the files into splits."""
    if not jvm.available(spark):
        pytest.skip("the offset reader is not built (no javac here): JSON ids are positional")
    for cores in ("1", "8"):  # as on a 1-core and an 8-core machine
        with spark_conf(spark, "spark.sql.files.minPartitionNum", cores):
            assert _read_ids(spark) == sorted(src_ids)
    with spark_conf(spark, "spark.sql.files.maxPartitionBytes", "200"):  # splits of 200 bytes
        assert spark.read.json(TWEETS).rdd.getNumPartitions() > 1
        assert _read_ids(spark) == sorted(src_ids)


def test_positional_ids_follow_the_split_layout_not_the_core_count(spark, monkeypatch):
    """Without the offset reader (a SparkSession started without Strata's jar) JSON ids are row
    positions. A position means a row only under one cut of the files into splits. More cores do
    not cut a small input differently, so its ids stay; a different cut must give other ids,
    never the id of another row (items are shared between runs through their ids)."""
    monkeypatch.setattr("capture.jvm.available", lambda spark, name=None: False)
    positional = _read_ids(spark)
    for cores in ("1", "8"):
        with spark_conf(spark, "spark.sql.files.minPartitionNum", cores):
            assert _read_ids(spark) == positional
    with spark_conf(spark, "spark.sql.files.maxPartitionBytes", "200"):
        assert spark.read.json(TWEETS).rdd.getNumPartitions() > 1
        cut = _read_ids(spark)
    assert sorted(t for t, _ in cut) == sorted(t for t, _ in positional)
    assert not {p for _, p in cut} & {p for _, p in positional}


def test_a_file_rewritten_in_place_gets_other_ids(spark, tmp_path):
    """Same path, same size, rows swapped: the modification time tells the cuts apart."""
    f = tmp_path / "rows.json"
    f.write_text('{"k": "a"}\n{"k": "b"}\n')

    def ids():
        tdf = Tracker(spark, None).read.json(str(f), name="rows")
        return {r.k: r._pid for r in tdf.with_item_ids("_pid").collect()}

    before = ids()
    mtime = f.stat().st_mtime_ns
    f.write_text('{"k": "b"}\n{"k": "a"}\n')
    os.utime(f, ns=(mtime + 10**9, mtime + 10**9))  # a coarse clock could otherwise keep it
    after = ids()
    assert sorted(after) == ["a", "b"]
    assert not set(before.values()) & set(after.values())


def test_parquet_ids_are_file_rows_whatever_the_cut_and_keep_filter_pushdown(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "events"
    folder.mkdir()
    for f in range(2):  # two files of 5 row groups each
        rows = [{"k": f * 100 + i, "g": i % 3} for i in range(50)]
        pq.write_table(pa.Table.from_pylist(rows), folder / f"part-{f}.parquet", row_group_size=10)

    def ids(df):
        return {r.k: r._pid for r in df.with_item_ids("_pid").collect()}

    whole = ids(Tracker(spark, None).read.parquet(str(folder), name="events"))
    assert len(set(whole.values())) == 100
    with spark_conf(spark, "spark.sql.files.maxPartitionBytes", "300"):  # row groups in separate splits
        assert spark.read.parquet(str(folder)).rdd.getNumPartitions() > 2
        assert ids(Tracker(spark, None).read.parquet(str(folder), name="events")) == whole
    kept = Tracker(spark, None).read.parquet(str(folder), name="events").filter(F.col("g") == 1)
    plan = kept.annotated._jdf.queryExecution().executedPlan().toString()
    assert "PushedFilters: [IsNotNull(g), EqualTo(g,1)]" in plan
    got = ids(kept)
    assert got == {k: p for k, p in whole.items() if k % 100 % 3 == 1}


def test_tracked_dataframes_get_ids_per_partitioning(spark):
    rows = [(f"r{i}",) for i in range(6)]
    one = Tracker(spark, None).track(spark.createDataFrame(rows, "k string").coalesce(1), name="mem")
    three = Tracker(spark, None).track(spark.createDataFrame(rows, "k string").repartition(3), name="mem")
    ids_one = {r._pid for r in one.with_item_ids("_pid").collect()}
    assert len(ids_one) == 6
    assert not ids_one & {r._pid for r in three.with_item_ids("_pid").collect()}
