"""Distinct, dropDuplicates, intersect and subtract between two sources."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
ordered = spark.read.json(f"{inp}/orders.jsonl").select(F.explode("lines.sku").alias("sku")).distinct()
catalog = spark.read.parquet(f"{inp}/products.parquet").select("sku").dropDuplicates(["sku"])
ordered.intersect(catalog).write.mode("overwrite").parquet(f"{out}/known.parquet")
catalog.subtract(ordered).write.mode("overwrite").parquet(f"{out}/unsold.parquet")
