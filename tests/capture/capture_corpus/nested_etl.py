"""Nested JSON ETL: explode order lines, flatten structs, print a count and a sample, write Parquet."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.appName("nested_etl").getOrCreate()
orders = spark.read.json(f"{inp}/orders.jsonl")
lines = (orders
         .select("order_id", F.col("customer.id").alias("customer_id"), F.explode("lines").alias("line"))
         .select("order_id", "customer_id", F.col("line.sku").alias("sku"),
                 (F.col("line.qty") * F.col("line.price")).alias("amount")))
print(lines.count(), "order lines")
lines.orderBy("order_id", "sku").show(5)
lines.write.mode("overwrite").parquet(f"{out}/lines.parquet")
