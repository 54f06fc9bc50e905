"""store.arrays.unique: the distinct values of a 1-D array in ascending order, as np.unique
gives them, and as a sorted set of the values does."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from store.arrays import unique


@given(hnp.arrays(st.sampled_from([np.int64, np.int32, np.int8]), st.integers(0, 300)))
def test_unique_is_the_sorted_distinct_values(values):
    got = unique(values)
    assert got.dtype == values.dtype
    assert got.tolist() == sorted(set(values.tolist()))
    assert np.array_equal(got, np.unique(values))
