"""Word count over a text file, sorted, top 5, shown and written."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
words = spark.read.text(f"{inp}/logs.txt").select(F.explode(F.split(F.lower("value"), r"\s+")).alias("word"))
counts = words.where(F.length("word") > 0).groupBy("word").count().orderBy(F.desc("count"), "word").limit(5)
counts.show()
counts.write.mode("overwrite").parquet(f"{out}/words.parquet")
