"""Customers with and without orders: left semi and left anti joins, two outputs."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
customers = spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv")
orders = spark.read.json(f"{inp}/orders.jsonl").select(F.col("customer.id").alias("customer_id"))
customers.join(orders, "customer_id", "left_semi").write.mode("overwrite").parquet(f"{out}/buyers.parquet")
customers.join(orders, "customer_id", "left_anti").write.mode("overwrite").parquet(f"{out}/idle.parquet")
