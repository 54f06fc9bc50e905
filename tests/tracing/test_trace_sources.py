"""TRACE's `source` and `value`: where each traced input item lives and its value, read back.

The answers are checked against the input files read naively (lines split by hand, Parquet rows
by index), for a captured run that reads JSON Lines, Parquet and CSV from a folder whose name
needs URI quoting; an input changed after the run says so instead of guessing.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
import xxhash
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import iql
from capture import Tracker, capturing
from capture.tracing.duckdb.locate import _line_starts
from capture.tracing.places import value_at
from store import Store
from store.index.xxh import hash_longs
from strata.cli import main

RECORDS = [{"a": i, "s": f"rec {i}", "tags": [f"t{i}", f"u{i}"], "u": {"n": i * 10}} for i in range(12)]


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    """One captured run (``capturing``: the analyzed plan) over JSON Lines (blank lines, CRLF),
    Parquet (two files) and CSV inputs in a folder named ``in pu% ü``."""
    root = tmp_path_factory.mktemp("sources")
    folder = root / "in pu% ü"
    folder.mkdir()
    lines = [json.dumps(r) for r in RECORDS[:6]]
    (folder / "recs.json").write_bytes(("\r\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n").encode())
    spark.createDataFrame([(r["a"], r["s"]) for r in RECORDS[6:10]], "a long, s string") \
        .repartition(2).write.parquet(str(folder / "recs.parquet"))
    (folder / "recs.csv").write_text("a,s\n" + "".join(f"{r['a']},{r['s']}\n" for r in RECORDS[10:]))
    store = Store.open(str(root / "store"), spark=lambda: spark)
    with capturing(spark, store, pipeline="sources", model=False):
        j = spark.read.schema("a long, s string, tags array<string>, u struct<n: long>").json(str(folder / "recs.json"))
        p = spark.read.parquet(str(folder / "recs.parquet"))
        c = spark.read.schema("a long, s string").option("header", True).csv(str(folder / "recs.csv"))
        j.select("a", "s").unionByName(p).unionByName(c).filter("a >= 0").write.parquet(str(root / "out"))
    return Store.open(str(root / "store"), spark=spark), folder


def _naive_lines(path) -> list[str]:
    return re.split(r"\r\n|\r|\n", open(path, encoding="utf-8").read())


def test_every_traced_item_points_at_its_line_or_row_and_its_value(run):
    store, folder = run
    rows = iql.run(store, "SELECT t.item_id, t.path, t.source, t.value FROM TRACE(MATCH '/a') t "
                          "WHERE t.path = 'a'").rows()
    assert len(rows) == len(RECORDS)
    seen = set()
    for _, _, source, value in rows:
        a = json.loads(value)
        seen.add(a)
        if a < 6:  # JSON Lines: file:line, lines from 1, blank lines and CRLF counted as lines
            path, line = source.rsplit(":", 1)
            assert path == str(folder / "recs.json")
            assert json.loads(_naive_lines(path)[int(line) - 1])["a"] == a
        elif a < 10:  # Parquet: file#row, rows from 0
            path, row = source.rsplit("#", 1)
            assert os.path.dirname(path) == str(folder / "recs.parquet")
            assert pq.read_table(path).slice(int(row), 1).to_pylist()[0]["a"] == a
        else:  # CSV: file:line, the header is line 1
            path, line = source.rsplit(":", 1)
            assert path == str(folder / "recs.csv")
            assert _naive_lines(path)[int(line) - 1].split(",")[0] == str(a)
    assert seen == {r["a"] for r in RECORDS}


def test_values_come_from_the_input_at_each_path(run):
    store, _ = run
    rows = iql.run(store, "SELECT t.path, t.value, t.role FROM TRACE(MATCH '/s = ''rec 2''') t").rows()
    assert {(p, v) for p, v, _ in rows} == {("s", '"rec 2"'), ("a", "2")}  # the filter read `a`: influencing
    assert dict((p, r) for p, _, r in rows) == {"s": "contributing", "a": "influencing"}


def test_the_trace_statement_shows_sources_and_values_as_trees(run):
    store, folder = run
    result = iql.run(store, "TRACE MATCH '/a = 7'")
    from strata.cli_query import render

    lines = render(result, "table").splitlines()
    assert re.fullmatch(re.escape(str(folder / "recs.parquet")) + r"/part-[^ ]+\.parquet#\d+  dataset:.*", lines[0])
    a_line = next(line for line in lines if line.startswith("  a  "))
    assert "contributing" in a_line and a_line.endswith("  = 7")


def test_strata_trace_prints_the_same_rows(run):
    store, folder = run
    runner = CliRunner()
    out = runner.invoke(main, ["--store", store.root, "trace", "/a = 11", "--format", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["columns"][-2:] == ["source", "value"]
    by_path = {r[3]: r for r in doc["rows"]}
    assert by_path["a"][8] == "11" and by_path["a"][7].endswith(":3")  # header, 10, 11
    bad = runner.invoke(main, ["--store", store.root, "trace", "/a["])
    assert bad.exit_code == 2 and "tree pattern" in bad.output


def test_a_changed_input_says_so_instead_of_guessing(spark, tmp_path):
    data = tmp_path / "t.json"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[:4]))
    store = Store.open(str(tmp_path / "store"), spark=spark)
    tracker = Tracker(spark, store, pipeline="p", model=False)
    tracker.write(tracker.read.json(str(data), name="t").filter("a = 2"), str(tmp_path / "o"), format="parquet")
    before = iql.run(store, "SELECT t.source, t.value FROM TRACE(MATCH '/a') t WHERE t.path = 'a'").rows()
    assert before == [(f"{data}:3", "2")]
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[4:8]))  # same length, new time
    os.utime(data, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    after = iql.run(store, "SELECT t.source, t.value FROM TRACE(MATCH '/a') t WHERE t.path = 'a'").rows()
    assert after == [(f"{data} (changed since the run: not read back)", None)]
    data.unlink()
    assert "changed since the run" in iql.run(store, "SELECT t.source FROM TRACE(MATCH '/a') t").rows()[0][0]


def test_positions_need_spark_under_the_local_engine(run):
    store, folder = run
    local = Store.open(store.root, spark=store.spark, engine="local")
    (source,) = {r[0] for r in iql.run(local, "SELECT t.source FROM TRACE(MATCH '/a = 11') t").rows()}
    assert source == f"{folder / 'recs.csv'} (finding its rows needs Spark: not with --engine local)"


def test_rows_the_program_made_are_named_not_read(spark, tmp_path):
    store = Store.open(str(tmp_path / "store"), spark=spark)
    with capturing(spark, store, pipeline="p", model=False):
        spark.createDataFrame([(1, "x")], "a long, s string").write.parquet(str(tmp_path / "o"))
    (row,) = {(r[0], r[1]) for r in iql.run(store, "SELECT t.source, t.value FROM TRACE(MATCH '/a') t").rows()}
    assert row[0].startswith("rows the program made") and row[1] is None


def test_a_catalog_table_names_the_table(spark, tmp_path):
    store = Store.open(str(tmp_path / "store"), spark=spark)
    spark.sql("DROP TABLE IF EXISTS trace_src_t")
    spark.createDataFrame([(1, "x"), (2, "y")], "a long, s string").write.saveAsTable("trace_src_t")
    try:
        with capturing(spark, store, pipeline="p", model=False):
            spark.table("trace_src_t").filter("a = 2").write.parquet(str(tmp_path / "o"))
        (source, value) = iql.run(store, "SELECT t.source, t.value FROM TRACE(MATCH '/a') t "
                                         "WHERE t.path = 'a'").rows()[0]
        assert source.startswith("spark_catalog.default.trace_src_t (") and "#" in source and value == "2"
    finally:
        spark.sql("DROP TABLE IF EXISTS trace_src_t")


# ---- the pieces, against references --------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text("ab{}", max_size=4), st.sampled_from(["\n", "\r\n", "\r"])), max_size=8),
       st.booleans())
def test_line_starts_are_where_hadoop_starts_lines(parts, trailing):
    text = "".join(t + sep for t, sep in parts)
    if not trailing and parts:
        text = text[: -len(parts[-1][1])]
    data = text.encode()
    starts, pos = [], 0  # reference: walk the text as LineRecordReader does
    while pos < len(data):
        starts.append(pos)
        m = re.compile(rb"\r\n|\r|\n").search(data, pos)
        pos = m.end() if m else len(data)
    assert _line_starts(data, None).tolist() == starts


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=20), st.integers(-(1 << 63), (1 << 63) - 1),
       st.sampled_from([1, 3, 1 << 16]))
def test_vectorized_hash_is_xxh64_of_each_long(values, seed, chunk):
    import struct

    got = hash_longs(np.array(values, dtype=np.int64), seed, chunk=chunk).tolist()
    want = [xxhash.xxh64_intdigest(struct.pack("<q", v), seed=seed & ((1 << 64) - 1)) for v in values]
    assert got == [w - (1 << 64) if w >= 1 << 63 else w for w in want]


def test_hashes_equal_sparks_xxhash64(spark):
    from capture.tracing.duckdb.locate import _seed
    from capture.tracing.places import spark_file_path

    path = "file:/tmp/a b%c/ü x.json"
    got = hash_longs(np.array([0, 17, 1 << 40]), _seed("ds", spark_file_path(path), 1795574716451000)).tolist()
    want = list(spark.range(1).select(*[
        F.xxhash64(F.lit("ds"), F.lit("file:/tmp/a%20b%25c/ü%20x.json"), F.lit(1795574716451000), F.lit(o).cast("long"))
        for o in (0, 17, 1 << 40)]).collect()[0])
    assert spark_file_path(path) == "file:/tmp/a%20b%25c/ü%20x.json"
    assert got == want


def test_value_at_steps_into_fields_and_one_based_positions():
    rec = {"u": {"n": 3}, "tags": ["x", "y"], "l": [{"k": 1}, {"k": 2}]}
    assert value_at(rec, ["u", "n"]) == 3
    assert value_at(rec, ["tags", "[2]"]) == "y" and value_at(rec, ["tags", "[3]"]) is None
    assert value_at(rec, ["l", "[pos]", "k"]) == [1, 2]
    assert value_at(rec, ["missing", "x"]) is None


def test_inputs_are_read_only_when_source_or_value_is_used(run, tmp_path):
    store, _ = run
    plain = "\n".join(r[0] for r in iql.run(store, "EXPLAIN SELECT t.path FROM TRACE(MATCH '/a') t").rows())
    asked = "\n".join(r[0] for r in iql.run(store, "EXPLAIN TRACE MATCH '/a'").rows())
    assert "find the traced input items" not in plain
    assert "find the traced input items in the run's inputs for source and value" in asked
    rows = iql.run(store, "SELECT t.path, t.role FROM TRACE(MATCH '/a = 3') t").rows()
    assert ("a", "contributing") in rows
