"""JSON inputs read with the offset reader (capture/jvm/OffsetJsonFileFormat.java): the records
are Spark's own, a filter after the read is pushed into the JSON parser, and an item's id is its
file and line, whatever filter or cut of the input a run uses."""

from __future__ import annotations

import bz2
import gzip

import pytest
from pyspark.sql import functions as F

from capture import Tracker, jvm
from store.storage import spark_conf

ROWS = [
    '{"k": 1, "v": "a", "s": {"x": 10}}',
    '',  # Spark skips blank lines
    '{"k": 2, "v": "b", "s": {"x": 20}}',
    '{"k": 3, "v": broken',  # malformed: a row of nulls (+ the corrupt record) or dropped
    '{"k": 4, "v": "a", "s": {"x": 40}}',
    '{"k": 1, "v": "a", "s": {"x": 10}}',  # a duplicate of the first record: its own item
]


@pytest.fixture(autouse=True)
def _needs_the_reader(spark):
    if not jvm.available(spark):
        pytest.skip("the offset reader is not built (no javac here): JSON ids are positional, "
                    "see test_positional_ids_follow_the_split_layout_not_the_core_count")


@pytest.fixture()
def lines(tmp_path):
    f = tmp_path / "rows.json"
    f.write_text("\n".join(ROWS) + "\n")
    return str(f)


def _ids(tdf):
    """((k, v), id) per item, sorted (the malformed record's k and v are null)."""
    rows = tdf.with_item_ids("_pid").collect()
    return sorted((((r.asDict().get("k"), r.asDict().get("v")), r._pid) for r in rows), key=repr)


@pytest.mark.parametrize("options", [{}, {"mode": "DROPMALFORMED"},
                                     {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "bad"}])
def test_records_are_spark_s_own_and_ids_unique(spark, lines, options):
    plain = spark.read.options(**options).json(lines)
    tracked = Tracker(spark, None).read.json(lines, name="rows", **options)
    assert tracked.columns == plain.columns
    assert sorted(map(tuple, tracked.collect()), key=repr) == sorted(map(tuple, plain.collect()), key=repr)
    ids = [r._pid for r in tracked.with_item_ids("_pid").collect()]
    assert len(set(ids)) == len(ids) == plain.count()


def test_a_filter_is_pushed_into_the_scan_and_keeps_every_id(spark, lines):
    unfiltered = _ids(Tracker(spark, None).read.json(lines, name="rows"))
    kept = Tracker(spark, None).read.json(lines, name="rows").filter(F.col("v") == "a")
    plan = kept.annotated._jdf.queryExecution().executedPlan().toString()
    assert "PushedFilters: [IsNotNull(v), EqualTo(v,a)]" in plan and "JSON+offset" in plan
    # every kept record has the id the unfiltered read gives it; the two copies of the first
    # record are two items
    got = _ids(kept)
    assert got == [x for x in unfiltered if x[0][1] == "a"]
    assert [kv for kv, _ in got] == [(1, "a"), (1, "a"), (4, "a")] and len({p for _, p in got}) == 3
    # a dropped malformed record moves no other record's id (a row position would)
    dropped = _ids(Tracker(spark, None).read.json(lines, name="rows", mode="DROPMALFORMED"))
    assert dropped == [x for x in unfiltered if x[0][0] is not None]


@pytest.mark.parametrize("codec", [gzip, bz2])
def test_a_compressed_file_gets_the_same_ids_under_any_cut(spark, tmp_path, codec):
    """A compressed file is read whole, bzip2 too (which Spark would split at its blocks): its
    offsets count the uncompressed text. 8,000 records are 4 bzip2 blocks of 100 kB."""
    f = tmp_path / ("rows.json.gz" if codec is gzip else "rows.json.bz2")
    n = 8000
    with codec.open(f, "wt", compresslevel=1) as out:
        out.write("\n".join(f'{{"k": {i}, "v": "{"ab"[i % 2]}", "pad": "{i:040d}"}}' for i in range(n)) + "\n")
    first = _ids(Tracker(spark, None).read.json(str(f), name="rows"))
    assert len({p for _, p in first}) == n
    with spark_conf(spark, "spark.sql.files.maxPartitionBytes", "8192"):
        assert _ids(Tracker(spark, None).read.json(str(f), name="rows")) == first
    assert sorted(kv for kv, _ in first) == sorted((r.k, r.v) for r in spark.read.json(str(f)).collect())


def test_a_custom_line_separator_and_several_files(spark, tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    for n in range(2):
        (folder / f"part-{n}.json").write_text("|".join(f'{{"k": {n * 10 + i}, "v": "x"}}' for i in range(3)))
    plain = spark.read.json(str(folder), lineSep="|")
    tracked = Tracker(spark, None).read.json(str(folder), name="parts", lineSep="|")
    assert sorted(tracked.collect()) == sorted(plain.collect())
    assert len({p for _, p in _ids(tracked)}) == 6


def test_multiline_json_keeps_positional_ids(spark, tmp_path):
    f = tmp_path / "doc.json"
    f.write_text('[{"k": 1, "v": "a"},\n {"k": 2, "v": "b"}]')
    tracked = Tracker(spark, None).read.json(str(f), name="doc", multiLine=True)
    assert "JSON+offset" not in tracked.annotated._jdf.queryExecution().executedPlan().toString()
    assert sorted(tracked.collect()) == sorted(spark.read.json(str(f), multiLine=True).collect())


def test_a_partitioned_folder_keeps_its_partition_columns(spark, tmp_path):
    for year in (2015, 2016):
        part = tmp_path / "papers" / f"year={year}"
        part.mkdir(parents=True)
        (part / "part-0.json").write_text("\n".join(f'{{"k": {year * 10 + i}}}' for i in range(3)) + "\n")
    path = str(tmp_path / "papers")
    plain = spark.read.json(path)
    tracked = Tracker(spark, None).read.json(path, name="papers")
    assert tracked.columns == plain.columns == ["k", "year"]
    kept = tracked.filter(F.col("year") == 2016)
    assert sorted(kept.collect()) == sorted(plain.filter(F.col("year") == 2016).collect())
    whole = {r.k: r._pid for r in tracked.with_item_ids("_pid").collect()}
    assert len(set(whole.values())) == 6
    assert {r.k: r._pid for r in kept.with_item_ids("_pid").collect()} == {k: p for k, p in whole.items() if k >= 20160}
