"""Strata's JVM classes (Java sources next to this file): two Spark data sources with one
addition each, and one aggregate function.

* ``io.strata.capture.OffsetJsonFileFormat``: Spark's JSON reader plus each record's line offset.
  It gives JSON input items ids that do not depend on row positions, so a filter after
  ``tracker.read.json`` is still pushed into the JSON parser (docs/capture.md, "Ids").
* ``io.strata.capture.SplitParquetFileFormat``: Spark's Parquet writer that writes a captured
  result's visible columns to the user's output and its hidden columns into the store in one pass,
  with no row leaving the JVM (docs/capture.md, "Commit").
* ``io.strata.capture.CollectMembers``: ``collect_list`` of an aggregation's member ids, kept as
  longs in one buffer per group (docs/capture.md, "What an aggregation collects").

They are compiled against the installed PySpark's jars, one jar per Spark version: in a source
checkout into ``build/jvm/`` (``make`` does it: ``python -m capture.jvm``), in an installed package
(the Java sources ship in the wheel) into the user's cache, ``$STRATA_JVM_CACHE`` or
``$XDG_CACHE_HOME/strata/jvm`` (``~/.cache/strata/jvm``), the first time Strata starts Spark
(:func:`ensure_jar`, a few seconds, said on stderr). :func:`strata.spark.get_session` puts that jar
on the classpath of the Spark it starts. Without the jar (no JDK's ``javac``: said on stderr once,
or a SparkSession started elsewhere) JSON items get positional ids, as CSV items and tracked
DataFrames do, the hidden columns cross to Python through Arrow (capture/storing/tee.py), and
aggregations collect their members with Spark's ``collect_list``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CLASS = "io.strata.capture.OffsetJsonFileFormat"
SPLIT = "io.strata.capture.SplitParquetFileFormat"
COLLECT = "io.strata.capture.CollectMembers"
OFFSET = "__strata_offset"  # the reader's extra column (OffsetJsonFileFormat.OFFSET)
# SplitParquetFileFormat's write options: the store folder of the hidden columns, their row groups' limits
SPLIT_FOLDER = "strata.hidden.folder"
SPLIT_ROWS = "strata.hidden.rowGroupRows"
SPLIT_BYTES = "strata.hidden.rowGroupBytes"
SOURCES = tuple(sorted((Path(__file__).resolve().parent / "io" / "strata" / "capture").glob("*.java")))
_CHECKOUT = Path(__file__).resolve().parents[2]  # the source tree's root, when run from one
_warned = False


def build_dir() -> Path:
    """``build/jvm`` of a source checkout; else the user's cache (module docstring)."""
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "capture" / "jvm").is_dir():
        return _CHECKOUT / "build" / "jvm"
    given = os.environ.get("STRATA_JVM_CACHE")
    if given:
        return Path(given)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "strata" / "jvm"


def _spark_version() -> str:
    import pyspark  # deferred: only this path needs pyspark

    return pyspark.__version__


def jar_path() -> Path:
    """Where the jar for the installed PySpark lives (whether or not it was built)."""
    return build_dir() / f"strata-capture-spark{_spark_version()}.jar"


def built_jar() -> str | None:
    """The jar for the installed PySpark, if it is built and newer than its sources."""
    jar = jar_path()
    if jar.exists() and all(jar.stat().st_mtime >= s.stat().st_mtime for s in SOURCES):
        return str(jar)
    return None


def build() -> Path:
    """Compile the classes against the installed PySpark's jars into :func:`jar_path`."""
    import pyspark  # deferred: only this path needs pyspark

    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if not javac or not jar_tool:
        raise RuntimeError("javac and jar (a JDK 17+) are needed to build Strata's JVM classes")
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    out = jar_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not SOURCES:
        raise RuntimeError(f"the Java sources are missing from {Path(__file__).parent}")
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run([javac, "-nowarn", "--release", "17", "-d", classes, "-cp", jars, *map(str, SOURCES)],
                       check=True, capture_output=True, text=True)
        fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=out.parent)  # one per process: builds may race
        os.close(fd)
        subprocess.run([jar_tool, "cf", tmp, "-C", classes, "."], check=True)
        os.replace(tmp, out)  # a half-written jar is never found
    return out


def ensure_jar() -> str | None:
    """The jar for the installed PySpark, built first if it is missing or older than its sources;
    None (said once on stderr) when it cannot be built."""
    global _warned
    jar = built_jar()
    if jar or _warned:
        return jar
    print(f"strata: building Strata's JVM classes for Spark {_spark_version()} into {build_dir()} "
          "(once; a few seconds)", file=sys.stderr)
    try:
        return str(build())
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        _warned = True
        detail = (getattr(e, "stderr", None) or str(e)).strip().splitlines()
        print(f"strata: note: Strata's JVM classes are not available ({detail[-1] if detail else e}); "
              "JSON inputs get positional ids (file#row, not file:line) and captured results cross "
              "to Python to be stored. Install a JDK 17+ (javac) to have them.", file=sys.stderr)
        return None


def available(spark, name: str = CLASS) -> bool:
    """Whether ``spark``'s JVM can load class ``name`` (checked once per SparkContext)."""
    sc = spark.sparkContext
    if not hasattr(sc, "_strata_jvm_classes"):
        sc._strata_jvm_classes = {}
    known = sc._strata_jvm_classes.get(name)
    if known is None:
        from py4j.protocol import Py4JError  # deferred: only this path needs py4j

        try:
            loader = getattr(sc._jvm, "org.apache.spark.util.Utils").getContextOrSparkClassLoader()
            getattr(sc._jvm, "java.lang.Class").forName(name, False, loader)
            known = True
        except Py4JError:
            known = False
        sc._strata_jvm_classes[name] = known
    return known


def main() -> int:
    if built_jar():
        print(f"up to date: {jar_path()}")
        return 0
    try:
        print(f"built {build()}")
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"note: Strata's JVM classes were not built ({e}); JSON inputs get positional ids and "
              "captured results cross to Python to be stored",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
