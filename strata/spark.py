"""The application's SparkSession: the store's defaults (store/spark/session.py) plus capture's JVM classes.

The CLI, the REPL and the benchmarks start Spark here, so the session they start has capture's
jar (capture/jvm, built on first use) on `spark.jars`: JSON item ids that keep filter pushdown, and the
one-pass writer of a captured result's hidden columns (docs/capture.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from capture.jvm import ensure_jar
from store.spark import session


def capture_jars() -> tuple[str, ...]:
    """Capture's jar for the installed PySpark, built on first use (none when it cannot be)."""
    jar = ensure_jar()
    return (jar,) if jar else ()


def get_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                quiet: bool = False):
    """`store.spark.session.get_session` with capture's jar on the classpath of a session it starts."""
    return session.get_session(master, conf, quiet=quiet, jars=capture_jars())
