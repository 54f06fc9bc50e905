"""One SparkSession for the whole suite (local[2], few shuffle partitions, UI off).

Code generation is off in this session, whole-stage and per expression (`factoryMode`
NO_CODEGEN: projections, predicates and orderings are interpreted), and so is adaptive query
execution: the suite runs hundreds of queries over a few rows each, where compiling Java and
re-planning at each shuffle cost more than they save (test_semantics.py and the index
maintenance test, on a loaded machine: 103 s against 127 s with only whole-stage code
generation off; NO_CODEGEN alone, in a second pair, 175 s against 204 s). They change how Spark
evaluates a plan, not what it computes. The tests that start Spark in a child process (the
local-cluster run, the REPL in a terminal, the SIGKILL mid-ingest) keep Spark's defaults, code
generation included.

The local-cluster test (test_cluster.py), `strata capture` of a corpus script
(test_capture_corpus.py) and the Spark writer killed mid-ingest (test_storage.py) run in child
processes of their own, and the REPL session in a terminal (test_repl_pty.py, mostly waiting) in a
thread: all are started once the suite's SparkSession is up and checked last, so they overlap the
rest of the suite instead of adding to it (a module's `start_in_background`;
`pytest_collection_finish`, `pytest_collection_modifyitems`).

The suite's JVM lives for all of it, and the store's index builds and queries pin
intermediate results with localCheckpoint: those blocks stay in the driver's memory until
the JVM collects the DataFrames that made them. After each test module, `_release_spark_memory`
drops cached tables and asks both Python and the JVM to collect, so Spark's cleaner frees
what finished modules left (without it, a late test's broadcast join once ran out of the
2 GB heap on CI; the heap is 3 GB now).
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from strata.spark import get_session

    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "3g",
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.adaptive.enabled": "false",
        "spark.local.dir": str(tmp_path_factory.mktemp("spark-local")),
    }

    session = get_session(master="local[2]", conf=conf)
    session.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("checkpoints")))
    session.range(1).collect()  # the JVM warm before the background parts start
    for start in _BACKGROUND:
        start()
    yield session
    session.stop()


@pytest.fixture(scope="module", autouse=True)
def _release_spark_memory():
    yield
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return
    session.catalog.clearCache()
    gc.collect()
    session.sparkContext._jvm.System.gc()


@pytest.fixture()
def store_path(tmp_path):
    return tmp_path / "store"


@pytest.fixture(scope="session")
def examples_dir():
    return ROOT / "examples"


@pytest.fixture(scope="session")
def movies_catalog(examples_dir):
    """The catalog (gsets and types) of examples/movies.json, without Spark (REPL tests)."""
    import json

    from store.model import Catalog

    doc = json.loads((examples_dir / "movies.json").read_text())
    return Catalog.empty().merge_gsets(doc["gsets"]).merge_types(doc["types"])


@pytest.fixture(scope="session")
def movies_vocab(movies_catalog):
    """The REPL's completion vocabulary over the movies catalog."""
    from iql.parser import keywords
    from strata import repl_commands
    from strata.repl_complete import Vocabulary

    return Vocabulary.of_catalog(movies_catalog, keywords(), repl_commands.command_help())


@pytest.fixture(scope="session")
def movies_store(spark, tmp_path_factory):
    """The Ibis paper's Figure 2 (examples/movies.json), ingested once for the whole suite.

    Read-only: tests that write must make their own store.
    """
    from store import Store

    st = Store.open(tmp_path_factory.mktemp("movies") / "store", spark=spark)
    st.ingest(ROOT / "examples" / "movies.json")
    return st


@pytest.fixture(scope="session")
def ids_df(spark):
    """ids_df('a', 'b') -> a one-column DataFrame of vertex ids (a bound side)."""

    def make(*ids: str):
        return spark.createDataFrame([(i,) for i in ids], "id string")

    return make


def pytest_collection_modifyitems(config, items):
    """Tests with a background part last (the cluster run, the REPL session): it runs until then."""
    items.sort(key=lambda item: hasattr(getattr(item, "module", None), "start_in_background"))


_BACKGROUND: list = []  # start_in_background of the selected modules, run once the session is up


def pytest_collection_finish(session):
    """Note the background parts of the selected tests: the `spark` fixture starts them once the
    suite's JVM is up (started beside its start, four JVMs booting at once slowed the first
    tests by half a minute); a test whose part was not started starts it itself."""
    for item in session.items:
        start = getattr(getattr(item, "module", None), "start_in_background", None)
        if start is not None and start not in _BACKGROUND:
            _BACKGROUND.append(start)
