# Strata developer commands. Everything installs into ./.venv; nothing is needed by hand but
# Python >= 3.10 and Java 17+ (PySpark 4 runs on the JVM; a JDK's javac builds the JSON offset reader),
# and Maven for the Neo4j server of the export tests (without it those tests skip).
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

# Python keeps the bytecode it compiles (in __pycache__/ beside each module: .venv/ and the
# checkout's, which git ignores) even where PYTHONDONTWRITEBYTECODE is set (some CI images set it).
# uv, unlike pip, installs packages without their bytecode, and the suite starts hundreds of Python
# processes (pytest's, the CLI's, Spark's Python workers, the jobs the tests run), each importing
# pyspark, pandas, pyarrow, ...: with the variable set, every one of them would compile every
# module it imports from source, and pytest would rewrite every test module again (a quarter of
# the CPU of the tests that need no JVM). Unset, the first process to import a module writes its
# bytecode and the others read it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help venv jvm classdata neo4j java-check test test-deep test-fast test-tpc tpc-data demo bench style clean ui

help:
	@echo "make demo       create .venv, install Strata, run the demo on embedded Spark"
	@echo "make test       create .venv, install dev dependencies, run the whole suite"
	@echo "make test-fast  the tests that need no JVM (pytest -m 'not spark and not neo4j', over every core)"
	@echo "make test-deep  make test with the deep tier: more property examples, the tests marked deep"
	@echo "make test-tpc   all 22 TPC-H and 99 TPC-DS queries at sf 0.01 under capture, each checked by replay"
	@echo "make neo4j      fetch the suite's Neo4j server with Maven into build/jvm/neo4j (make test does)"
	@echo "make classdata  a class-data archive of Spark's classes: Spark starts in about half the time"
	@echo "make bench      list the benchmark commands (slow runs; see benchmarks/RESULTS.md)"
	@echo "make style      ruff check (also run by make test)"
	@echo "make ui         rebuild the web UI's assets (ui/ -> strata/serve/static/; needs Node and npm)"

java-check:
	@command -v java >/dev/null 2>&1 || { \
	  echo "error: Java not found. PySpark 4 needs Java 17 or newer." >&2; \
	  echo "  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless" >&2; \
	  echo "  macOS:         brew install openjdk@17" >&2; exit 2; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	  if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	    echo "error: Java $$v found, but PySpark 4 needs Java 17 or newer (install openjdk-17)." >&2; exit 2; fi

$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "error: Python >= 3.10 is needed")'
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@# uv resolves, downloads and installs in parallel (about half pip's time here); pip if uv fails.
	@# PySpark is an sdist, and uv's cache keeps each install's build of it (~1 GB) beside the
	@# older ones: `uv cache prune` then drops those it can no longer reach (seconds; a machine
	@# that installs many clones otherwise fills its disk).
	$(BIN)/python -m pip install -q uv && $(BIN)/python -m uv pip install -q --python $(BIN)/python -e '.[dev]' \
	  && { $(BIN)/python -m uv cache prune -q 2>/dev/null || true; } \
	  || { $(BIN)/python -m pip install -q --upgrade pip && $(BIN)/python -m pip install -q -e '.[dev]'; }
	touch $(STAMP)

venv: $(STAMP)

# Strata's JSON offset reader (capture/jvm), compiled against the installed PySpark with javac;
# without a JDK it prints a note and JSON inputs get positional ids (docs/capture.md, "Ids").
jvm: $(STAMP)
	@$(BIN)/python -m capture.jvm

# A class-data archive of the classes Spark loads, so the Spark that strata starts starts in about
# half the time (strata/classdata.py, docs/cli.md "A faster Spark start"): one Spark run, ~40 s.
classdata: $(STAMP)
	@$(BIN)/python -m strata.classdata

# The Neo4j server the live export tests run against (tests/neo4j/pom.xml: Neo4j Community 5.26,
# fetched with Maven into build/jvm/neo4j/ once). Without Maven or Maven Central it prints a
# one-line note and those tests skip (docs/neo4j.md, "The test server").
neo4j: $(STAMP)
	@$(BIN)/python tests/support/neo4j_server.py

# TPC-H and TPC-DS data at scale factor 0.01 and the queries in Spark SQL, into build/tpc/
# (benchmarks/tpc/run.py --prepare: DuckDB's TPC extensions in build/tpc-venv, made with uv or pip
# on first use), for tests/capture/test_tpc.py and make test-tpc.
tpc-data: $(STAMP)
	@$(BIN)/python benchmarks/tpc/run.py --suite tpch --prepare --work build/tpc
	@$(BIN)/python benchmarks/tpc/run.py --suite tpcds --prepare --work build/tpc

