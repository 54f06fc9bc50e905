"""The corpus (tests/capture/capture_corpus/): unmodified PySpark scripts captured as `strata capture` does.

Each script runs twice in the suite's Spark session through ``runpy`` with ``sys.argv`` set, the
mechanism of `strata capture`: plainly, then inside ``capture.capturing``. The two runs must print
the same (the script's whole stdout: its ``show()``, ``collect()``, ``take()`` and count prints)
and leave the same files (``_files``: every file under the output folder, the catalog tables'
included, by its path with part files' random write ids replaced by the write's place; a Parquet
file by its schema and its rows in file order, any other file byte for byte); their catalog
tables the same names and schemas; the captured run one committed run per write (``WRITES``).
Nothing is compared sorted: every script's rows come out of the suite's session in the same order
from run to run, and capture keeps that order. For a sample of scripts (``REFERENCES``), items of
an output are traced and the input items the trace reaches are checked against a hand-worked
answer computed here in plain Python from the input records; each traced item's `source`
(file:line, file#row) read naively must hold that record, and the trace must reach as many rows
the program made itself (an RDD step's: the trace ends there) as the answer says.

Whole programs also run through the `strata capture` command in new processes, plain and
captured (a corpus script with two writes; the job of examples/capture, whose run `strata trace`
then traces to its input line; tests/capture/jobs/: a job whose output shows its settings, and a
job over Hive tables), started in the background once the suite's SparkSession is up
(conftest.py) and checked at the end.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import io
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pyarrow.parquet as pq
import pytest
from support.ol_schema import check_published
from support.paths import EXAMPLES, ROOT

from capture import capturing
from capture.auto.plan import translate
from capture.storing import load_run
from capture.storing.to_openlineage import PROGRAM_MADE
from capture.tracing import parse_pattern, trace, trace_rows
from capture.tracking.tracker import Tracker
from store import Store

CORPUS = Path(__file__).parent / "capture_corpus"
SCRIPTS = sorted(p.stem for p in CORPUS.glob("*.py"))
COUNTRIES = ["DE", "FR", "US"]


def _customer(c: int) -> dict:
    return {"customer_id": c, "name": ["  alice  smith", "BOB jones", "carol", "dave  o", "eve", "fay"][c - 1],
            "country": COUNTRIES[c % 3], "active": c != 4}


CUSTOMERS = [_customer(c) for c in range(1, 7)]
ORDERS = [
    {"order_id": f"o{i}", "customer": {"id": i % 5 + 1, "country": COUNTRIES[(i % 5 + 1) % 3]},
     "lines": [{"sku": f"s{(i + j) % 6}", "qty": j + 1, "price": 1.5 + j} for j in range(i % 3)]}
    for i in range(1, 13)
]
PRODUCTS = [{"sku": f"s{k}", "category": None if k == 5 else ["tools", "toys"][k % 2], "price": 1.0 + k}
            for k in range(7)]
EVENTS = {m: [{"user": f"u{(m + e) % 4 + 1}", "kind": ["click", "view", "buy"][(m * e) % 3], "ts": m * 100 + e}
              for e in range(5)] for m in (1, 2, 3)}


@pytest.fixture(scope="module")
def corpus_inputs(spark, tmp_path_factory):
    return _write_inputs(tmp_path_factory.mktemp("corpus_in"), spark)


def _write_inputs(root: Path, spark) -> Path:
    root.mkdir(exist_ok=True)
    (root / "orders.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ORDERS))
    lines = ["customer_id,name,country,active"] + [
        f"{c['customer_id']},{c['name']},{c['country']},{str(c['active']).lower()}" for c in CUSTOMERS]
    (root / "customers.csv").write_text("\n".join(lines) + "\n")
    spark.createDataFrame(PRODUCTS, "sku string, category string, price double").coalesce(1) \
        .write.parquet(str(root / "products.parquet"))
    (root / "events").mkdir()
    for m, evs in EVENTS.items():
        (root / "events" / f"2024-0{m}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    (root / "logs.txt").write_text("GET /a ok\nget /b FAIL\nGET /a ok\n\nPOST /c ok\n")
    return root


def _run_script(name: str, *args: str) -> str:
    """Run a corpus script as `strata capture` does (``runpy``, ``sys.argv``); what it printed."""
    argv = sys.argv
    sys.argv = [str(CORPUS / f"{name}.py"), *args]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        sys.argv = argv
    return printed.getvalue()


def _same_tables(spark) -> None:
    """The catalog tables of the two runs: the same names and schemas (their files, under each
    run's `db` folder, are compared with the others)."""
    # SHOW TABLES, not spark.catalog.listTables: the suite's session interprets expressions
    # (conftest.py), and the catalog's Table objects cannot be decoded that way
    names = {}
    for db in ("corpus_plain", "corpus_cap"):
        names[db] = sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {db}").collect() if not r.isTemporary) \
            if spark.catalog.databaseExists(db) else []
    assert names["corpus_cap"] == names["corpus_plain"]
    for t in names["corpus_plain"]:
        assert spark.table(f"corpus_cap.{t}").schema == spark.table(f"corpus_plain.{t}").schema, t


def _ids(spark, df, key) -> dict[int, object]:
    """Input item id -> the record's key, through the translation capture uses."""
    tdf = translate(Tracker(spark), df)
    return {r["__item"]: key(r) for r in tdf.with_item_ids("__item").collect()}


def _traced(store, run: str, pattern: str, ids: dict[int, object], key) -> tuple[set, int]:
    """The keys of the traced input items, and how many traced items are rows the program made
    (``rdd:``, ``local:`` …: a trace ends there); each keyed item's ``source`` (file:line,
    file#row) read naively must hold a record with that key."""
    rows = trace_rows(store, trace(store, run, parse_pattern(pattern), limit=1000), values=False)
    for r in rows:
        if r[2] in ids:
            assert str(key(_record_at(r[7]))) == str(ids[r[2]]), r[7]
    made = {(r[0], r[2]) for r in rows if r[0].startswith(PROGRAM_MADE)}
    return {ids[r[2]] for r in rows if r[2] in ids}, len(made)


def _record_at(source: str) -> dict:
    """The input record ``source`` names, read without Spark or Strata."""
    if "#" in source:  # Parquet: file#row
        path, row = source.rsplit("#", 1)
        return pq.read_table(path).slice(int(row), 1).to_pylist()[0]
    path, line = source.rsplit(":", 1)
    lines = Path(path).read_text().splitlines()
    if path.endswith(".csv"):  # line 1 is the header
        return next(csv.DictReader([lines[0], lines[int(line) - 1]]))
    return json.loads(lines[int(line) - 1])


class Reference(NamedTuple):
    """A hand-worked trace: the items of output ``output`` (the script's n-th write) that
    ``pattern`` matches reach, among the items of ``source``, exactly those whose ``key`` is in
    ``expected()``, and ``made`` items of rows the program made itself."""

    output: int
    pattern: str
    source: Callable  # (spark, input dir) -> the input as a DataFrame
    key: Callable  # an input row -> its key
    expected: Callable[[], set]
    made: int = 0


def _orders(spark, inp):
    return spark.read.json(str(inp / "orders.jsonl"))


def _events(spark, inp):
    return spark.read.json(str(inp / "events"))


def _customers(spark, inp):
    return spark.read.option("header", "true").option("inferSchema", "true").csv(str(inp / "customers.csv"))


def _order_id(r) -> str:
    return r["order_id"]


def _event(r) -> tuple:
    return r["user"], r["ts"]


def _orders_of(customer: int) -> set:
    return {o["order_id"] for o in ORDERS if o["customer"]["id"] == customer}


def _events_of(user: str) -> set:
    return {(e["user"], e["ts"]) for evs in EVENTS.values() for e in evs if e["user"] == user}


def _star_expected() -> set:
    cust = {c["customer_id"]: c for c in CUSTOMERS}
    cat = {p["sku"]: p["category"] for p in PRODUCTS}
    return {o["order_id"] for o in ORDERS if cust[o["customer"]["id"]]["active"]
            and cust[o["customer"]["id"]]["country"] == "FR"
            and any(cat.get(line["sku"]) == "toys" for line in o["lines"])}


REFERENCES = {
    # a kept customer comes from its own row (the subqueries' orders only influence: semi/anti joins)
    "in_subquery_sql": Reference(0, "/customer_id = 1", _customers, lambda r: r["customer_id"], lambda: {1}),
    # mapInPandas keeps each row's id (the map rule)
    "pandas_enrich": Reference(0, "/sku = 's3'", lambda s, i: s.read.parquet(str(i / "products.parquet")),
                               lambda r: r["sku"], lambda: {"s3"}),
    # an exploded line comes from its order alone
    "nested_etl": Reference(0, "/order_id = 'o5'", _orders, _order_id, lambda: {"o5"}),
    # a (country, category) revenue: the orders of active customers there with such a line
    "star_schema_sql": Reference(0, "/country = 'FR' and /category = 'toys'", _orders, _order_id, _star_expected),
    # the latest event of a user: every event of that user (the window's partition)
    "dedup_row_number": Reference(0, "/user = 'u2'", _events, _event, lambda: _events_of("u2")),
    # a user's pivot row: all of the user's events
    "pivot_months": Reference(0, "/user = 'u3'", _events, _event, lambda: _events_of("u3")),
    # the second write from the cached events: a user's counts, all of the user's events (the
    # cache is transparent: the trace reaches the JSON lines)
    "cached_sample": Reference(1, "/user = 'u2'", _events, _event, lambda: _events_of("u2")),
    # the CTAS beside the INSERT: customer 2's count, its orders o1, o6 and o11 (joined, grouped)
    "ctas_openlineage_style": Reference(0, "/customer_id = 2", _orders, _order_id, lambda: _orders_of(2)),
    # customer 2's report row: its orders o1, o6, o11 from the file, and two rows the program made,
    # where the trace ends (docs/capture.md, LogicalRDD): customer 2's row of the rdd.map step
    # (not its customers.csv line: the RDD's functions are not in the plan) and the US row of
    # the parallelize lookup
    "rdd_customers": Reference(0, "/customer_id = 2", _orders, _order_id, lambda: _orders_of(2), made=2),
}


# writes per script (one run each); the others write once
WRITES = {"cached_sample": 2, "ctas_openlineage_style": 2, "save_as_table": 2, "semi_anti": 2, "distinct_intersect": 2}


@pytest.fixture()
def fresh_dbs(spark):
    yield
    spark.catalog.setCurrentDatabase("default")  # a script that failed midway may have left its own
    for db in ("corpus_plain", "corpus_cap"):
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


@pytest.mark.parametrize("name", SCRIPTS)
def test_corpus_script(spark, corpus_inputs, tmp_path, fresh_dbs, name):
    plain, cap_out = tmp_path / "plain", tmp_path / "cap"
    plain.mkdir()
    cap_out.mkdir()
    store = Store.open(str(tmp_path / "store"), spark=lambda: spark)
    printed = _run_script(name, str(corpus_inputs), str(plain), "plain")
    with capturing(spark, store, pipeline=name) as cap:
        printed_captured = _run_script(name, str(corpus_inputs), str(cap_out), "cap")
    assert printed_captured == printed
    files = _files(plain)
    assert files and _files(cap_out) == files
    _same_tables(spark)
    assert len(cap.runs) == WRITES.get(name, 1)
    assert all(load_run(store, info.run).operators for info in cap.runs)
    if name in REFERENCES:
        ref = REFERENCES[name]
        ids = _ids(spark, ref.source(spark, corpus_inputs), ref.key)
        assert _traced(store, cap.runs[ref.output].run, ref.pattern, ids, ref.key) == (ref.expected(), ref.made)


_COMMAND: dict[str, object] = {}
_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
EXAMPLE = EXAMPLES / "capture"
JOBS = Path(__file__).parent / "jobs"  # jobs run as whole programs, plain and captured


def _strata(store: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "strata.cli", "--store", str(store), "--master", "local[1]", *args],
                          capture_output=True, text=True, env=_ENV, timeout=300, cwd=cwd)


