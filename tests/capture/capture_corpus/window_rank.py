"""Window ranking: the two best-selling products per country."""
import sys

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
orders = spark.read.json(f"{inp}/orders.jsonl")
sales = (orders.select(F.col("customer.country").alias("country"), F.explode("lines").alias("l"))
         .groupBy("country", F.col("l.sku").alias("sku")).agg(F.sum("l.qty").alias("qty")))
w = Window.partitionBy("country").orderBy(F.desc("qty"), "sku")
top = sales.withColumn("rank", F.rank().over(w)).where(F.col("rank") <= 2)
top.orderBy("country", "rank", "sku").show()
top.write.mode("overwrite").parquet(f"{out}/top.parquet")
