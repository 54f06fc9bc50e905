"""Fixtures and hooks of the whole suite: one SparkSession, the `spark` marker, background parts.

The tests live in folders by area (tests/iql, tests/store, tests/index, tests/capture,
tests/tracing, tests/interop, tests/cli, tests/architecture); the helpers they share are the
package tests/support, importable as `support` because pyproject.toml's pytest `pythonpath`
puts tests/ on sys.path.

`spark` is one SparkSession for the whole suite: local[2], two shuffle partitions, the UI off,
a 3 GB driver heap, the JVM options below, and py4j's class and method lookups made once per
name in this process (tests/support/py4j_lookups.py says why). Code generation is off
(whole-stage, and per expression with `factoryMode` NO_CODEGEN, so projections, predicates and
orderings are interpreted) and so is adaptive query execution: the suite runs hundreds of
queries over a few rows each, where compiling Java and re-planning at each shuffle cost more
than they save. Neither changes what Spark computes. The tests that start Spark in a child
process keep Spark's defaults, code generation included.

Every test that uses the `spark` fixture, directly or through another fixture, gets the `spark`
marker (`pytest_collection_modifyitems`); a test that starts Spark only in a child process
carries the marker itself. `neo4j_server` is the suite's Neo4j server (tests/support/neo4j_server.py),
started on first use and stopped at the end; its users get the `neo4j` marker the same way.
`pytest -m "not spark and not neo4j"` (`make test-fast`) runs the rest, with no JVM.

Some modules have a part that runs in the background, defined by a module-level
`start_in_background()`: the local-cluster run (store/test_cluster.py), `strata capture` of a
corpus script (capture/test_capture_corpus.py), the Spark writer killed mid-ingest
(store/test_storage.py) and the REPL session in a terminal (cli/test_repl_pty.py). The hooks
find them through each selected item's module, not by module name: `pytest_collection_finish`
notes them, the `spark` fixture starts them once the suite's JVM is up (not beside its start,
so that the JVMs do not boot at once), and `pytest_collection_modifyitems` orders the tests of
those modules last, so the background parts overlap the rest of the suite. A test whose part was
not started (its module run without Spark, say) starts it itself.

The suite's JVM lives for all of it, and the store's index builds and queries pin intermediate
results with localCheckpoint: those blocks stay in the driver's memory until the JVM collects
the DataFrames that made them. After each test module, `_release_spark_memory` drops cached
tables and asks both Python and the JVM to collect, so Spark's cleaner frees what finished
modules left.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

# No wall-clock deadline for an example (hypothesis' default is 200 ms): the suite shares two cores
# among three pytest processes and their JVMs, where an example of a few milliseconds can take
# hundreds; what a property test checks is the answer, and benchmarks/ measure the time.
settings.register_profile("strata", deadline=None)
settings.load_profile("strata")

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Every JVM the suite starts, its own and its children's (`strata capture` in a new process, the
# local-cluster run), compiles with C1 only and collects with one thread: the tests run short
# jobs over a few rows, where C2's compiler threads and a parallel collector spend more CPU than
# they save (a quarter of the JVM's CPU time on tests/store/test_semantics.py, at the same wall
# time). With C1 alone the JVM reserves 48 MB for compiled code, not the 240 MB of tiered
# compilation: the suite's JVM, running hundreds of different queries, filled it, and then swept
# it on every compilation and compiled again what it had thrown out (the sweeper thread alone 50
# CPU s of a suite JVM's 430), so the code cache gets the tiered size back.
# `$STRATA_TEST_JVM_OPTIONS` replaces the options (blank: none).
# Every Spark of the suite also allocates its Tungsten memory in pages of 2 MB instead of the
# size Spark derives from the heap (64 MB for the suite's 3 GB on 2 cores): every broadcast hash
# join of a few rows otherwise builds its relation in a 64 MB page, which the driver keeps until
# the broadcast is cleaned, so the heap grew to 1-2 GB of mostly empty pages and the serial
# collector copied and marked them (tests/store/test_semantics.py: 20.6 s of GC pauses, 5.2 s
# with 2 MB pages; 13% less JVM CPU). Page size changes no answer, only how memory is cut up.
# `$STRATA_SPARK_CONF` carries both to every Spark of the suite, its own session and the child
# processes' (docs/cli.md); Strata keeps its logging options in front.
_JVM = os.environ.get("STRATA_TEST_JVM_OPTIONS",
                      "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC").strip()
_CONF = ["spark.buffer.pageSize=2m"]
if _JVM:
    _CONF += [f"spark.driver.extraJavaOptions={_JVM}", f"spark.executor.extraJavaOptions={_JVM}"]
os.environ["STRATA_SPARK_CONF"] = ";".join(p for p in (os.environ.get("STRATA_SPARK_CONF", ""), *_CONF) if p.strip())


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from support.py4j_lookups import remember_lookups

    from strata.spark import get_session

    remember_lookups()

    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "3g",
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.adaptive.enabled": "false",
        # no Python call site recorded in the JVM for every Column built (PySpark's DataFrame
        # query context: several py4j round trips and a stack walk each)
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        "spark.local.dir": str(tmp_path_factory.mktemp("spark-local")),
    }

    session = get_session(master="local[2]", conf=conf)
    session.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("checkpoints")))
    session.range(1).collect()  # the JVM warm before the background parts start
    for start in _BACKGROUND:
        start()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory):
    """A Neo4j Community 5.26 server for the whole session, on a loopback Bolt port, user neo4j
    with a random password (built by `make neo4j`, or here on first use). Where it cannot be
    built (no Maven, no Maven Central) its users skip with the reason, in one line; with
    $STRATA_TEST_NEO4J=required (.ci/run sets it) they fail instead."""
    import secrets

    from support.neo4j_server import Server, Unavailable, ensure_built

    try:
        ensure_built()
        # a letter first: neo4j-admin reads a password that starts with "-" as an option
        password = "p" + secrets.token_urlsafe(12)
        server = Server.start(tmp_path_factory.mktemp("neo4j") / "home", password)
    except Unavailable as e:
        if os.environ.get("STRATA_TEST_NEO4J") == "required":
            pytest.fail(f"Neo4j test server: {e}", pytrace=False)
        pytest.skip(f"Neo4j test server: {e}")
    yield server
    server.stop()


@pytest.fixture(scope="module", autouse=True)
def _release_spark_memory():
    yield
    if "pyspark.sql" not in sys.modules:  # nothing imported Spark: no session to clean up
        return
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
def installed_wheel(tmp_path_factory):
    """(wheel, folder): Strata built as a wheel and installed into a folder of its own (no
    dependencies), as a user's `pip install` lays it out; built once per session."""
    import subprocess

    tmp = tmp_path_factory.mktemp("wheel")
    # With the build requirements in the venv (the dev extra has them) pip builds with those;
    # otherwise in an isolated environment, with setuptools and wheel fetched from the index.
    isolation = ["--no-build-isolation"] if _has_build_requirements() else []
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", *isolation, "-q", "-w", str(tmp / "dist")],
        capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp / "dist").glob("strata_prov-*.whl")
    target = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    return wheel, target


