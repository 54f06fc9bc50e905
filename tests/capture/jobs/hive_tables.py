"""A job over Hive-format tables in Spark's embedded metastore: a delimited text table filled by
INSERT and by LOAD DATA, a text table partitioned by day, a CTAS of each kind Spark writes (a Hive
text table, written through its SerDe; a Hive Parquet table, which Spark converts to a Parquet
write), a `df.write.format("hive").saveAsTable` and an INSERT OVERWRITE DIRECTORY. Run plainly and
under `strata capture`, both must print the same and leave the same files; captured, every write
is one run.

Hadoop's block size is set to 4 bytes, so that reading a text table cuts each file into several
splits, as a cluster cuts large files.

Arguments: OUTPUT_DIR (the warehouse and the metastore go there; run it with OUTPUT_DIR as the
working directory, where Derby writes its log).
"""
import sys

from pyspark.sql import SparkSession

out = sys.argv[1]
spark = (SparkSession.builder.appName("hive_tables")
         .config("spark.sql.warehouse.dir", f"{out}/warehouse")
         .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                 f"jdbc:derby:;databaseName={out}/metastore_db;create=true")
         .config("spark.hadoop.fs.local.block.size", "4")  # Hadoop cuts every file into splits of 4 bytes,
         .enableHiveSupport()                               # as it cuts files of gigabytes into blocks
         .getOrCreate())

spark.sql("CREATE TABLE people (id INT, name STRING, city STRING) "
          "ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE")
spark.sql("INSERT INTO people VALUES (1, 'ann', 'Oslo'), (2, 'bob', 'Rome'), (3, 'cy', 'Oslo'), (4, 'di', NULL)")
with open(f"{out}/more_people.csv", "w") as f:
    f.write("5,eve,Oslo\n6,fay,Rome\n")
spark.sql(f"LOAD DATA LOCAL INPATH '{out}/more_people.csv' INTO TABLE people")
spark.sql("CREATE TABLE visits (person INT, pages INT) PARTITIONED BY (day STRING) STORED AS TEXTFILE")
spark.sql("INSERT INTO visits PARTITION (day = '2024-01-01') VALUES (1, 3), (2, 5), (4, 1)")
spark.sql("INSERT INTO visits PARTITION (day = '2024-01-02') SELECT id, id * 2 FROM people WHERE city = 'Oslo'")

spark.sql("CREATE TABLE by_city STORED AS TEXTFILE AS "
          "SELECT p.city, sum(v.pages) AS pages FROM people p JOIN visits v ON v.person = p.id GROUP BY p.city")
spark.table("by_city").orderBy("city").show()
spark.sql("CREATE TABLE oslo STORED AS PARQUET AS SELECT id, name FROM people WHERE city = 'Oslo'")
spark.table("people").where("city = 'Rome'").write.format("hive").saveAsTable("rome")
export = (f"INSERT OVERWRITE DIRECTORY '{out}/export' ROW FORMAT DELIMITED FIELDS TERMINATED BY '\\t' "  # noqa: S608
          "STORED AS TEXTFILE SELECT v.day, o.name, v.pages FROM visits v JOIN oslo o ON o.id = v.person")
spark.sql(export)
print(spark.sql("SELECT * FROM oslo ORDER BY id").collect(), spark.table("rome").orderBy("id").collect())
print(sorted(spark.read.text(f"{out}/export").collect()))
