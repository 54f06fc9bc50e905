"""A cached DataFrame reused twice, a seeded sample and a repartition."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
events = spark.read.json(f"{inp}/events").cache()
clicks = events.filter(F.col("kind") == "click").sample(fraction=0.6, seed=42)
views = events.filter(F.col("kind") == "view")
clicks.unionByName(views).repartition(2, "user").write.mode("overwrite").parquet(f"{out}/sampled.parquet")
events.unpersist()
