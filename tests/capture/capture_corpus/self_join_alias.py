"""A self-join through aliases, fillna, casts and renames; the first pairs printed."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
p = spark.read.parquet(f"{inp}/products.parquet").na.fill({"category": "none"})
a, b = p.alias("a"), p.alias("b")
pairs = (a.join(b, (F.col("a.category") == F.col("b.category")) & (F.col("a.sku") < F.col("b.sku")))
         .select(F.col("a.sku").alias("sku"), F.col("b.sku").alias("other"),
                 (F.col("b.price") - F.col("a.price")).cast("decimal(10,2)").alias("diff"))
         .withColumnRenamed("diff", "price_diff"))
print(pairs.orderBy("sku", "other").take(2))
pairs.write.mode("overwrite").parquet(f"{out}/pairs.parquet")
