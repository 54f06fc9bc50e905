"""Row-wise enrichment with mapInPandas."""
import sys

from pyspark.sql import SparkSession

inp, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()


def enrich(batches):
    for pdf in batches:
        pdf["price_band"] = (pdf["price"] // 2).astype("int64")
        yield pdf[["sku", "price", "price_band"]]


products = spark.read.parquet(f"{inp}/products.parquet")
products.mapInPandas(enrich, "sku string, price double, price_band long") \
    .write.mode("overwrite").parquet(f"{out}/bands.parquet")
