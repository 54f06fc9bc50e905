"""NumPy helpers shared by the DuckDB engine's index (build, update, reads) and capture's driver paths.

`unique` is ``np.unique`` of a 1-D array by sorting. NumPy 2.3 and later (pyproject.toml asks for
1.24 or later; a fresh install gets 2.x) answer ``np.unique`` of a 1-D integer array with a hash
table, which takes seconds where a sort takes a fraction of one on millions of distinct values
(NumPy 2.4.6, 6 million distinct int64 on a 2-core machine: 13-21 s against 0.17 s). The answer is
the same: the distinct values, in ascending order.
"""

from __future__ import annotations

from typing import Any


def unique(values: Any) -> Any:
    """The distinct values of a 1-D NumPy array (or anything ``np.asarray`` takes), ascending:
    ``np.unique(values)`` by sort and compare."""
    import numpy as np  # deferred: importing this module costs nothing

    s = np.sort(np.asarray(values).ravel())
    if len(s) < 2:
        return s
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
