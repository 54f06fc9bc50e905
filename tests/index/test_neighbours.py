"""Direct neighbours and prefix search of items (store/neighbours.py, the web UI's reads): the
same answers from the index files, from skeleton files, and from DuckDB over the edges with no
index, checked against the triples themselves. A random layered graph split into small sets
(θ = 4), so a consumer often lies in another set than its source. No JVM."""

from __future__ import annotations

import random

import pytest
from support.ui import strata

from store.index import IndexParams
from store.indexing import build_index
from store.neighbours import Neighbours
from store.store import Store


def _no_spark():
    raise AssertionError("these reads must not start Spark")


def layered(seed: int = 3) -> list[tuple[str, str, str]]:
    """Values in 5 layers of 30; each value of layers 1-4 from 1-4 values of the layer before."""
    rng = random.Random(seed)
    out = set()
    for layer in range(1, 5):
        for i in range(30):
            for j in rng.sample(range(30), rng.randint(1, 4)):
                out.add((f"x{layer - 1}_{j:02d}", f"x{layer}_{i:02d}", f"op{layer}_{rng.randint(0, 1)}"))
    return sorted(out)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    work = tmp_path_factory.mktemp("neighbours")
    triples = layered()
    csv = work / "t.csv"
    csv.write_text("src,dst,op\n" + "".join(f"{s},{d},{o}\n" for s, d, o in triples))
    roots = {}
    for name in ("indexed", "plain"):
        roots[name] = str(work / name)
        strata(roots[name], "ingest", "--format", "triples", str(csv))
    build_index(Store.open(roots["indexed"], spark=_no_spark, engine="local"), IndexParams(theta=4, buckets=4))
    return triples, roots


def answers(st, items: list[str]) -> dict:
    """Each item's sources and consumers, read in one batch per direction (and again without
    asking where the sources lie), and its count of consumers."""
    reads = Neighbours(st)
    out = {}
    located = [reads.locate(i) for i in items]
    for forward in (False, True):
        for item, rows in reads.direct(located, forward).items():
            out[(item, forward)] = [t for t, _ in rows]
    lean = {i: [t for t, _ in rows] for i, rows in reads.direct(located, False, where=False).items()}
    assert lean == {i: out[(i, False)] for i in items}
    assert reads.consumer_counts(located) == {i: len(out[(i, True)]) for i in items}
    return out


def test_direct_neighbours_agree_on_every_path(stores, monkeypatch):
    from store.duckdb import index_reads as LI

    triples, roots = stores
    items = sorted({v for t in triples for v in t[:2]})
    want = {}
    for item in items:
        want[(item, False)] = sorted((t for t in triples if t[1] == item), key=lambda t: (t[2], t[0]))
        want[(item, True)] = sorted((t for t in triples if t[0] == item), key=lambda t: (t[2], t[1]))
    plain = Store.open(roots["plain"], spark=_no_spark, engine="local")
    assert not Neighbours(plain).indexed
    assert answers(plain, items) == want
    st = Store.open(roots["indexed"], spark=_no_spark, engine="local")
    assert Neighbours(st).indexed and st.meta("index")["sets"] > 10
    monkeypatch.setenv(LI.CACHE_ENV, "0")
    LI.CACHE.clear()
    assert answers(st, items) == want  # the index files
    monkeypatch.delenv(LI.CACHE_ENV)
    assert LI.write_skeletons(st, threshold=0) > 0
    LI.CACHE.clear()
    assert answers(st, items) == want  # forward from the skeleton files
    LI.CACHE.clear()
    # one batch of items from several sets at once
    reads = Neighbours(st)
    batch = reads.direct([reads.locate(i) for i in items[::7]], True)
    assert {i: [t for t, _ in rows] for i, rows in batch.items()} == {i: want[(i, True)] for i in items[::7]}


def test_prefix_search_counts_and_orders(stores):
    triples, roots = stores
    items = sorted({v for t in triples for v in t[:2]})
    for name in roots:
        reads = Neighbours(Store.open(roots[name], spark=_no_spark, engine="local"))
        for prefix in ("x", "x1_", "x4_2", "x3_07", "nothing"):
            total, found = reads.search(prefix, 5)
            match = [i for i in items if i.startswith(prefix)]
            assert (total, [f.item for f in found]) == (len(match), match[:5]), (name, prefix)
        assert reads.locate("nothing") is None


def test_prefix_rows_count_whole_row_groups_from_the_footer(tmp_path):
    """Row groups wholly inside the prefix are counted, not read, past the first `limit` rows;
    the boundary ones are read. Two bucket files of many small row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from store.index.files import prefix_rows

    ids = sorted(f"k{i}" for i in range(5000))
    for b in (0, 1):
        (tmp_path / f"bucket={b}").mkdir()
        mine = ids[b::2]
        pq.write_table(pa.table({"id": mine, "table": [f"T{len(i)}" for i in mine]}),
                       tmp_path / f"bucket={b}" / "part-0.parquet", row_group_size=97)
    for prefix in ("k", "k1", "k12", "k4999", "k5", "j", "l"):
        match = [i for i in ids if i.startswith(prefix)]
        total, rows = prefix_rows(str(tmp_path), [0, 1], "id", prefix, 7, ("id", "table"))
        assert (total, rows) == (len(match), [(i, f"T{len(i)}") for i in match[:7]]), prefix
