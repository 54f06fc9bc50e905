"""Deduplication with row_number: the latest event per user."""
import sys

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
events = spark.read.json(f"{inp}/events")
latest = (events.withColumn("rn", F.row_number().over(Window.partitionBy("user").orderBy(F.col("ts").desc())))
          .filter("rn = 1").drop("rn"))
for r in latest.orderBy("user").collect():
    print(r.user, r.kind, r.ts)
latest.write.mode("overwrite").parquet(f"{out}/latest.parquet")
