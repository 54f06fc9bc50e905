"""A runId's `uuid` format check (`openlineage._is_uuid`, the fast schema check's) takes exactly
the texts that `uuid.UUID` parses back to themselves, in either case."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from store.interop.openlineage import _is_uuid


def reference(value) -> bool:
    try:
        text = str(value)
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def spellings(u: uuid.UUID) -> list[str]:
    return [str(u), str(u).upper(), u.hex, "{" + str(u) + "}", "urn:uuid:" + str(u), " " + str(u), str(u) + "\n",
            str(u)[:8] + "_" + str(u)[9:], str(u).replace("1", "\u0661"), str(u)[:-1], str(u) + "0"]


@given(st.uuids(), st.integers(0, 35), st.sampled_from("0aAfFgG-_ {}\u0661\n"))
def test_is_uuid_takes_what_uuid_parses_back(u, at, char):
    texts = [*spellings(u), str(u)[:at] + char + str(u)[at + 1:], str(u)[:at] + char + str(u)[at:]]
    assert [_is_uuid(t) for t in texts] == [reference(t) for t in texts]


@given(st.text(alphabet="0123456789abcdefABCDEF-_{}: \u0661", max_size=40))
def test_is_uuid_on_any_text_of_its_characters(text):
    assert _is_uuid(text) == reference(text)
