"""store.arrays: `unique`, the distinct values of a 1-D array in ascending order, as np.unique
gives them, and as a sorted set of the values does; `distinct_rows`, a table's distinct rows of
some columns, each once, as a set of row tuples holds them, in the same order every time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from store.arrays import distinct_rows, unique


@given(hnp.arrays(st.sampled_from([np.int64, np.int32, np.int8]), st.integers(0, 300)))
def test_unique_is_the_sorted_distinct_values(values):
    got = unique(values)
    assert got.dtype == values.dtype
    assert got.tolist() == sorted(set(values.tolist()))
    assert np.array_equal(got, np.unique(values))


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", None]), st.integers(-2, 2)), max_size=60),
       st.sampled_from([["k", "s"], ["s", "k", "x"], ["x"]]))
def test_distinct_rows_are_each_row_once_in_the_same_order_every_time(rows, keys):
    table = pa.table({"k": pa.array([r[0] for r in rows], pa.int64()), "s": pa.array([r[1] for r in rows], pa.string()),
                      "x": pa.array([r[2] for r in rows], pa.int64())})
    got = distinct_rows(table, keys)
    assert got.column_names == keys
    tuples = list(zip(*(got.column(k).to_pylist() for k in keys), strict=True))
    want = {tuple(r[table.column_names.index(k)] for k in keys) for r in rows}
    assert len(tuples) == len(want) and set(tuples) == want
    assert distinct_rows(table, keys).equals(got)