def _plain(script: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python SCRIPT ARGS` without Strata, with what `_strata` gives Spark (`--master local[1]`,
    the suite's JVM options from $STRATA_SPARK_CONF) as spark-submit options."""
    conf = [p for p in _ENV.get("STRATA_SPARK_CONF", "").split(";") if p.strip()]
    submit = ["--master", "local[1]", *(a for c in conf for a in ("--conf", c)), "pyspark-shell"]
    env = {**_ENV, "PYSPARK_SUBMIT_ARGS": " ".join(shlex.quote(a) for a in submit)}
    env.pop("STRATA_SPARK_CONF", None)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=300,
                          cwd=cwd)


PART = re.compile(r"part-(\d+)-([0-9a-f-]{36})")  # a part file's index and its write's random id


def _files(root: Path, skip: tuple[str, ...] = (), unordered: tuple[str, ...] = ()) -> dict[str, object]:
    """Every file under root but those under ``skip``, by its path with part files' write ids
    replaced by the write's place among the writes under root (``W0`` the first: a table that
    an INSERT appends to holds the parts of two writes); under ``unordered``: per folder, its
    number of files and its rows in sorted order; elsewhere a Parquet file's
    schema (with Spark's metadata) and rows, any other file's bytes. A Parquet file's bytes (and
    so its .crc) may differ in one place: capture's writer lists a column chunk's encodings in
    another order."""
    files = [f for f in sorted(root.rglob("*")) if f.is_file() and not str(f.relative_to(root)).startswith(skip)]
    first: dict[str, int] = {}  # a write's id -> when it made its first file
    for f in files:
        if (m := PART.search(f.name)) is not None:
            first[m[2]] = min(first.get(m[2], f.stat().st_mtime_ns), f.stat().st_mtime_ns)
    writes = {w: i for i, w in enumerate(sorted(first, key=first.__getitem__))}
    out: dict[str, object] = {}
    for f in files:
        name = PART.sub(lambda m: f"part-{m[1]}-W{writes[m[2]]}", str(f.relative_to(root)))
        if name.startswith(unordered):
            folder = str(Path(name).parent) + "/"
            out[folder + " files"] = out.get(folder + " files", 0) + 1
            rows = [json.dumps(r, sort_keys=True, default=str) for r in pq.read_table(f).to_pylist()] \
                if f.suffix == ".parquet" else f.read_bytes().splitlines() if not name.endswith(".crc") else []
            out.setdefault(folder, []).extend(rows)
            out[folder].sort()
        elif f.suffix == ".parquet":
            table = pq.read_table(f)
            out[name] = (table.schema.to_string(show_schema_metadata=True), table.to_pylist())
        elif not name.endswith(".parquet.crc"):
            out[name] = f.read_bytes()
        else:
            out[name] = "crc"
    return out


def start_in_background() -> None:
    """`strata capture` in new processes, from a thread started once the suite's SparkSession is
    up (conftest.py) and checked by test_strata_capture_command, so the children's JVMs run while
    other tests do: a corpus script with two writes, then the job of examples/capture and
    `strata trace` over its run (the example docs/capture.md shows)."""
    if _COMMAND:
        return
    import threading

    from pyspark.sql import SparkSession

    work = Path(tempfile.mkdtemp(prefix="strata-corpus-"))
    atexit.register(shutil.rmtree, work, True)
    inputs = _write_inputs(work / "in", SparkSession.getActiveSession())
    (work / "out").mkdir()

    def run() -> None:
        try:
            commands()
        except (subprocess.TimeoutExpired, OSError) as e:  # kept for the tests that wait on the commands
            _COMMAND["error"] = e

    def commands() -> None:
        _COMMAND["corpus"] = _strata(work / "store", "capture", "--no-model", "--", str(CORPUS / "semi_anti.py"),
                                     str(inputs), str(work / "out"), "x")
        _COMMAND["model"] = [_strata(work / "store", "model"), _strata(work / "store", "model"),
                             _strata(work / "store", "model", "semi_anti/run-none")]
        _COMMAND["example"] = _strata(work / "example", "capture", "--", str(EXAMPLE / "tweets_job.py"),
                                      str(EXAMPLE / "tweets.json"), str(work / "by_user"))
        _COMMAND["trace"] = _strata(work / "example", "trace", "/texts = 'Bonjour'")
        _COMMAND["stops"] = _strata(work / "stopped", "capture", "--", str(JOBS / "jvm_stops.py"),
                                    str(work / "stopped_out"))
        _COMMAND["gone"] = _strata(work / "gone", "capture", "--", str(JOBS / "jvm_gone.py"), str(work / "gone_out"))
        _COMMAND["plain"] = _plain(JOBS / "settings_visible.py", str(work / "plain"))
        _COMMAND["captured"] = _strata(work / "job", "capture", "--", str(JOBS / "settings_visible.py"),
                                       str(work / "captured"))
        for tag in ("hive_plain", "hive_captured"):
            (work / tag).mkdir()
        _COMMAND["hive_plain"] = _plain(JOBS / "hive_tables.py", str(work / "hive_plain"), cwd=work / "hive_plain")
        _COMMAND["hive_captured"] = _strata(work / "hive_store", "capture", "--", str(JOBS / "hive_tables.py"),
                                            str(work / "hive_captured"), cwd=work / "hive_captured")
        runs = re.findall(r"captured (hive_tables/run-\S+):", _COMMAND["hive_captured"].stderr)
        if len(runs) > 4:  # the CTAS by_city: where its Rome and Oslo rows come from; LOAD DATA's eve
            _COMMAND["hive_trace"] = [_strata(work / "hive_store", "trace", pattern, "--run", run)
                                      for pattern, run in (("/city = 'Rome'", runs[4]), ("/city = 'Oslo'", runs[4]),
                                                           ("/name = 'eve'", runs[1]))]
        _COMMAND["hive_events"] = _strata(work / "hive_store", "export", "openlineage", "--out",
                                          str(work / "hive_events.jsonl"))

    _COMMAND.update(work=work, thread=threading.Thread(target=run, daemon=True))
    _COMMAND["thread"].start()


def _wait() -> None:
    """Wait for the background thread's commands. No limit of its own: each command has one (300 s,
    `_strata`, `_plain`), so the thread ends however slow the machine is; a command past its limit
    ends it early, and the error is kept."""
    start_in_background()
    _COMMAND["thread"].join()


def _both(plain: str, captured: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """A job's plain and captured runs from the background thread, both finished with exit 0."""
    _wait()
    runs = _COMMAND.get(plain), _COMMAND.get(captured)
    assert None not in runs, f"the runs did not finish: {_COMMAND.get('error')!r}"
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    return runs


def test_capture_leaves_the_jobs_settings_and_results_as_they_are(spark):
    """A job run plainly and under `strata capture` prints the same (its settings, a shuffle's row
    order, what static partition overwrite left) and leaves the same files; the captured run
    commits one run per write."""
    plain, captured = _both("plain", "captured")
    assert captured.stderr.count("captured settings_visible/run-") == 2, captured.stderr[-2000:]
    assert "spark.sql.sources.partitionOverwriteMode STATIC" in plain.stdout  # Spark's defaults
    assert "spark.sql.shuffle.partitions 200" in plain.stdout
    assert captured.stdout == plain.stdout
    work = _COMMAND["work"]
    assert _files(work / "captured") == _files(work / "plain")


def test_hive_tables_captured_as_the_plain_job_runs_and_traced_to_their_lines(spark):
    """A job over Hive-format tables (Spark's embedded metastore; text tables cut into several
    Hadoop splits per file; a partitioned table; LOAD DATA; Hive text and Parquet CTAS; INSERT
    OVERWRITE DIRECTORY) prints the same and leaves the same files plain and captured, with one
    run per write; `strata trace` names each traced row by the table, its file and line, and reads its
    fields back (a partition column from the file's folder), without a JVM."""
    plain, captured = _both("hive_plain", "hive_captured")
    assert captured.stdout == plain.stdout and "|Oslo|   21|" in plain.stdout
    outputs = re.findall(r"captured hive_tables/run-\S+: (\S+) \(", captured.stderr)
    tables = ("people", "people", "visits", "visits", "by_city", "oslo", "rome")
    assert outputs == [*(f"spark_catalog.default.{t}" for t in tables),
                       str(_COMMAND["work"] / "hive_captured" / "export")]
    skip = ("metastore_db", "derby.log")
    work = _COMMAND["work"]
    # a Hive table's rows are read in the order Hadoop lists its files (by their random names), so
    # which numbered file of a later write a row lands in varies from run to run, plain or captured
    unordered = ("export/", "warehouse/")
    assert _files(work / "hive_captured", skip, unordered) == _files(work / "hive_plain", skip, unordered)
    rome, oslo, loaded = _COMMAND["hive_trace"]
    assert rome.returncode == 0 and oslo.returncode == 0, rome.stderr[-2000:] + oslo.stderr[-2000:]
    people, visits = work / "hive_captured" / "warehouse" / "people", work / "hive_captured" / "warehouse" / "visits"
    heads = [line for line in rome.stdout.splitlines() if not line.startswith(" ")]
    # bob is line 2 of the people file, in its third 4-byte split; his visit line 2 of day 2024-01-01's
    assert re.fullmatch(rf"spark_catalog\.default\.people \({people}/part-00000-\S+:2\)  dataset:\S+", heads[0])
    assert re.fullmatch(rf"spark_catalog\.default\.visits \({visits}/day=2024-01-01/part-00000-\S+:2\)  "
                        r"dataset:\S+", heads[1])
    assert '  city  contributing  accessed by 4; manipulated by 3,4  = "Rome"' in rome.stdout
    assert "  pages  influencing  accessed by 4; manipulated by 3  = 5" in rome.stdout
    assert "  person  influencing  accessed by 3  = 2" in rome.stdout
    heads = [line for line in oslo.stdout.splitlines() if not line.startswith(" ")]
    assert sorted(h.split(" (")[0] for h in heads) == ["spark_catalog.default.people"] * 3 + \
        ["spark_catalog.default.visits"] * 4  # ann, cy, eve (loaded); ann's two visits, cy's and eve's
    # LOAD DATA's run: a loaded row comes from its line of the loaded file
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    file, lines = work / "hive_captured" / "more_people.csv", loaded.stdout.splitlines()
    assert lines[0].startswith(f"{file}:1  dataset:{file}#") and lines[1] == '  name  contributing  = "eve"'
    # OpenLineage events of the runs, valid by OpenLineage's published schemas: a Hive table named
    # by its location with its catalog name as a symlink, the loaded file by its path
    assert _COMMAND["hive_events"].returncode == 0, _COMMAND["hive_events"].stderr[-2000:]
    events = [json.loads(line) for line in (work / "hive_events.jsonl").read_text().splitlines()]
    check_published(events)
    load = [e for e in events if e["eventType"] == "COMPLETE" and any(d["name"] == str(file) for d in e["inputs"])]
    assert len(load) == 1 and [(d["namespace"], d["name"]) for d in load[0]["inputs"]] == [("file", str(file))]
    load = load[0]
    assert [(d["namespace"], d["name"], [s["name"] for s in d["facets"]["symlinks"]["identifiers"]])
            for d in load["outputs"]] == [("file", str(people), ["default.people"])]


def test_strata_capture_command(spark, tmp_path):
    """`strata capture -- script ARGS` in a new process: exit 0, one run per write, the output;
    the script's runs captured with --no-model then modelled by `strata model` (on the driver;
    again: nothing left to model; an unknown run: exit 2); a job whose write stops Spark's JVM
    (as running out of memory does) and which goes on: the capture named as what failed, exit 1,
    nothing committed; a job whose JVM is gone before its write: the JVM's stop said, exit 1; the
    example job's run traced by `strata trace` to the input line and its values."""
    _wait()
    corpus, out = _COMMAND.get("corpus"), _COMMAND["work"] / "out"
    assert corpus is not None, f"strata capture did not finish: {_COMMAND.get('error')!r}"
    assert corpus.returncode == 0, corpus.stderr[-2000:]
    assert corpus.stderr.count("captured semi_anti/run-") == 2
    assert (out / "buyers.parquet").is_dir() and (out / "idle.parquet").is_dir()
    modelled, again, unknown = _COMMAND["model"]  # the two runs were captured --no-model
    assert modelled.returncode == 0, modelled.stderr[-2000:]
    runs = re.findall(r"captured (semi_anti/run-\S+):", corpus.stderr)
    assert re.findall(r"modelled (\S+): \d+ elements, \d+ edges on the driver", modelled.stderr) == runs
    assert again.returncode == 0 and "every captured run is in the model already" in again.stderr
    assert unknown.returncode == 2 and "no captured run 'semi_anti/run-none'" in unknown.stderr, unknown.stderr
    assert "Traceback" not in unknown.stderr
    example, traced = _COMMAND["example"], _COMMAND["trace"]
    assert example.returncode == 0 and example.stderr.count("captured tweets_job/run-") == 1, example.stderr[-2000:]
    assert traced.returncode == 0, traced.stderr[-2000:]
    lines = traced.stdout.splitlines()  # Bonjour is line 3 of the input; the filter read retweet_cnt
    assert lines[0].startswith(f"{EXAMPLE / 'tweets.json'}:3  dataset:")
    assert '  text  contributing  accessed by 3; manipulated by 3  = "Bonjour"' in lines
    assert "  retweet_cnt  influencing  accessed by 2  = 0" in lines
    stops = _COMMAND["stops"]  # the JVM stopped by a write (as out of memory): the capture failed, said so
    assert stops.returncode == 1 and "the write failed: CaptureError" in stops.stdout, stops.stderr[-2000:]
    assert ("strata: Spark's JVM stopped while writing the captured result of write 1 "
            f"({_COMMAND['work'] / 'stopped_out'}): out of memory (Spark's exit code 52). Nothing of this write "
            "was committed") in stops.stderr, stops.stderr[-2000:]
    assert "spark.driver.memory" in stops.stderr and "Traceback" not in stops.stderr, stops.stderr[-4000:]
    assert Store.open(_COMMAND["work"] / "stopped").version == 0
    gone = _COMMAND["gone"]  # the JVM gone before a write: building its plan fails, said as the JVM's stop
    assert gone.returncode == 1, gone.stderr[-2000:]
    assert ("strata: Spark's JVM stopped while capture built the tracked plan of write 1 "
            f"({_COMMAND['work'] / 'gone_out'}): out of memory (Spark's exit code 52). Nothing of this write "
            "was committed") in gone.stderr, gone.stderr[-2000:]
    assert "report it" not in gone.stderr and "Traceback" not in gone.stderr, gone.stderr[-4000:]
    assert not (_COMMAND["work"] / "gone_out").exists()
    refused = subprocess.run(
        [sys.executable, "-m", "strata.cli", "--store", str(tmp_path / "store"), "--master", "local[1]",
         "capture", "--", str(tmp_path / "missing.py")], capture_output=True, text=True, env=_ENV, timeout=120)
    assert refused.returncode == 2 and "no such script" in refused.stderr and "Traceback" not in refused.stderr
