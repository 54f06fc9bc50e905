"""An ordinary PySpark job, nothing Strata in it: per user, the original tweets' texts.

    python examples/capture/tweets_job.py examples/capture/tweets.json by_user
    strata --store example-store capture -- examples/capture/tweets_job.py examples/capture/tweets.json by_user
    strata --store example-store trace "/texts = 'Bonjour'"
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

spark = SparkSession.builder.appName("tweets-by-user").getOrCreate()
tweets = spark.read.json(sys.argv[1])
originals = tweets.filter(F.col("retweet_cnt") == 0)
by_user = originals.groupBy(F.col("user.id_str").alias("user")).agg(F.collect_list("text").alias("texts"))
by_user.write.mode("overwrite").parquet(sys.argv[2])
