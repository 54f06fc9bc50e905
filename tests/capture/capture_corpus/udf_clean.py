"""UDF cleaning: the customers per country shown, names normalised with a Python UDF, printed."""
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
for row in cleaned.select("name", "country").collect():
    print(row.name, row.country)
cleaned.write.mode("overwrite").option("header", "true").csv(f"{out}/customers_clean.csv")
