"""A record's attributes normalized (`store.bundle._attrs`): the values as strings and their
types, whatever the value's Python type (the usual ones take a shorter path to the same answer)."""

from __future__ import annotations

import enum
import json

from hypothesis import given
from hypothesis import strategies as st

from store.bundle import _attrs
from store.model import AttrType


def reference(obj: dict) -> tuple[dict, dict, None]:
    """Every value through AttrType.of_value: what `_attrs` answers for any mapping."""
    values, types = {}, {}
    for k, v in obj.items():
        t = AttrType.of_value(v)
        types[str(k)] = t.value if t else (None if v is None else "invalid")
        if v is None:
            values[str(k)] = None
        elif isinstance(v, bool):
            values[str(k)] = "true" if v else "false"
        elif isinstance(v, (int, float, str)):
            values[str(k)] = str(v)
        else:
            values[str(k)] = json.dumps(v)
    return values, types, None


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
