"""JSON events to ORC: casts, renames, a filter and a sort; the input's schema printed."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
events = spark.read.json(f"{inp}/events/2024-02.jsonl")
events.printSchema()
(events.withColumnRenamed("ts", "event_time").withColumn("event_time", F.col("event_time").cast("int"))
 .where(F.col("kind").isin("click", "buy")).orderBy("event_time")
 .write.mode("overwrite").orc(f"{out}/events.orc"))
