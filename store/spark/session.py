"""The embedded default SparkSession, and how users point Strata at a cluster instead.

Resolution order for the master: explicit argument, `$STRATA_SPARK_MASTER`, `local[*]`.
`--conf k=v` pairs (and `$STRATA_SPARK_CONF`, `;`-separated) are applied last, so they win.
Extra jars (the application adds capture's JVM classes, see strata/spark.py) are appended to
any `spark.jars` given. An existing SparkSession passed to `Store.open(spark=...)` is used as it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from store.arrow import restore_pandas
from store.errors import UserError

DEFAULT_MASTER = "local[*]"

# Laptop-friendly defaults; every one can be overridden with --conf.
_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
}

# Spark's own logging: errors only (shipped as package data next to this module).
LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
_JAVA_OPTS = f"-Dlog4j2.configurationFile=file:{LOG4J} -Dlog4j.configurationFile=file:{LOG4J}"


def parse_conf(pairs: Sequence[str]) -> dict[str, str]:
    """Parse `KEY=VALUE` strings; a pair without `=` is a user error."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(
                f"--conf expects KEY=VALUE, got {pair!r}",
                hint="for example --conf spark.driver.memory=4g",
            )
        conf[key.strip()] = value
    return conf


def _cores() -> int:
    return max(1, os.cpu_count() or 1)


def user_master(master: str | None = None) -> str | None:
    """The master the user asked for: `--master`, else `$STRATA_SPARK_MASTER`; None if neither."""
    return master or os.environ.get("STRATA_SPARK_MASTER") or None


def user_conf(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings the user gave Strata, in the order they win: `$STRATA_DRIVER_MEMORY`, then
    `$STRATA_SPARK_CONF`, then `--conf` (`conf`)."""
    out: dict[str, str] = {}
    memory = os.environ.get("STRATA_DRIVER_MEMORY")
    if memory:
        out["spark.driver.memory"] = memory
    env_conf = os.environ.get("STRATA_SPARK_CONF", "")
    if env_conf.strip():
        out.update(parse_conf([p for p in env_conf.split(";") if p.strip()]))
    if conf:
        out.update(conf)
    return out


def session_conf(master: str | None = None, conf: Mapping[str, str] | None = None,
                 jars: Sequence[str] = (), class_archive: str | None = None) -> dict[str, str]:
    """The full configuration Strata would start Spark with (pure; used by tests and `--debug`).

    class_archive: a class-data archive of Spark's classes (strata/classdata.py) the driver JVM
    maps instead of loading those classes from the jars; an archive it cannot use (another JDK,
    other jars) is ignored in silence. Not used when the user's driver options deal with class
    data sharing themselves (`-Xshare`, `SharedArchiveFile`, `ArchiveClassesAtExit`)."""
    resolved = user_master(master) or DEFAULT_MASTER
    out = dict(_DEFAULTS)
    out["spark.master"] = resolved
    out["spark.driver.extraJavaOptions"] = _JAVA_OPTS
    out["spark.executor.extraJavaOptions"] = _JAVA_OPTS
    # Shuffle partitions scaled to the cores of the machine: a laptop has few, so the default
    # 200 would spend most of the time scheduling empty tasks.
    out["spark.sql.shuffle.partitions"] = str(max(2, 2 * _cores()))
    out.update(user_conf(conf))
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        if "-Dlog4j2.configurationFile=" not in out[key]:  # JVM options given: Strata's logging stays
            out[key] = f"{_JAVA_OPTS} {out[key]}"
    out["spark.driver.extraJavaOptions"] = with_class_archive(out["spark.driver.extraJavaOptions"], class_archive)
    if jars:
        given = [j for j in out.get("spark.jars", "").split(",") if j.strip()]
        out["spark.jars"] = ",".join(given + [j for j in jars if j not in given])
    return out


def with_class_archive(driver_options: str, class_archive: str | None) -> str:
    """Driver JVM options that map ``class_archive`` (strata/classdata.py) in front of
    ``driver_options``; unchanged without an archive or when the options deal with class data
    sharing themselves (`-Xshare`, `SharedArchiveFile`, `ArchiveClassesAtExit`). The archive's
    own log lines stay off: an archive the JVM cannot use is ignored in silence."""
    if not class_archive or any(f in driver_options for f in ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")):
        return driver_options
    return f"-XX:SharedArchiveFile={class_archive} -Xlog:cds=off -Xlog:cds+dynamic=off {driver_options}".strip()


def get_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                quiet: bool = False, jars: Sequence[str] = (), class_archive: str | None = None):
    """Return the active SparkSession, or start one with Strata's defaults.

    jars: extra jars for `spark.jars` of a session this starts; class_archive: the class-data
    archive its driver maps (`session_conf`). quiet=True (the CLI and REPL)
    sends the JVM's own start-up chatter to /dev/null; errors still reach Python as exceptions.
    """
    from pyspark.sql import SparkSession  # deferred: only this path needs pyspark

    restore_pandas()  # Spark's Arrow conversions hand pyarrow pandas objects (store/arrow.py)

    # Python workers must run the same interpreter (and so see the same packages) as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    settings = session_conf(master, conf, jars, class_archive)
    if settings["spark.master"].startswith(("local", "local-cluster")):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName("strata")
    for key, value in settings.items():
        builder = builder.config(key, value)
    if quiet:
        with _stderr_to_devnull():
            spark = builder.getOrCreate()
    else:
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def graphframes_available(spark) -> bool:
    """True when the GraphFrames JVM package is on the classpath (e.g. via spark.jars.packages)."""
    try:
        spark._jvm.org.graphframes.GraphFrame  # noqa: B018 - py4j lookup raises if absent
        cls = spark._jvm.java.lang.Class.forName("org.graphframes.GraphFrame")
        return cls is not None
    except Exception:  # noqa: BLE001 - py4j raises a bare Py4JJavaError/Py4JError here
        return False


class _stderr_to_devnull:
    """Point fd 2 at /dev/null while the JVM starts (it inherits it; Python's is restored)."""

    def __enter__(self) -> None:
        sys.stderr.flush()
        self._saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc: object) -> None:
        os.dup2(self._saved, 2)
        os.close(self._saved)
