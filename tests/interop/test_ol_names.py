"""OpenLineage's names for captured datasets (capture/storing/ol_names.py), as OpenLineage's Spark
integration gives them: the expected names are what openlineage-spark 1.53.0's listener emitted
for the same tables and locations (a job with `spark.sql.warehouse.dir=/tmp/ol-probe/wh`: a
table in `default`, one in database `dw`, one in a database with its own location, one saved
with a `path` option), and what openlineage-java's FilesystemDatasetUtils tests expect of object
stores and HDFS. No Spark."""

from __future__ import annotations

import pytest

from capture.storing.catalog_tables import written_columns
from capture.storing.ol_names import OLName, TableFacts, location_dataset, table_dataset

WH = "file:/tmp/ol-probe/wh"


@pytest.mark.parametrize("location, expected", [
    ("file:/tmp/ol-probe/out1", OLName("file", "/tmp/ol-probe/out1")),
    ("file:/tmp/ol-probe/out1/", OLName("file", "/tmp/ol-probe/out1")),
    ("/tmp/ol-probe/out1", OLName("file", "/tmp/ol-probe/out1")),
    ("file:///tmp/a%20b", OLName("file", "/tmp/a b")),
    ("tweets", OLName("file", "tweets")),  # a name given to a read
    ("s3a://bucket/warehouse/t/", OLName("s3://bucket", "warehouse/t")),
    ("gs://bucket", OLName("gs://bucket", "/")),
    ("abfs://c@acct.dfs.core.windows.net/t", OLName("abfss://c@acct.dfs.core.windows.net", "t")),
    ("hdfs://namenode:8020/user/t/", OLName("hdfs://namenode:8020", "/user/t")),
], ids=["file", "file-slash", "path", "escaped", "given-name", "s3a", "bucket", "abfs", "hdfs"])
def test_a_location_is_named_by_scheme_authority_and_path(location, expected):
    assert location_dataset(location) == expected


@pytest.mark.parametrize("facts, expected", [
    (TableFacts(f"{WH}/t_default", "default", "t_default", WH),
     OLName("file", "/tmp/ol-probe/wh/t_default", (WH, "default.t_default"))),
    (TableFacts(f"{WH}/dw.db/t_in_wh", "dw", "t_in_wh", WH),
     OLName("file", "/tmp/ol-probe/wh/dw.db/t_in_wh", (WH, "dw.t_in_wh"))),
    (TableFacts("file:/tmp/ol-probe/dx_loc/t_db_loc", "dx", "t_db_loc", WH),
     OLName("file", "/tmp/ol-probe/dx_loc/t_db_loc")),
    (TableFacts("file:/tmp/ol-probe/ext", "dw", "t_ext", WH), OLName("file", "/tmp/ol-probe/ext")),
    (TableFacts("file:/tmp/ol-probe/wh2/t", "default", "t", WH), OLName("file", "/tmp/ol-probe/wh2/t")),
    (TableFacts("s3a://b/wh/d.db/t", "d", "t", "s3a://b/wh/"), OLName("s3://b", "wh/d.db/t", ("s3://b/wh", "d.t"))),
    (TableFacts("hdfs://nn:8020/wh/d.db/t", "d", "t", "hdfs://nn:8020/wh"),
     OLName("hdfs://nn:8020", "/wh/d.db/t", ("hdfs://nn:8020/wh", "d.t"))),
    (TableFacts("hdfs://nn:8020/x/t", "d", "t", "hdfs://nn:8020/wh", "thrift://metastore:9083"),
     OLName("hdfs://nn:8020", "/x/t", ("hive://metastore:9083", "d.t"))),
], ids=["default-db", "db-in-warehouse", "db-elsewhere", "path-option", "sibling-folder", "s3", "hdfs",
        "hive-metastore"])
def test_a_table_is_named_by_its_location_with_its_catalog_name_as_symlink(facts, expected):
    assert table_dataset(facts) == expected


@pytest.mark.parametrize("method, result, traced, expected", [
    ("insertInto", ["col1", "col2"], None, [("col1", "n"), ("col2", "label")]),  # by position
    ("saveAsTable", ["LABEL", "n"], None, [("LABEL", "label"), ("n", "n")]),  # by name, any case
    ("insertInto", ["text", "cnt"], [("cnt", "n"), ("text", "label")], [("cnt", "n"), ("text", "label")]),
], ids=["insertInto", "saveAsTable", "as-spark-resolved"])
def test_written_columns(method, result, traced, expected):
    assert written_columns(method, result, ["n", "label"], traced) == expected
