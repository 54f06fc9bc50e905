"""Generate Twitter-like and DBLP-like nested JSON inputs for the capture benchmark.

Data is produced by Spark itself from ``spark.range`` with hash-based pseudo-random values, so
a size of millions of rows takes seconds and the same arguments give the same files.

    python benchmarks/gen_nested.py --tweets 1000000 --papers 500000 --out benchmarks/out/nested

Twitter-like (``tweets/``): id_str, text, lang, created_at, retweet_cnt, user{id_str, name,
screen_name, followers_count, location}, user_mentions[{id_str, name, screen_name}],
hashtags[{text, indices}], media[{type, url}]. DBLP-like: ``inproceedings/`` (key, title,
year, booktitle, crossref, pages, authors[]), ``proceedings/`` (key, title, year, publisher,
editors[]), ``articles/`` (key, title, year, journal, volume, authors[]).
"""

from __future__ import annotations

import argparse
import os

from pyspark.sql import Column
from pyspark.sql import functions as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")  # scratch space (gitignored)

WORDS = ["good", "bad", "Hello", "World", "spark", "data", "BTS", "music", "news", "today",
         "provenance", "nested", "great", "love", "new", "big", "fast", "paper", "vote", "game"]
TAGS = ["BTS", "kpop", "news", "data", "ai", "music", "sports", "tech", "love", "travel", "food", "art"]


def _h(*cols: Column, mod: int) -> Column:
    """A deterministic pseudo-random int in [0, mod)."""
    return F.pmod(F.xxhash64(*cols), F.lit(mod)).cast("int")


def _pick(words: list[str], *cols: Column) -> Column:
    return F.element_at(F.array(*[F.lit(w) for w in words]), _h(*cols, mod=len(words)) + 1)


def _text(seed: Column, n: int) -> Column:
    return F.concat_ws(" ", *[_pick(WORDS, seed, F.lit(i)) for i in range(n)])


def _user(uid: Column) -> Column:
    return F.struct(
        F.concat(F.lit("u"), uid.cast("string")).alias("id_str"),
        F.concat(F.lit("User "), uid.cast("string")).alias("name"),
        F.concat(F.lit("@u"), uid.cast("string")).alias("screen_name"),
        _h(uid, F.lit("f"), mod=100000).alias("followers_count"),
        _pick(["Stuttgart", "Berlin", "Paris", "Seoul", "NYC", ""], uid).alias("location"),
    )


def tweets(spark, n: int):
    users = max(10, n // 10)
    t = spark.range(n).withColumn("uid", _h(F.col("id"), F.lit("u"), mod=users))

    def mention(k: int) -> Column:
        uid = _h(F.col("id"), F.lit(f"m{k}"), mod=users).cast("string")
        return F.struct(F.concat(F.lit("u"), uid).alias("id_str"), F.concat(F.lit("User "), uid).alias("name"),
                        F.concat(F.lit("@u"), uid).alias("screen_name"))

    n_m = _h(F.col("id"), F.lit("nm"), mod=4)
    n_h = _h(F.col("id"), F.lit("nh"), mod=4)
    mentions = F.slice(F.array(*[mention(k) for k in range(3)]), 1, n_m)
    tags = F.slice(F.array(*[F.struct(_pick(TAGS, F.col("id"), F.lit(f"h{k}")).alias("text"),
                                      F.array(F.lit(k * 5), F.lit(k * 5 + 4)).alias("indices"))
                             for k in range(3)]), 1, n_h)
    media = F.when(_h(F.col("id"), F.lit("md"), mod=5) == 0,
                   F.array(F.struct(F.lit("photo").alias("type"),
                                    F.concat(F.lit("http://pic/"), F.col("id").cast("string")).alias("url"))))
    return t.select(
        F.col("id").cast("string").alias("id_str"),
        _text(F.col("id"), 8).alias("text"),
        _pick(["en", "de", "ko", "fr"], F.col("id"), F.lit("l")).alias("lang"),
        F.concat(F.lit("2019-01-"), (_h(F.col("id"), F.lit("d"), mod=28) + 1).cast("string")).alias("created_at"),
        F.when(_h(F.col("id"), F.lit("r"), mod=3) == 0, F.lit(0)).otherwise(
            _h(F.col("id"), F.lit("rc"), mod=50)).alias("retweet_cnt"),
        _user(F.col("uid")).alias("user"),
        mentions.alias("user_mentions"),
        tags.alias("hashtags"),
        media.alias("media"),
    )


def _authors(seed: Column, pool: int, k: int) -> Column:
    names = [F.concat(F.lit("Author "), _h(seed, F.lit(f"a{i}"), mod=pool).cast("string")) for i in range(k)]
    return F.slice(F.array(*names), 1, _h(seed, F.lit("na"), mod=k) + 1)


def dblp(spark, n: int):
    n_proc = max(1, n // 40)
    pool = max(10, n // 3)
    proc = spark.range(n_proc).select(
        F.concat(F.lit("conf/c"), F.col("id").cast("string")).alias("key"),
        F.concat(F.lit("Proceedings of "), _text(F.col("id"), 3)).alias("title"),
        (2000 + _h(F.col("id"), F.lit("y"), mod=20)).alias("year"),
        _pick(["ACM", "IEEE", "Springer", "VLDB"], F.col("id")).alias("publisher"),
        _authors(F.col("id") + 7, pool, 3).alias("editors"),
    )
    inproc = spark.range(n).select(
        F.concat(F.lit("conf/p"), F.col("id").cast("string")).alias("key"),
        _text(F.col("id"), 6).alias("title"),
        (2000 + _h(F.col("id"), F.lit("y"), mod=20)).alias("year"),
        _pick(["SIGMOD", "VLDB", "ICDE", "EDBT"], F.col("id")).alias("booktitle"),
        F.concat(F.lit("conf/c"), _h(F.col("id"), F.lit("c"), mod=n_proc).cast("string")).alias("crossref"),
        F.concat((_h(F.col("id"), F.lit("p"), mod=500)).cast("string"), F.lit("-"),
                 (_h(F.col("id"), F.lit("p"), mod=500) + 12).cast("string")).alias("pages"),
        _authors(F.col("id"), pool, 5).alias("authors"),
    )
    art = spark.range(max(1, n // 2)).select(
        F.concat(F.lit("journals/a"), F.col("id").cast("string")).alias("key"),
        _text(F.col("id") + 3, 6).alias("title"),
        (2000 + _h(F.col("id"), F.lit("ya"), mod=20)).alias("year"),
        _pick(["TODS", "VLDBJ", "TKDE", "CACM"], F.col("id")).alias("journal"),
        (_h(F.col("id"), F.lit("v"), mod=40) + 1).alias("volume"),
        _authors(F.col("id") + 11, pool, 5).alias("authors"),
    )
    return {"inproceedings": inproc, "proceedings": proc, "articles": art}


def generate(spark, out: str, n_tweets: int, n_papers: int, files: int = 4) -> dict[str, str]:
    paths = {}
    frames = {"tweets": tweets(spark, n_tweets), **dblp(spark, n_papers)}
    for name, df in frames.items():
        path = os.path.join(out, name)
        df.repartition(files).write.mode("overwrite").json(path)
        paths[name] = path
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tweets", type=int, default=1_000_000)
    ap.add_argument("--papers", type=int, default=500_000)
    ap.add_argument("--out", default=os.path.join(OUT, "nested"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from strata.spark import get_session

    spark = get_session()
    for name, path in generate(spark, args.out, args.tweets, args.papers).items():
        print(name, path)


if __name__ == "__main__":
    main()
