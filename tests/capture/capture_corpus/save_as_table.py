"""saveAsTable into a local catalog database, then a second table read from the first, shown."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out, tag = sys.argv[1], sys.argv[2], sys.argv[3]
spark = SparkSession.builder.getOrCreate()
db = f"corpus_{tag}"
spark.sql(f"CREATE DATABASE IF NOT EXISTS {db} LOCATION '{out}/db'")
products = spark.read.parquet(f"{inp}/products.parquet")
products.filter(F.col("price") > 2).write.mode("overwrite").saveAsTable(f"{db}.pricey")
spark.table(f"{db}.pricey").groupBy("category").agg(F.avg("price").alias("avg_price")) \
    .write.mode("overwrite").saveAsTable(f"{db}.by_category")
spark.table(f"{db}.by_category").orderBy("category").show()
