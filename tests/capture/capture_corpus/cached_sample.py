"""A cached DataFrame reused by two writes: a seeded sample with a repartition, and counts per user."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
events = spark.read.json(f"{inp}/events").cache()
print(events.count(), "events")
clicks = events.filter(F.col("kind") == "click").sample(fraction=0.6, seed=42)
views = events.filter(F.col("kind") == "view")
clicks.unionByName(views).repartition(2, "user").write.mode("overwrite").parquet(f"{out}/sampled.parquet")
per_user = events.groupBy("user").agg(F.count("*").alias("events"), F.max("ts").alias("last_ts"))
per_user.write.mode("overwrite").json(f"{out}/per_user.json")
events.unpersist()
