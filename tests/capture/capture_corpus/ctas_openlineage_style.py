"""CREATE TABLE AS SELECT and INSERT INTO … SELECT with joins, filters and GROUP BY."""
import sys

from pyspark.sql import SparkSession

inp, out, tag = sys.argv[1], sys.argv[2], sys.argv[3]
spark = SparkSession.builder.getOrCreate()
db = f"corpus_{tag}"
spark.sql(f"CREATE DATABASE IF NOT EXISTS {db} LOCATION '{out}/db'")
spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv") \
    .createOrReplaceTempView("customers")
spark.read.json(f"{inp}/orders.jsonl").createOrReplaceTempView("orders")
spark.catalog.setCurrentDatabase(db)
spark.sql("""CREATE TABLE customer_orders USING parquet AS
             SELECT c.customer_id, c.country, COUNT(*) AS n_orders
             FROM customers c JOIN orders o ON o.customer.id = c.customer_id
             WHERE c.active GROUP BY c.customer_id, c.country""")
spark.sql("""INSERT INTO customer_orders
             SELECT c.customer_id, c.country, 0 FROM customers c
             WHERE NOT c.active""")
print(spark.table("customer_orders").count(), "customers")
spark.sql("SELECT * FROM customer_orders ORDER BY customer_id").show()
spark.catalog.setCurrentDatabase("default")
