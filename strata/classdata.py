"""A class-data archive of Spark's classes, so the Spark JVMs Strata starts start in about half the CPU.

A JVM that starts Spark loads, parses and verifies some 12,000 classes from PySpark's jars before
its first job; that is most of the 9–10 CPU seconds a local session costs before it answers
anything. Java's class data sharing (JDK 13+, "dynamic archive") writes the classes one run
loaded into a file that later JVMs map instead: measured here, the first query of a new local
session went from 9–10 to about 5 CPU seconds, and ``strata --engine spark query`` from 10.3 s to
5.9 s (benchmarks/RESULTS.md, "Interactive answers").

``python -m strata.classdata`` (``make classdata``; ``make test`` builds it beside its tests that
need no JVM, ``make demo`` does not: its one Spark would not win back the ~30 s) starts Spark once with
``-XX:ArchiveClassesAtExit``, runs a small workload that touches what Strata's commands use
(DataFrames and SQL, joins, aggregates, windows, Parquet, JSON and CSV), and keeps the archive in
capture/jvm's build folder (``build/jvm`` of a checkout, else the user's cache) under a name
that holds the PySpark version and the JDK it was made with. :func:`archive` finds it;
:func:`strata.spark.get_session` gives it to the driver of every session it starts
(``store.spark.session.session_conf``), and to the driver of a job run by ``strata capture``
(:func:`strata.spark.job_submit_args`). An archive the JVM cannot use (other jars, another JDK
build) is ignored in silence and costs nothing; without one Spark starts as usual.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from capture.jvm import build_dir
from store.spark import session


def _java() -> str | None:
    """The java that spark-submit will run: `$JAVA_HOME/bin/java`, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.isfile(found) else None


def archive_path() -> Path | None:
    """Where the archive for the installed PySpark and this JDK lives (None: no java found)."""
    import pyspark  # deferred: only a Spark start needs pyspark

    java = _java()
    if java is None:
        return None
    jdk = hashlib.sha256(f"{java}:{os.stat(java).st_mtime_ns}".encode()).hexdigest()[:12]
    return build_dir() / f"spark{pyspark.__version__}-jdk{jdk}.jsa"


def archive() -> str | None:
    """The archive's path when it is built, else None."""
    path = archive_path()
    return str(path) if path is not None and path.is_file() else None


def build() -> Path:
    """Run the workload in a new process with the archive written at its JVM's exit; the file
    appears under its name only once complete."""
    out = archive_path()
    if out is None:
        raise RuntimeError("no java found (JAVA_HOME or PATH); PySpark 4 needs Java 17 or newer")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".jsa.tmp", dir=out.parent)  # one per process: builds may race
    os.close(fd)
    os.unlink(tmp)  # the JVM writes it
    try:
        subprocess.run([sys.executable, "-m", "strata.classdata", "--dump", tmp], check=True,
                       capture_output=True, text=True)
        if not os.path.isfile(tmp):
            raise RuntimeError("the JVM wrote no archive")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def _workload(spark, work: Path) -> None:
    """What Strata's commands and tests make Spark do, small."""
    from pyspark.sql import Window  # deferred: only the dump needs pyspark
    from pyspark.sql import functions as F  # deferred: as above

    people = spark.createDataFrame([(1, "ann", 3.5), (2, "bob", None), (3, "cy", 1.0)],
                                   "id long, name string, score double")
    orders = spark.range(20).select((F.col("id") % 3 + 1).alias("pid"), F.col("id").alias("oid"),
                                    F.struct(F.lit("x").alias("k"), F.array(F.col("id")).alias("v")).alias("s"))
    joined = orders.join(people, orders.pid == people.id, "left").groupBy("name").agg(
        F.count("*").alias("n"), F.sum("oid").alias("total"), F.collect_list("s").alias("all"))
    ranked = orders.withColumn("rank", F.row_number().over(Window.partitionBy("pid").orderBy(F.desc("oid"))))
    joined.write.mode("overwrite").parquet(str(work / "p"))
    spark.read.parquet(str(work / "p")).filter(F.col("n") > 1).collect()
    ranked.write.mode("overwrite").json(str(work / "j"))
    spark.read.json(str(work / "j")).select("s.v").collect()
    people.write.mode("overwrite").option("header", True).csv(str(work / "c"))
    spark.read.option("header", True).csv(str(work / "c")).distinct().count()
    people.createOrReplaceTempView("people")
    orders.createOrReplaceTempView("orders")
    spark.sql("SELECT p.name, count(*) FROM people p JOIN orders o ON o.pid = p.id "
              "WHERE EXISTS (SELECT 1 FROM orders x WHERE x.pid = p.id) GROUP BY ROLLUP(p.name)").collect()
    spark.sql("SELECT * FROM orders WHERE oid > (SELECT avg(oid) FROM orders) "
              "UNION SELECT * FROM orders INTERSECT SELECT * FROM orders").toArrow()
    people.unionByName(people).dropDuplicates(["id"]).collect()


def _dump(target: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        spark = session.get_session(master="local[2]", quiet=True, conf={
            "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={target}",
            "spark.sql.shuffle.partitions": "2", "spark.local.dir": work})
        _workload(spark, Path(work))
        proc = spark.sparkContext._gateway.proc
        spark.stop()
        proc.stdin.close()  # PySpark's gateway JVM exits on EOF, then writes the archive
        proc.wait(timeout=600)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--dump"] and len(argv) == 2:
        _dump(argv[1])
        return 0
    if argv not in ([], ["--force"]):
        print("usage: python -m strata.classdata [--force]", file=sys.stderr)
        return 2
    found = archive()
    if found and not argv:
        print(f"up to date: {found}")
        return 0
    try:
        print(f"built {build()}")
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        detail = (getattr(e, "stderr", None) or str(e)).strip().splitlines()
        print(f"note: no class-data archive for Spark ({detail[-1] if detail else e}); "
              "Spark starts as usual, only slower", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
