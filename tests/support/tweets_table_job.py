"""An ordinary PySpark job through a catalog table, nothing Strata in it: the per-user texts of
examples/capture/tweets_job.py saved as a table at a given location (saveAsTable), read back by
the table's name (spark.table) and written as each user's count of texts.

    python tweets_table_job.py BY_USER TABLE_LOCATION COUNTS

tests/interop/test_ol_listener.py runs it with OpenLineage's Spark listener and captured.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

TABLE = "ol_tweets_by_user"

spark = SparkSession.builder.appName("tweets-table").getOrCreate()
by_user, location, counts = sys.argv[1:4]
spark.read.parquet(by_user).write.mode("overwrite").option("path", location).saveAsTable(TABLE)
spark.table(TABLE).select("user", F.size("texts").alias("n")).write.mode("overwrite").parquet(counts)
