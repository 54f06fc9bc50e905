"""An ordinary PySpark job running TPC queries: each table's Parquet file as a temporary view,
each query through ``spark.sql``, its result written as Parquet. Knows nothing of Strata; run it
plainly or as ``strata capture -- job.py ...``.

    python job.py DATA_DIR OUT_DIR QUERIES.json N [N ...]

``QUERIES.json``: query number -> Spark SQL text (benchmarks/tpc/run.py writes it). Query N's
result goes to ``OUT_DIR/qN``.
"""

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

data, out, queries = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
spark = SparkSession.builder.appName("tpc").getOrCreate()
for table in sorted(data.glob("*.parquet")):
    spark.read.parquet(str(table)).createOrReplaceTempView(table.stem)
for n in sys.argv[4:]:
    spark.sql(queries[n]).write.mode("overwrite").parquet(str(out / f"q{n}"))
