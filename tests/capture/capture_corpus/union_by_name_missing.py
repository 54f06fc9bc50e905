"""unionByName with missing columns, fillna, and a global aggregate."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
products = spark.read.parquet(f"{inp}/products.parquet").select("sku", "price")
customers = spark.read.option("header", "true").csv(f"{inp}/customers.csv").select(F.col("name").alias("sku"))
both = products.unionByName(customers, allowMissingColumns=True).fillna({"price": 0.0})
both.agg(F.count("*").alias("n"), F.sum("price").alias("total"), F.max("sku").alias("last")) \
    .write.mode("overwrite").json(f"{out}/summary.json")
