"""A job whose Spark JVM exits (with Spark's out-of-memory exit code, 52) after it built a
DataFrame and its writer and before it writes: what a JVM that runs out of memory between two
writes leaves. Under `strata capture` the capture must say that Spark's JVM stopped, not blame
itself ("capture failed … report it") or the script, and commit nothing.

Arguments: OUTPUT_DIR.
"""
import logging
import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
writer = spark.range(10).selectExpr("id % 2 AS g").groupBy("g").count().write
# the exit call's answer never comes: py4j logs that on the root logger, with a traceback, when the
# socket is reset rather than refused (a race). That is this job's own call, not what capture says
logging.disable(logging.CRITICAL)
try:
    spark.sparkContext._jvm.java.lang.System.exit(52)
except Exception:  # noqa: BLE001 - the JVM is gone
    pass
finally:
    logging.disable(logging.NOTSET)
writer.parquet(sys.argv[1])
