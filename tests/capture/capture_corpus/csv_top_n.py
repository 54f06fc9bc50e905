"""CSV in, top-N by a computed column, CSV out."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
c = spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv")
top = (c.withColumn("score", F.col("customer_id") * 7 % 11).where(F.col("active"))
       .orderBy(F.desc("score"), "customer_id").limit(3).select("customer_id", "name", "score"))
top.coalesce(1).write.mode("overwrite").option("header", "true").csv(f"{out}/top.csv")
