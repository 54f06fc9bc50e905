"""Small nested tweet pipelines (random rows from `tweet`, users from capture_helpers) that the
capture tests run on plain and tracked DataFrames alike."""

from __future__ import annotations

from hypothesis import strategies as st
from pyspark.sql import functions as F

SCHEMA = ("text string, user struct<id_str:string,name:string>, "
          "user_mentions array<struct<id_str:string,name:string>>, retweet_cnt int")
NAMES = {"lp": "Lisa Paul", "jm": "John Miller", "ls": "Lauren Smith"}
_user = st.sampled_from(sorted(NAMES)).map(lambda u: (u, NAMES[u]))
tweet = st.tuples(
    st.sampled_from(["Hello World", "hi", "good day", "BTS!"]),
    _user,
    st.lists(_user, max_size=3),
    st.integers(min_value=0, max_value=2),
)


def running_example(t, users):
    upper = t.filter(F.col("retweet_cnt") == 0).select(
        "text", F.col("user.id_str").alias("id_str"), F.col("user.name").alias("name"))
    lower = t.select("text", F.explode("user_mentions").alias("m")).select(
        "text", F.col("m.id_str").alias("id_str"), F.col("m.name").alias("name"))
    return (upper.union(lower).select(F.struct("id_str", "name").alias("user"), "text")
            .groupBy("user").agg(F.collect_list(F.struct("text")).alias("tweets")))


def mentions_per_user(t, users):
    return (t.select(F.col("user.id_str").alias("author"), F.posexplode_outer("user_mentions").alias("p", "m"))
            .withColumn("mentioned", F.col("m.id_str")).drop("m")
            .groupBy("mentioned").agg(F.count(F.lit(1)).alias("n"), F.collect_set("author").alias("by"),
                                      F.sum("p").alias("ps")))


def joined_and_sorted(t, users):
    return (t.join(users, t["user.id_str"] == users["id"], "left")
            .where(F.col("followers").isNull() | (F.col("followers") > 5))
            .select("text", "id", "followers", F.size("user_mentions").alias("k"))
            .orderBy("text", "id", "k").limit(50))


def distinct_union(t, users):
    a = t.select(F.col("user.id_str").alias("id")).distinct()
    b = t.select(F.inline("user_mentions")).select("id_str").withColumnRenamed("id_str", "id")
    return a.unionByName(b).join(users, "id", "left_semi").distinct()


def flags(t, users):
    return t.selectExpr("text", "retweet_cnt * 2 AS twice", "user.name AS who").withColumns(
        {"good": F.col("text").contains("good"), "bts": F.col("text").contains("BTS")}).dropDuplicates()


PIPELINES = [running_example, mentions_per_user, joined_and_sorted, distinct_union, flags]


def double_flatten(t, users):
    a = t.select("text", "user_mentions", F.posexplode_outer("user_mentions").alias("p", "m"))
    b = a.select("text", "p", F.explode("user_mentions").alias("m2")).filter(F.col("m2.id_str") != "jm")
    return b.groupBy("text").agg(F.collect_list("p").alias("ps"))
