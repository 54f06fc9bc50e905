"""Pebble's running example (Section 2): Table 2, Figure 1's pipeline, and a walk back
through its associations by brute force (docs/capture.md; tests/capture/test_capture_example.py)."""

from __future__ import annotations

from pyspark.sql import functions as F

from capture import OpType

TABLE_2 = {
    ("ls", "Lauren Smith"): ["Hello @ls @jm @ls", "Hello @ls @jm @ls"],
    ("lp", "Lisa Paul"): ["Hello @ls @jm @ls", "Hello World", "Hello World", "Hello @lp"],
    ("jm", "John Miller"): ["Hello @ls @jm @ls", "This is me @jm", "This is me @jm"],
}


def running_example(tweets):
    upper = tweets.filter(F.col("retweet_cnt") == 0).select(
        "text", F.col("user.id_str").alias("id_str"), F.col("user.name").alias("name"))
    lower = tweets.select("text", F.explode("user_mentions").alias("m_user")).select(
        "text", F.col("m_user.id_str").alias("id_str"), F.col("m_user.name").alias("name"))
    return (
        upper.union(lower)
        .select(F.struct("id_str", "name").alias("user"), "text")
        .groupBy("user")
        .agg(F.collect_list(F.struct("text")).alias("tweets"))
    )


def walk_associations(assoc, oid: int, out_id: int, ops) -> list[tuple[int, int, int | None]]:
    """Follow the associations from an item of operator `oid` to source items:
    [(source id, position at the flatten or None, position at the aggregation or None)]."""
    preds = {o.oid: [i.pred for i in o.inputs] for o in ops}
    types = {o.oid: o.type for o in ops}
    out: list = []

    def walk(oid, item, flat_pos, agg_pos):
        if types[oid] is OpType.SOURCE:
            out.append((item, flat_pos, agg_pos))
            return
        for o, oi, inp, i, pos in assoc:
            if o == oid and oi == item:
                fp = pos if types[oid] is OpType.FLATTEN else flat_pos
                ap = pos if types[oid] is OpType.AGGREGATION else agg_pos
                walk(preds[oid][inp], i, fp, ap)

    walk(oid, out_id, None, None)
    return out
