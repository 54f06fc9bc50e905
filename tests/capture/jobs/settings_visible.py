"""A job whose output shows the settings it runs with: what it prints and the files it leaves
depend on the shuffle partitions, the partition overwrite mode, the app name and the time zone.
Run plainly and under `strata capture`, both must print the same and leave the same files.

Arguments: OUTPUT_DIR.
"""
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out = sys.argv[1]
spark = SparkSession.builder.appName("settings_visible").getOrCreate()
conf = spark.conf
print("app", spark.sparkContext.appName)
for key in ("spark.sql.shuffle.partitions", "spark.sql.sources.partitionOverwriteMode",
            "spark.sql.session.timeZone", "spark.sql.adaptive.enabled"):
    print(key, conf.get(key))

rows = spark.range(60).select((F.col("id") * 7 % 23).alias("k"), F.col("id"))
rows.groupBy("k").count().show(30)  # no ORDER BY: the rows come in the order of the shuffle

spark.range(8).select(F.col("id"), (F.col("id") % 2).alias("p")) \
    .write.partitionBy("p").mode("overwrite").parquet(f"{out}/parts")
spark.range(3).select((F.col("id") + 100).alias("id"), F.lit(0).cast("long").alias("p")) \
    .write.partitionBy("p").mode("overwrite").parquet(f"{out}/parts")  # static mode drops p=1
print(sorted(d for d in os.listdir(f"{out}/parts") if not d.startswith((".", "_"))))
print(spark.read.parquet(f"{out}/parts").orderBy("id").collect())
print(spark.sql("SELECT CAST(TIMESTAMP '2024-03-01 12:00:00' AS STRING) AS ts").collect())
