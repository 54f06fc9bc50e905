"""Customers with and without orders: left semi and left anti joins, counted, two outputs."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
customers = spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv")
orders = spark.read.json(f"{inp}/orders.jsonl").select(F.col("customer.id").alias("customer_id"))
buyers = customers.join(orders, "customer_id", "left_semi")
idle = customers.join(orders, "customer_id", "left_anti")
print(f"{buyers.count()} buyers, {idle.count()} idle")
buyers.write.mode("overwrite").parquet(f"{out}/buyers.parquet")
idle.write.mode("overwrite").parquet(f"{out}/idle.parquet")
