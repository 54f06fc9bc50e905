"""A triples file ingested column-wise (store/duckdb/triples.py `table_rows`) gives the rows the
record-by-record path gives (`triples_bundle` + `store.duckdb.validate`, which
tests/store/test_ingest_local.py compares with Spark), and takes the column-wise path exactly when
that path finds the file valid.

No Spark: both paths run on the driver. Random files draw their ids from a pool that clashes
with what the store holds in every way validation knows (an existing value, a table with an
ancestor, an element of another granularity, a process element, an explicit vertex), so the
examples mix valid files with each kind of error.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

import store.duckdb.triples as lt
from store import BundleError, Store
from store import schema as S
from store.duckdb.ingest import TxTables

BASE = {
    "format": "strata-bundle/1",
    "gsets": {"data": {"contains": [["Value", "Table"], ["Table", "Schema"]], "granularities": ["D3"]},
              "process": {"granularities": ["P0", "Transformation"]}},
    "elements": [{"id": "S1", "granularity": "Schema"},
                 {"id": "T1", "granularity": "Table", "parents": ["S1"]},
                 {"id": "T2", "granularity": "Table"},
                 {"id": "x0", "granularity": "Value", "parents": ["T1"]},
                 {"id": "o0", "granularity": "Transformation"},
                 {"id": "d3", "granularity": "D3"}, {"id": "p0", "granularity": "P0"}],
    "vertices": [{"id": "vx", "type": "D3", "elements": [{"D3": "d3"}]}],
    "edges": [{"src": "x0", "process": "o0", "dst": "d3"}],
}
VALUES = ["x0", "x1", "x2", "x3", "x4", "d3", "vx", "p0"]
OPS = ["o0", "o1", "o2", "p0", "d3"]
TABLES = ["", "", "T1", "T2", "T3", "S1", "d3", "x1"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    st_ = Store.open(tmp_path_factory.mktemp("columnar") / "store", engine="local")
    st_.ingest(BASE)
    return st_


@st.composite
def triples_files(draw):
    tables = {v: draw(st.sampled_from(TABLES)) for v in VALUES}
    rows = draw(st.lists(st.tuples(st.sampled_from(VALUES), st.sampled_from(VALUES), st.sampled_from(OPS)),
                         min_size=1, max_size=10))
    return [(s, d, o, tables[s], tables[d]) for s, d, o in rows]


def outcome(store: Store, path, columnar: bool) -> tuple:
    """('ok', each core table's staged rows sorted, the catalog) or ('error', message), rolled back."""
    class Rollback(Exception):
        pass

    try:
        with store.transaction("try") as tx:
            counts = lt.ingest_triples(tx, path, columnar=columnar)
            tables = TxTables(tx)
            staged = {}
            for name in S.CORE_TABLES:  # committed and staged rows: the committed ones are the same
                rows = pa.concat_tables([pq.read_table(f) for f in tables.files(name)]).to_pylist()
                staged[name] = sorted(tuple(sorted((k, repr(v)) for k, v in r.items())) for r in rows)
            result = ("ok", staged, tx.catalog.to_json(), counts)
            raise Rollback
    except Rollback:
        return result
    except BundleError as e:
        return ("error", e.message)


@settings(max_examples=examples(30, 80), deadline=None, suppress_health_check=list(HealthCheck))
@given(triples_files())
def test_columnar_rows_equal_the_record_path(base, tmp_path_factory, monkeypatch_rows, rows):
    path = tmp_path_factory.mktemp("t") / "t.csv"
    path.write_text("src,dst,op,src_table,dst_table\n" + "".join(",".join(r) + "\n" for r in rows))
    monkeypatch_rows.clear()
    columnar = outcome(base, path, columnar=True)
    took_columns = bool(monkeypatch_rows) and monkeypatch_rows[-1] is not None
    record = outcome(base, path, columnar=False)
    assert columnar == record
    assert took_columns == (record[0] == "ok"), record


@pytest.fixture(scope="module")
def monkeypatch_rows():
    """What each call of `table_rows` returned (None: it left the file to the record path)."""
    seen: list = []
    real = lt.table_rows

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out)
        return out

    lt.table_rows = spy
    yield seen
    lt.table_rows = real


def test_a_large_file_takes_the_columnar_path_and_reuses_what_the_store_holds(base, tmp_path, monkeypatch_rows):
    n = 20_000
    src = [f"v{i}" for i in range(n)] + ["x0"]
    dst = [f"v{i + 1}" for i in range(n)] + ["w0"]
    pq.write_table(pa.table({"src": src, "dst": dst, "op": ["o0"] * n + ["o9"],
                             "src_table": ["T3"] * n + [""], "dst_table": ["T3"] * n + ["T1"]}),
                   tmp_path / "big.parquet")
    monkeypatch_rows.clear()
    result = outcome(base, tmp_path / "big.parquet", columnar=True)
    assert result[0] == "ok" and monkeypatch_rows[-1] is not None
    staged, counts = result[1], result[3]
    # new: v0..v20000, w0, table T3, op o9; reused: x0, o0 (and T1 as w0's table)
    assert (counts.elements, counts.edges) == (n + 4, n + 1)
    anc = {(dict(r)["id"], dict(r)["ancestor"]): dict(r)["depth"] for r in staged[S.ANCESTORS]}
    assert anc[("'v5'", "'T3'")] == "1"
    assert anc[("'w0'", "'T1'")] == "1" and anc[("'w0'", "'S1'")] == "2"  # T1 is under S1 in the store
    assert anc[("'x0'", "'T1'")] == "1" and ("'x0'", "'T3'") not in anc


def test_a_triples_file_too_big_for_this_memory_is_ingested_with_spark(tmp_path, monkeypatch):
    """`auto` sends a triples file to Spark when its in-process ingest would not fit in the memory
    available; within the limits it stays local, and `--engine local` forces it."""
    import store.engine as engine
    from store.ingest import Planned

    planned = [Planned(str(tmp_path / "t.csv"), True, 1_000_000)]
    st_ = Store.open(tmp_path / "s", engine="auto")
    monkeypatch.setattr(engine, "available_bytes", lambda: 10**12)
    assert st_.ingest_choice(planned).engine.value == "local"
    monkeypatch.setattr(engine, "available_bytes", lambda: 10**8)
    choice = st_.ingest_choice(planned)
    assert choice.engine.value == "spark" and "1,000,000 triples" in choice.reason and "available" in choice.reason
    assert Store.open(tmp_path / "s", engine="local").ingest_choice(planned).engine.value == "local"
