"""UDF cleaning: the customers per country shown, names normalised with a Python UDF, a few printed."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()


@F.udf(StringType())
def clean(name):
    return " ".join(p.capitalize() for p in (name or "").split())


customers = spark.read.option("header", "true").csv(f"{inp}/customers.csv")
customers.groupBy("country").count().show()  # unordered, as people write it
cleaned = customers.withColumn("name", clean("name")).filter(F.col("name") != "")
print(cleaned.select("name").take(3))
cleaned.write.mode("overwrite").option("header", "true").csv(f"{out}/customers_clean.csv")
