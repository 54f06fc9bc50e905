"""Point reads of bucketed index files (store/duckdb/index_reads.py), with no Spark: short membership
lists are constants, long ones a semi-join; both must return exactly the matching rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from store.index.files import IN_LIST, read_buckets, read_sorted

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
@given(order=st.permutations(KEYS + ["missing"]), n=st.sampled_from([0, 1, 7, IN_LIST, IN_LIST + 1, 150, 301]),
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


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.sampled_from(["s1", "s2", "s3", "s10", "t"]), max_size=40), data=st.data())
def test_rows_of_each_set_are_the_same_whether_grouped_by_runs_or_by_codes(values, data):
    """A held component groups its triples by set: by runs when the file is in set order, by
    dictionary codes otherwise; both must give each set exactly its rows."""
    from store.duckdb.index_reads import _encode, _gather, _groups, _sorted_runs

    ordered = pa.array(sorted(values), pa.string())
    runs = _sorted_runs(ordered)
    assert runs is not None
    shuffled = pa.array(data.draw(st.permutations(values)), pa.string())
    dictionary, codes = _encode(shuffled)
    assert _sorted_runs(shuffled) is None or shuffled.to_pylist() == sorted(values)
    by_codes = (dictionary, _groups(codes, len(dictionary)))
    for column, (sets, groups) in ((ordered, runs), (shuffled, by_codes)):
        names = sets.to_pylist()
        for wanted in ({"s1"}, {"s2", "t"}, {"s10", "missing"}, set(values)):
            codes_of = [i for i, name in enumerate(names) if name in wanted]
            import numpy as np

            rows = _gather(groups, np.array(codes_of, np.int64))
            assert sorted(rows.tolist()) == [i for i, v in enumerate(column.to_pylist()) if v in wanted]


@st.composite
def sorted_files(draw):
    """A bucket's files sorted by (ccid, key), small row groups, some key sets empty or shared."""
    rows = draw(st.lists(st.tuples(st.sampled_from(["c1", "c2", "c3"]), st.sampled_from(KEYS[:40])),
                         min_size=0, max_size=120))
    return sorted(rows), draw(st.sampled_from([1, 3, 8, 1000])), draw(st.integers(1, 2))


@settings(max_examples=60, deadline=None)
@given(data=sorted_files(), ccid=st.sampled_from(["c1", "c2", "c3", "c0"]),
       wanted=st.lists(st.sampled_from(KEYS[:45]), max_size=12))
def test_sorted_reads_skip_row_groups_but_no_matching_row(tmp_path_factory, data, ccid, wanted):
    """`read_sorted` picks row groups by their statistics; it returns exactly the rows a full scan
    filtered by (ccid, key in wanted) returns, in file order, over one or two files."""
    rows, group, files = data
    folder = tmp_path_factory.mktemp("sorted") / "table"
    part = folder / "bucket=0"
    part.mkdir(parents=True)
    half = len(rows) // 2 if files == 2 else len(rows)
    for i, chunk in enumerate([rows[:half], rows[half:]][:files]):
        table = pa.table({"ccid": pa.array([c for c, _ in chunk], pa.string()),
                          "key": pa.array([k for _, k in chunk], pa.string()),
                          "v": pa.array(range(len(chunk)), pa.int64())})
        pq.write_table(table, part / f"part-{i}.parquet", row_group_size=group)
    got = read_sorted(str(folder), 0, "ccid", ccid, "key", wanted, ("key", "v"))
    want = []
    for chunk in [rows[:half], rows[half:]][:files]:
        want += [(k, v) for v, (c, k) in enumerate(chunk) if c == ccid and k in set(wanted)]
    assert list(zip(got.column("key").to_pylist(), got.column("v").to_pylist(), strict=True)) == want