def _has_build_requirements() -> bool:
    """pyproject.toml's [build-system] requires (setuptools>=77, wheel) are installed here."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("wheel")
        return int(version("setuptools").split(".")[0]) >= 77
    except PackageNotFoundError:
        return False


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

    from store.spark.frames import local_frame  # deferred: pyspark, once the session is up

    def make(*ids: str):
        return local_frame(spark, [(i,) for i in ids], "id string")

    return make


def _uses(item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())  # the closure: fixtures of fixtures too


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark the tests that use Spark or Neo4j; skip the `deep` ones outside `make test-deep`
    (tests/support/depth.py); put the users of the installed wheel in one pytest-xdist group;
    order the tests of modules with a background part last."""
    from support.depth import DEEP, SKIP_REASON

    for item in items:
        if not DEEP and item.get_closest_marker("deep") is not None:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))
        if _uses(item, "installed_wheel"):  # one pytest-xdist worker builds the wheel (--dist loadgroup)
            item.add_marker(pytest.mark.xdist_group("installed_wheel"))
        for fixture, marker in (("spark", pytest.mark.spark), ("neo4j_server", pytest.mark.neo4j)):
            if _uses(item, fixture) and item.get_closest_marker(marker.name) is None:
                item.add_marker(marker)
    items.sort(key=lambda item: hasattr(getattr(item, "module", None), "start_in_background"))


_BACKGROUND: list = []  # start_in_background of the selected modules, run once the session is up


def pytest_collection_finish(session):
    """Note the background parts of the selected tests' modules; the `spark` fixture starts them
    once the suite's JVM is up, so that their JVMs do not boot beside it."""
    for item in session.items:
        start = getattr(getattr(item, "module", None), "start_in_background", None)
        if start is not None and start not in _BACKGROUND:
            _BACKGROUND.append(start)
