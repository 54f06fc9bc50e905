"""An ordinary PySpark job running TPC queries: each table's Parquet file as a temporary view,
each query through ``spark.sql``, its result written as Parquet. Knows nothing of Strata; run it
plainly or as ``strata capture -- job.py ...``.

    python job.py DATA_DIR OUT_DIR QUERIES.json [--keep-going] N [N ...]

``QUERIES.json``: query number -> Spark SQL text (benchmarks/tpc/run.py writes it). Query N's
result goes to ``OUT_DIR/qN``. Each query's outcome is a line on stderr, ``job.py: qN ok SECONDS``
or ``job.py: qN failed: ERROR``; the first failure stops the job (exit 1), unless ``--keep-going``:
then the other queries still run and the job exits 1 at the end.
"""

import json
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

data, out, queries = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
keep_going = "--keep-going" in sys.argv[4:]
spark = SparkSession.builder.appName("tpc").getOrCreate()
for table in sorted(data.glob("*.parquet")):
    spark.read.parquet(str(table)).createOrReplaceTempView(table.stem)
failed = False
for n in [a for a in sys.argv[4:] if a != "--keep-going"]:
    t0 = time.perf_counter()
    try:
        spark.sql(queries[n]).write.mode("overwrite").parquet(str(out / f"q{n}"))
    except Exception as e:
        failed = True
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"job.py: q{n} failed: {type(e).__name__}: {first}", file=sys.stderr, flush=True)
        if not keep_going:
            raise
        continue
    print(f"job.py: q{n} ok {time.perf_counter() - t0:.2f}", file=sys.stderr, flush=True)
sys.exit(1 if failed else 0)
