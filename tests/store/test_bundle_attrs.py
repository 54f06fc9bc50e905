"""A record's attributes normalized (`store.bundle._attrs`): the values as strings and their
types, whatever the value's Python type (the usual ones take a shorter path to the same answer)."""

from __future__ import annotations

import enum

from hypothesis import given
from hypothesis import strategies as st

from store.bundle import _attr, _attrs


def reference(obj: dict) -> tuple[dict, dict, None]:
    """Every value through `_attr` (AttrType.of_value): what `_attrs` answers for any mapping."""
    pairs = {str(k): _attr(v) for k, v in obj.items()}
    return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}, None


class Kind(str, enum.Enum):  # a str subclass: of_value's isinstance answers for it
    A = "a"


class Count(int):
    pass


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                    st.just(Kind.A), st.integers().map(Count))
values = st.one_of(scalars, st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(),
                                                                                  max_size=2))
keys = st.one_of(st.text(max_size=4), st.just(Kind.A))


@given(st.dictionaries(keys, values, max_size=6))
def test_attrs_are_those_of_every_value_through_attr_type(obj):
    got, want = _attrs(obj), reference(obj)
    assert got == want
    assert [list(d) for d in got[:2]] == [list(d) for d in want[:2]]  # the same keys, in the same order
