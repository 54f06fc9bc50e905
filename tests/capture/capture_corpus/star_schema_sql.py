"""Star schema in Spark SQL: temp views, a CTE, joins and GROUP BY; the report shown, then written."""
import sys

from pyspark.sql import SparkSession

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
spark.read.json(f"{inp}/orders.jsonl").createOrReplaceTempView("orders")
spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv") \
    .createOrReplaceTempView("customers")
spark.read.parquet(f"{inp}/products.parquet").createOrReplaceTempView("products")
revenue = spark.sql("""
    WITH line AS (
        SELECT o.order_id, o.customer.id AS customer_id, l.sku, l.qty * l.price AS amount
        FROM orders o LATERAL VIEW explode(o.lines) t AS l
    )
    SELECT c.country, p.category, SUM(line.amount) AS revenue, COUNT(DISTINCT line.order_id) AS orders
    FROM line
    JOIN customers c ON line.customer_id = c.customer_id
    JOIN products p ON line.sku = p.sku
    WHERE c.active
    GROUP BY c.country, p.category
""")
revenue.orderBy("country", "category").show()
revenue.write.mode("overwrite").json(f"{out}/revenue.json")
