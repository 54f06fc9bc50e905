"""RDD steps inside a DataFrame job: customers cleaned with rdd.map and a country lookup made with
sc.parallelize, both turned back into DataFrames, joined with the orders, shown and written."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
customers = spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv")
cleaned = (customers.rdd.filter(lambda r: r.active)
           .map(lambda r: (r.customer_id, " ".join(r.name.split()).title(), r.country))
           .toDF(["customer_id", "name", "country"]))
names = sc.parallelize([("DE", "Germany"), ("FR", "France"), ("US", "United States")]).toDF(["country", "country_name"])
orders = spark.read.json(f"{inp}/orders.jsonl") \
    .select(F.col("customer.id").alias("customer_id"), F.size("lines").alias("n_lines"))
report = (cleaned.join(names, "country").join(orders, "customer_id")
          .groupBy("customer_id", "name", "country_name")
          .agg(F.count("*").alias("orders"), F.sum("n_lines").alias("lines")))
report.orderBy("customer_id").show()
report.write.mode("overwrite").parquet(f"{out}/report.parquet")
