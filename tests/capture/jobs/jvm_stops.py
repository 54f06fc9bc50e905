"""A job whose one write stops Spark's JVM as running out of memory does (a task exits it with
Spark's out-of-memory exit code, 52, through SQL's `reflect`), then catches the error and goes on
to a Spark call that fails because the JVM is gone. Under `strata capture` the capture must be
reported as what failed, not the script's later error, and nothing may be committed.

Arguments: OUTPUT_DIR.
"""
import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
groups = spark.range(10).selectExpr("id", "id % 2 AS g").groupBy("g").count()
try:
    groups.selectExpr("g", "count", "reflect('java.lang.System', 'exit', 52) AS stop") \
        .write.mode("overwrite").parquet(sys.argv[1])
except Exception as e:  # noqa: BLE001 - the job goes on, as a job that writes many outputs may
    print(f"the write failed: {type(e).__name__}", flush=True)
spark.range(3).count()
