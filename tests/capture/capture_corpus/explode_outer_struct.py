"""posexplode_outer, struct building and collect_list nesting back into one row per customer."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
orders = spark.read.json(f"{inp}/orders.jsonl")
lines = orders.select(F.col("customer.id").alias("cid"), "order_id", F.posexplode_outer("lines").alias("pos", "l"))
nested = lines.groupBy("cid").agg(
    F.collect_list(F.struct("order_id", "pos", F.col("l.sku").alias("sku"))).alias("items"))
nested.write.mode("overwrite").json(f"{out}/nested.json")
