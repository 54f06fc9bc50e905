"""The application's SparkSession: the store's defaults (store/spark/session.py) plus capture's JVM classes.

The CLI, the REPL and the benchmarks start Spark here, so the session they start has capture's
jar (capture/jvm, built on first use) on `spark.jars`: JSON item ids that keep filter pushdown, and the
one-pass writer of a captured result's hidden columns (docs/capture.md); and, once `make classdata`
built it, a driver that maps the class-data archive of Spark's classes (strata/classdata.py).

A job run by `strata capture` is not tuned: `job_spark` lets the job start its own session as it
would without Strata, with capture's jar added, and `job_session` hands that session to the store.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from capture.jvm import ensure_jar
from store.spark import session
from strata import classdata


def capture_jars() -> tuple[str, ...]:
    """Capture's jar for the installed PySpark, built on first use (none when it cannot be)."""
    jar = ensure_jar()
    return (jar,) if jar else ()


def get_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                quiet: bool = False):
    """`store.spark.session.get_session` with capture's jar on the classpath of a session it starts
    and the class-data archive of Spark's classes, when built, under its driver (strata/classdata.py)."""
    return session.get_session(master, conf, quiet=quiet, jars=capture_jars(), class_archive=classdata.archive())


def job_submit_args(master: str | None, conf: Mapping[str, str], jars: tuple[str, ...],
                    given: str | None, class_archive: str | None = None) -> str:
    """`$PYSPARK_SUBMIT_ARGS` for a job `strata capture` runs: what `spark-submit` would pass for
    the options the user gave Strata (`--master`, `--conf`, `$STRATA_SPARK_MASTER`,
    `$STRATA_SPARK_CONF`, `$STRATA_DRIVER_MEMORY`) and capture's jar, in front of the arguments
    already in `given` (which end with `pyspark-shell`); none of Strata's own tuning. With
    ``class_archive`` (strata/classdata.py) the driver maps it: its option goes in front of the
    driver options the user gave Strata, else of those in spark-defaults.conf; driver options
    in `given` or set by the job's own builder replace it (the job starts as it would without
    Strata, only its classes load faster)."""
    args: list[str] = []
    master = session.user_master(master)
    if master:
        args += ["--master", master]
    user = session.user_conf(conf)
    if class_archive:
        key = "spark.driver.extraJavaOptions"
        driver = user.get(key, _spark_defaults().get(key, ""))
        user[key] = session.with_class_archive(driver, class_archive)
    for key, value in user.items():
        args += ["--conf", f"{key}={value}"]
    if jars:
        args += ["--jars", ",".join(jars)]
    rest = (given or "").strip() or "pyspark-shell"
    return " ".join(shlex.quote(a) for a in args) + (" " if args else "") + rest


def _spark_defaults() -> dict[str, str]:
    """The settings of the spark-defaults.conf that spark-submit reads (`$SPARK_CONF_DIR`, else
    the conf folder of `$SPARK_HOME` or of the installed PySpark); none when there is none."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        home = os.environ.get("SPARK_HOME")
        if not home:
            from pyspark.find_spark_home import _find_spark_home  # deferred: only a captured job needs it

            home = _find_spark_home()
        conf_dir = os.path.join(home, "conf")
    out: dict[str, str] = {}
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:  # java.util.Properties lines: `key value`, `key=value` or `key: value`
                m = re.match(r"\s*([^\s#!=:][^\s=:]*)\s*[=:\s]?\s*(.*?)\s*$", line)
                if m:
                    out[m[1]] = m[2]
    except OSError:
        pass
    return out


@contextmanager
def job_spark(master: str | None, conf: Mapping[str, str]) -> Iterator[None]:
    """Inside this block, the SparkSession a job starts is the one it would start without Strata,
    with capture's jar added: its own builder settings, `spark-defaults.conf`, and the options the
    user gave Strata as `spark-submit` options (`job_submit_args`). A builder that sets
    `spark.jars` itself keeps capture's jar beside its own. `job_session()` is that session for
    Strata's own work (the store's commits)."""
    from pyspark.sql import SparkSession  # deferred: only a captured job needs pyspark

    jars = capture_jars()
    # Python workers run this interpreter, which has capture's dependencies (pyarrow), as the
    # sessions Strata starts do; where the user set them, their choice stands.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    given = os.environ.get("PYSPARK_SUBMIT_ARGS")
    os.environ["PYSPARK_SUBMIT_ARGS"] = job_submit_args(master, conf, jars, given, classdata.archive())
    builder_class = type(SparkSession.builder)
    get_or_create = builder_class.getOrCreate

    def keep_jar(self):
        with self._lock:
            own = [j for j in self._options.get("spark.jars", "").split(",") if j.strip()]
            if own:
                self._options["spark.jars"] = ",".join(own + [j for j in jars if j not in own])
        return get_or_create(self)

    builder_class.getOrCreate = keep_jar
    try:
        yield
    finally:
        builder_class.getOrCreate = get_or_create
        if given is None:
            os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
        else:
            os.environ["PYSPARK_SUBMIT_ARGS"] = given


def job_session():
    """The captured job's SparkSession (the active one), else one started as the job's own
    `SparkSession.builder.getOrCreate()` would start it."""
    from pyspark.sql import SparkSession  # deferred: only a captured job needs pyspark

    return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
