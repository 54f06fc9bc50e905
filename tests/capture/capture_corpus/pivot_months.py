"""Pivot: events per user and kind, one column per kind, shown and written."""
import sys

from pyspark.sql import SparkSession

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
events = spark.read.json(f"{inp}/events")
table = events.groupBy("user").pivot("kind", ["click", "view", "buy"]).count()
table.orderBy("user").show()
table.write.mode("overwrite").parquet(f"{out}/pivot.parquet")
