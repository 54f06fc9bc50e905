"""pyarrow without pandas, for processes that answer on the DuckDB engine.

pyarrow imports pandas (0.3-0.7 s) the first time it converts Python values (``pa.array`` of a
list, ``pa.scalar``, ``Table.from_pylist``): it checks whether the values are pandas objects.
A `strata` command answered by the DuckDB engine never hands pyarrow a pandas object, so the
CLI calls `defer_pandas` at start (every command but `capture`, which runs the user's own
program): until `restore_pandas`, importing pandas fails in this process, and pyarrow, finding
none, converts without it. `restore_pandas` runs when a SparkSession starts
(store.spark.session), whose Arrow conversions hand pyarrow pandas objects.

`defer_pandas` does nothing when pandas is already imported. A test starts each command in a
new process and checks that neither pandas nor pyspark was loaded.
"""

from __future__ import annotations

import sys


class _NoPandas:
    """A meta path finder that refuses pandas (a plain class: importlib.abc costs 15 ms of imports)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is deferred in this process (store.arrow.defer_pandas)")
        return None


def _shim():
    try:
        from pyarrow import lib  # deferred: only this path needs pyarrow
    except ImportError:
        return None
    return getattr(lib, "_pandas_api", None)


_BLOCKER = _NoPandas()


def defer_pandas() -> None:
    """Keep pandas out of this process until `restore_pandas`: pyarrow's checks for it (in
    Python and in its C++ conversions) then find none."""
    if "pandas" not in sys.modules and _BLOCKER not in sys.meta_path:
        sys.meta_path.insert(0, _BLOCKER)


def restore_pandas() -> None:
    """Let pandas be imported again, and turn pyarrow's pandas support back on."""
    if _BLOCKER not in sys.meta_path:
        return
    sys.meta_path.remove(_BLOCKER)
    shim = _shim() if "pyarrow" in sys.modules else None
    if shim is not None and not shim.have_pandas:
        try:
            _ = shim.compat  # pyarrow's explicit pandas entry point imports pandas again
        except ImportError:
            pass
