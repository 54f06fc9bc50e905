"""IN and NOT EXISTS subqueries in Spark SQL: customers who ordered, none of whose orders were empty."""
import sys

from pyspark.sql import SparkSession

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv") \
    .createOrReplaceTempView("customers")
spark.read.json(f"{inp}/orders.jsonl").createOrReplaceTempView("orders")
spark.sql("""
    SELECT c.customer_id, c.name FROM customers c
    WHERE c.customer_id IN (SELECT o.customer.id FROM orders o)
      AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer.id = c.customer_id AND size(o.lines) = 0)
""").write.mode("overwrite").parquet(f"{out}/steady.parquet")
