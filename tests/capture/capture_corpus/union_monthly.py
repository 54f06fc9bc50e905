"""Union of monthly files, then counts per kind shown, per month and kind written."""
import sys
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
months = [spark.read.json(f"{inp}/events/2024-0{m}.jsonl").withColumn("month", F.lit(m)) for m in (1, 2, 3)]
allm = reduce(DataFrame.unionByName, months)
allm.groupBy("kind").count().orderBy("kind").show()
allm.groupBy("month", "kind").agg(F.count("*").alias("n"), F.collect_set("user").alias("users")) \
    .write.mode("overwrite").json(f"{out}/monthly.json")
