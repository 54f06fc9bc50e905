"""Point reads of bucketed index files (store/index/local.py), with no Spark: short membership
lists are constants, long ones a semi-join; both must return exactly the matching rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from store.index.local import _IN_LIST, read_buckets

KEYS = [f"k{i:03d}" for i in range(300)]


def _folder(tmp_path):
    folder = tmp_path / "table"
    for b in range(2):
        part = folder / f"bucket={b}"
        part.mkdir(parents=True, exist_ok=True)
        keys = KEYS[b::2]
        table = pa.table({"ccid": ["c1" if i % 3 else "c2" for i in range(len(keys))], "key": keys,
                          "v": list(range(len(keys)))})
        pq.write_table(table, part / "part-0.parquet", row_group_size=16)
    return str(folder)


@settings(max_examples=30, deadline=None)
@given(order=st.permutations(KEYS + ["missing"]), n=st.sampled_from([0, 1, 7, _IN_LIST, _IN_LIST + 1, 150, 301]),
       ccid=st.sampled_from(["c1", "c2"]))
def test_membership_lists_of_any_length_read_exactly_the_matching_rows(tmp_path_factory, order, n, ccid):
    wanted = order[:n]
    folder = _folder(tmp_path_factory.mktemp("idx"))
    got = read_buckets(folder, [0, 1], ("key", "v"), [("ccid", ccid), ("key", wanted)])
    rows = sorted(zip(got.column("key").to_pylist(), got.column("v").to_pylist(), strict=True))
    everything = read_buckets(folder, [0, 1], ("key", "v", "ccid"), [])
    want = sorted((k, v) for k, v, c in zip(*(everything.column(n).to_pylist() for n in ("key", "v", "ccid")),
                                            strict=True) if c == ccid and k in set(wanted))
    assert rows == want


def test_missing_buckets_read_nothing(tmp_path):
    assert read_buckets(_folder(tmp_path), [7], ("key",), [("key", "k001")]) is None