# Every TPC-H and TPC-DS query at sf 0.01, plainly and under strata capture (processes of 11
# queries; one that fails there runs again alone), results compared, 3 result items of each
# checked by replay; fails unless all are captured with the plain run's result and no check fails
# (benchmarks/RESULTS.md has the last run).
test-tpc: java-check jvm tpc-data
	$(BIN)/python benchmarks/tpc/run.py --suite tpch --batch 11 --check 3 --work build/tpc
	$(BIN)/python benchmarks/tpc/run.py --suite tpcds --batch 11 --check 3 --work build/tpc

# The suite as three pytest processes side by side: the tests that need a JVM (a SparkSession of
# their own each, their child processes, Neo4j) in two, split by path (capture/ and tracing/; the
# rest, IQL's Table 1 runs and its differential test on Spark included: the two then end within
# half a minute of each other), and the tests that need none (make test-fast's) at a lower CPU
# priority, in two pytest-xdist workers (what is left of them when the JVM processes end then
# runs on both cores). A JVM process spends much of its time waiting on Py4J and its child JVMs, so two of
# them use the two cores that one leaves half idle. The tests that need no JVM start first, with
# the class-data archive of Spark's classes (make classdata) built beside them: the Spark JVMs the
# tests start from then on (some 25 `strata capture` and `strata` children) start in about two
# thirds of the CPU. Once capture's jar is built, the second JVM process starts as soon as the
# Neo4j server and the OpenLineage jar are fetched (Maven), and the first once the TPC data are
# made, the two preparations side by side.
# Each report follows the one before; any failing fails the target (exit 5, "no tests", is
# allowed where PYTEST_ARGS deselect a whole part).
JVM_A = tests/capture tests/tracing
test: java-check $(STAMP) style
	@b=$$(mktemp); rest=$$(mktemp); \
	  JAVA_HOME=/nonexistent nice -n 10 $(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup -m "not spark and not neo4j" \
	    $(PYTEST_ARGS) > $$rest 2>&1 & rpid=$$!; \
	  $(BIN)/python -m strata.classdata > /dev/null 2>&1 & cpid=$$!; \
	  $(MAKE) -s jvm || { wait $$rpid $$cpid; cat $$rest; rm -f $$b $$rest; exit 2; }; \
	  { $(MAKE) -s neo4j ol-jar-or-note && $(BIN)/python -m pytest -q -p no:cacheprovider -m "spark or neo4j" \
	    $(addprefix --ignore=,$(JVM_A)) $(PYTEST_ARGS); } > $$b 2>&1 & bpid=$$!; \
	  $(MAKE) -s tpc-data || { wait $$rpid $$cpid $$bpid; cat $$b $$rest; rm -f $$b $$rest; exit 2; }; \
	  $(BIN)/python -m pytest -q -m "spark or neo4j" $(JVM_A) $(PYTEST_ARGS); a=$$?; \
	  wait $$bpid; bb=$$?; wait $$rpid; other=$$?; wait $$cpid; \
	  echo "== the other tests that need a JVM (pytest -m 'spark or neo4j', not $(JVM_A)) =="; cat $$b; \
	  echo "== the tests that need no JVM (pytest -m 'not spark and not neo4j') =="; cat $$rest; rm -f $$b $$rest; \
	  ok=0; for rc in $$a $$bb $$other; do [ $$rc -eq 0 -o $$rc -eq 5 ] || ok=1; done; \
	  [ $$ok -eq 0 ] && [ $$a -eq 0 -o $$bb -eq 0 -o $$other -eq 0 ]

# The suite with its deep tier (tests/support/depth.py): the property tests' deep example counts and
# the tests marked `deep`, which make test skips (each has a test in make test over the same code
# path).
test-deep:
	STRATA_TEST_DEEP=1 $(MAKE) test

# Everything that needs no JVM (tests/conftest.py marks the rest `spark` or `neo4j`), spread over
# the machine's cores (pytest-xdist; at most 4 processes). JAVA_HOME points nowhere, so a test
# that starts a JVM without a marker fails at once instead of running slowly.
test-fast: $(STAMP)
	JAVA_HOME=/nonexistent $(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadgroup -m "not spark and not neo4j" $(PYTEST_ARGS)

# The web UI's script (docs/ui.md): ui/src/main.js bundled by esbuild, with the versions
# ui/package-lock.json pins, into strata/serve/static/app.js, which is committed beside the page
# and stylesheet (a pip install needs no Node).
ui:
	cd ui && npm ci --no-audit --no-fund && npm run build

demo: java-check jvm
	$(BIN)/strata --store $(CURDIR)/.strata-demo demo

bench: java-check jvm neo4j
	@echo "The commands of benchmarks/RESULTS.md, section by section; long runs, each printing ratios"
	@echo "measured side by side. Data and stores go to benchmarks/out/ (git ignores it)."
	@echo "  $(BIN)/python benchmarks/bench_lineage.py --scale 1.0 --rq-limit 2 --work benchmarks/out/lineage"
	@echo "  $(BIN)/python benchmarks/bench_lineage.py --scale 1.0 --rq-limit 2 --reuse --work benchmarks/out/lineage"
	@echo "  $(BIN)/python benchmarks/bench_iql.py --tables 1000 --rows 100 --cols 9 --out benchmarks/out/iql"
	@echo "  $(BIN)/python benchmarks/tpc/run.py --suite tpch|tpcds --sf 0.01 --batch 10   (TPC-H / TPC-DS plain and under strata capture)"
	@echo "  $(BIN)/python -c \"from strata.spark import get_session; from store import Store; from store.index import build_index; \\"
	@echo "    build_index(Store.open('benchmarks/out/iql/store', spark=get_session('local[2]')))\""
	@echo "  $(BIN)/python benchmarks/bench_iql.py --skip-ingest --repeat 3 --compare-spark"
	@echo "  $(BIN)/python benchmarks/gen_nested.py --tweets 1000000 --papers 1000000 --out benchmarks/out/nested-1m"
	@echo "  $(BIN)/python benchmarks/bench_capture.py --data benchmarks/out/nested-1m --work benchmarks/out/capture-1m --reps 3"
	@echo "  $(BIN)/python benchmarks/bench_tee.py --data benchmarks/out/nested-1m --only T2,D2,D3,D4 --reps 3"
	@echo "  $(BIN)/python benchmarks/bench_backtrace.py --data benchmarks/out/nested-1m --work benchmarks/out/backtrace-1m --items 100"
	@echo "  $(BIN)/python benchmarks/bench_neo4j.py --nodes 200000 --batch 1000 --batch 10000 --work benchmarks/out/neo4j"
	@echo "  $(BIN)/python benchmarks/bench_serve.py --acks 500 --clients 8 --seconds 10 --runs 100000 --reads 300"
	@echo "  $(BIN)/python benchmarks/bench_ui.py --chain 2000 --fanout 2000 --repeat 5   (needs chromium)"
	@echo "  make openlineage-jar && $(BIN)/python benchmarks/bench_ol_listener.py --reps 2 --work benchmarks/out/ol-listener"

style: $(STAMP)
	$(BIN)/ruff check store iql capture grammar strata tests benchmarks

clean:
	rm -rf $(VENV) .strata-demo .pytest_cache build *.egg-info

# OpenLineage's Spark listener, for benchmarks/bench_ol_listener.py and tests/interop/test_ol_listener.py
# (docs/openlineage.md): the version pinned in benchmarks/jvm/pom.xml, fetched from Maven Central
# into build/jvm/openlineage/ (git ignores build/). MVN_FLAGS: e.g. -s settings.xml for a mirror.
OL_JARS   := build/jvm/openlineage
MVN_FLAGS ?=
OL_STAMP  := $(OL_JARS)/.fetched
.PHONY: openlineage-jar ol-jar-or-note
# make test: the jar if it can be fetched; else tests/interop/test_ol_listener.py skips, saying why.
ol-jar-or-note:
	@$(MAKE) -s openlineage-jar || echo "note: no OpenLineage listener jar; its side-by-side test will skip" >&2
openlineage-jar: $(OL_STAMP)
$(OL_STAMP): benchmarks/jvm/pom.xml
	@command -v mvn >/dev/null 2>&1 || { \
	  echo "error: mvn not found; it fetches the OpenLineage listener jar (Debian: apt-get install maven)." >&2; exit 2; }
	@mvn -q $(MVN_FLAGS) -f benchmarks/jvm/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(OL_JARS) \
	  || { echo "error: could not fetch io.openlineage:openlineage-spark_2.13 (pinned in benchmarks/jvm/pom.xml)" \
	       "from Maven Central: offline? Give a reachable mirror with MVN_FLAGS='-s settings.xml', or copy" \
	       "the jar into $(OL_JARS)/ by hand." >&2; exit 2; }
	@ls $(OL_JARS)/openlineage-spark_2.13-*.jar
	@touch $@
