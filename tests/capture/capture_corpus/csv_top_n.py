"""CSV in, top-N by a computed column, printed row by row, CSV out."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
c = spark.read.option("header", "true").option("inferSchema", "true").csv(f"{inp}/customers.csv")
top = (c.withColumn("score", F.col("customer_id") * 7 % 11).where(F.col("active"))
       .orderBy(F.desc("score"), "customer_id").limit(3).select("customer_id", "name", "score"))
for row in top.collect():
    print(f"{row.customer_id:>3}  {row.name:<15} {row.score}")
top.coalesce(1).write.mode("overwrite").option("header", "true").csv(f"{out}/top.csv")
