"""Ingest on the driver (store/duckdb/ingest.py) and on Spark give the same store: the same rows in
every core table, the same catalog and recorded schemas, and the same error for the same bad input.

Each differential test ingests one input into two stores, one forced to each engine, and compares.
Random bundles come from tests/support/strategies.py; invalid ones are valid bundles with one to three
rule violations applied (`MUTATIONS`), so several errors compete and the one reported must be
the same. The Spark side costs a few jobs per example: the example counts keep this file within
about a minute on 2 cores (`make test-deep` raises them with the rest of the suite).
"""

from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.strategies import SPARK_EXAMPLES, bundle_pairs, bundles

from store import BundleError, Store
from store import schema as S
from store.errors import UserError

# No shrinking: every step of it would run Spark jobs; the failing example is printed as drawn.
_SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                 phases=[Phase.explicit, Phase.reuse, Phase.generate])


def snapshot(st: Store) -> dict:
    """Every core table's rows (a sorted list: duplicates count), read back with Spark, plus the
    catalog and the schema each table recorded."""
    out = {}
    for name in S.CORE_TABLES:
        rows = []
        for r in st.table(name).collect():
            d = r.asDict()
            if S.ATTRS in d:
                d[S.ATTRS] = None if d[S.ATTRS] is None else sorted(d[S.ATTRS].items())
            rows.append(tuple(d.items()))
        out[name] = sorted(rows, key=repr)
    out["catalog"] = st.catalog.to_json()
    out["schemas"] = {n: json.loads(e.schema) for n, e in st.manifest.tables.items()}
    return out


def pair(tmp_path, spark, name: str = "s") -> tuple[Store, Store]:
    return (Store.open(tmp_path / f"{name}-local", spark=spark, engine="local"),
            Store.open(tmp_path / f"{name}-spark", spark=spark, engine="spark"))


def outcome(st: Store, *sources, **kw):
    """('ok', counts) or ('error', message, hint) of one ingest."""
    try:
        info = st.ingest(*sources, **kw)
    except BundleError as e:
        return ("error", str(e.message), e.hint)
    return ("ok", info.counts)


def same(local: Store, spark_st: Store, *sources, **kw):
    a, b = outcome(local, *sources, **kw), outcome(spark_st, *sources, **kw)
    assert a == b
    assert local.refresh().version == spark_st.refresh().version
    return a


# ---------------------------------------------------------------------------- valid bundles
@settings(max_examples=max(1, SPARK_EXAMPLES // 2), **_SETTINGS)
@given(bundle_pairs())
def test_random_bundles_give_the_same_tables(spark, tmp_path_factory, bp):
    first, second = bp
    local, sp = pair(tmp_path_factory.mktemp("valid"), spark)
    assert same(local, sp, first)[0] == "ok"
    assert same(local, sp, second)[0] == "ok"
    assert local.spark_started is True  # given the session, but no job ran for the local ingests
    assert snapshot(local) == snapshot(sp)


def test_the_movies_bundle_from_every_file_source(spark, tmp_path, examples_dir):
    """A .json document, a .jsonl file and folders of JSONL and of Parquet sections, several sources
    in one commit."""
    from support.bundles import write_folder, write_jsonl

    movies = json.loads((examples_dir / "movies.json").read_text())
    write_jsonl(tmp_path / "m.jsonl", movies)
    more = {"format": "strata-bundle/1",
            "elements": [{"id": f"extra{i}", "granularity": "Row", "parents": ["imdb_table"],
                          "attrs": {"rank": i}} for i in range(3)],
            "vertices": [{"id": "extra_cell", "type": "Cell",
                          "elements": [{"Row": "extra0", "Column": "imdb_lead_actor_col"}]}],
            "edges": [{"src": "extra0", "process": "extract_job_1", "dst": "extra1"}]}
    for kind in ("jsonl", "parquet"):
        write_folder(tmp_path / f"more-{kind}", more | {"gsets": {}, "types": []}, spark, kind)
    local, sp = pair(tmp_path, spark)
    assert same(local, sp, tmp_path / "m.jsonl", tmp_path / "more-parquet")[0] == "ok"
    assert local.version == 1
    expected = snapshot(sp)
    assert snapshot(local) == expected
    other = Store.open(tmp_path / "other", spark=spark, engine="local")
    other.ingest(examples_dir / "movies.json", tmp_path / "more-jsonl")
    assert snapshot(other) == expected


# ---------------------------------------------------------------------------- invalid bundles
BASE = {
    "format": "strata-bundle/1",
    "gsets": {"data": {"granularities": ["D3"]}, "process": {"granularities": ["P0"]}},
    "elements": [{"id": "base_d", "granularity": "D3", "attrs": {"w": 1}},
                 {"id": "base_p", "granularity": "P0"}],
    "edges": [{"src": "base_d", "process": "base_p", "dst": "base_d"}],
}


def _mutate(draw, b: dict, kind: str) -> None:
    E, V, D = b["elements"], b["vertices"], b["edges"]
    i = draw(st.integers(0, len(E) - 1))
    e = E[i]
    if not isinstance(e, dict):  # a record an earlier mutation replaced
        e = E[i] = {"id": f"fresh{i}", "granularity": "D0"}
    if kind == "unknown_granularity":
        e["granularity"] = "Nope"
    elif kind == "unknown_parent":
        e["parents"] = ["ghost", *e.get("parents", [])]
    elif kind == "parent_not_coarser":
        e["parents"] = [*e.get("parents", []), draw(st.sampled_from([e["id"], "base_d", "base_p"]))]
    elif kind == "duplicate":
        E.append(copy.deepcopy(e))
    elif kind == "in_store":
        e["id"] = draw(st.sampled_from(["base_d", "base_p"]))
    elif kind == "missing_id":
        del e["id"]
    elif kind == "bad_record":
        E[i] = draw(st.sampled_from(["text", 7, None]))
    elif kind == "bad_parents":
        e["parents"] = draw(st.sampled_from([5, [1], {"a": "b"}]))
    elif kind == "attr_invalid":
        e["attrs"] = {"n": draw(st.sampled_from([[1], {"x": 1}]))}
    elif kind == "attr_conflict":
        e["attrs"] = {**e.get("attrs", {}), "n": draw(st.sampled_from(["x", 1.5, True]))}
    elif kind == "store_attr_conflict":
        b["elements"].append({"id": "w_elem", "granularity": "D3", "attrs": {"w": "heavy"}})
    elif kind == "edge_unknown":
        if D:
            D[draw(st.integers(0, len(D) - 1))][draw(st.sampled_from(["src", "dst", "process"]))] = "ghost"
    elif kind == "edge_kind":
        if D:
            edge = D[draw(st.integers(0, len(D) - 1))]
            col = draw(st.sampled_from(["src", "dst", "process"]))
            edge[col] = "base_d" if col == "process" else "base_p"
    elif kind == "edge_missing":
        if D:
            del D[draw(st.integers(0, len(D) - 1))][draw(st.sampled_from(["src", "dst", "process"]))]
    elif V:
        v = V[draw(st.integers(0, len(V) - 1))]
        ce = v["elements"][draw(st.integers(0, len(v["elements"]) - 1))]
        if kind == "vertex_same_id":
            v["id"] = e["id"] if isinstance(e, dict) and "id" in e else "d0"
        elif kind == "vertex_duplicate":
            V.append(copy.deepcopy(v))
        elif kind == "unknown_type":
            v["type"] = draw(st.sampled_from(["Nope", "T", "D9", ["D0", "P0"], ["D0", "D0"], ["P0", "Nope"]]))
        elif kind == "ce_unknown_element":
            ce[next(iter(ce))] = "ghost"
        elif kind == "ce_misses":
            ce.pop(next(iter(ce)))
        elif kind == "ce_adds":
            ce[draw(st.sampled_from(["D9", "P0", "D3"]))] = "base_d"
        elif kind == "ce_wrong_granularity":
            ce[next(iter(ce))] = draw(st.sampled_from(["base_d", "base_p", "p0"]))
        elif kind == "attr_type":
            v["attrs"] = {**v.get("attrs", {}), "n": "x"}
        elif kind == "attr_undeclared":
            v["attrs"] = {**v.get("attrs", {}), "zzz": 1}
        elif kind == "vertex_missing_type":
            del v["type"]


MUTATIONS = ["unknown_granularity", "unknown_parent", "parent_not_coarser", "duplicate", "in_store",
             "missing_id", "bad_record", "bad_parents", "attr_invalid", "attr_conflict", "store_attr_conflict",
             "edge_unknown", "edge_kind", "edge_missing", "vertex_same_id", "vertex_duplicate", "unknown_type",
             "ce_unknown_element", "ce_misses", "ce_adds", "ce_wrong_granularity", "attr_type",
             "attr_undeclared", "vertex_missing_type"]


@st.composite
def invalid_bundles(draw):
    b = draw(bundles(max_data_elements=6, max_vertices=4, max_edges=5))
    kinds = draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3))
    for kind in kinds:
        _mutate(draw, b, kind)
    return kinds, b


@pytest.fixture(scope="module")
def base_pair(spark, tmp_path_factory):
    local, sp = pair(tmp_path_factory.mktemp("base"), spark)
    assert same(local, sp, BASE)[0] == "ok"
    return local, sp


class _Rollback(Exception):
    pass


def tried(st: Store, doc, triples: bool = False) -> tuple:
    """The outcome of ingesting `doc` in a transaction that is then rolled back (the store stays as
    it was for the next example): ('ok', the tables as the commit would leave them) or ('error',
    message, hint)."""
    try:
        with st.transaction("try") as tx:
            tx.ingest(doc, triples=triples)
            staged = {n: sorted((tuple(sorted((k, sorted(v.items()) if isinstance(v, dict) else v)
                                              for k, v in r.asDict().items())) for r in tx.table(n).collect()),
                                key=repr) for n in S.CORE_TABLES}
            staged["catalog"] = tx.catalog.to_json()
            raise _Rollback
    except _Rollback:
        return ("ok", staged)
    except BundleError as e:
        return ("error", e.message, e.hint)


@settings(max_examples=max(3, 3 * SPARK_EXAMPLES // 2), **_SETTINGS)
@given(invalid_bundles())
def test_invalid_bundles_give_the_same_error_and_commit_nothing(base_pair, kb):
    _kinds, bad = kb
    local, sp = base_pair
    before = _files(local.root), _files(sp.root)
    assert tried(local, bad) == tried(sp, bad)
    assert (_files(local.root), _files(sp.root)) == before


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _dirs, files in os.walk(root) for f in files}


# One Spark validation costs ~2.6 s; `make test` runs a kind of each check area alone here (the
# hypothesis test above mixes all of them), `make test-deep` every kind (tests/support/depth.py).
_ALONE = {"unknown_granularity", "parent_not_coarser", "missing_id", "attr_conflict", "edge_kind",
          "vertex_duplicate", "ce_misses", "attr_type", "vertex_missing_type"}
_DEEP = pytest.mark.deep


@pytest.mark.parametrize("kind", [k if k in _ALONE else pytest.param(k, marks=_DEEP) for k in MUTATIONS])
def test_every_kind_of_violation_is_reported_the_same(base_pair, kind):
    """Each violation alone, on one fixed bundle (the hypothesis test mixes them)."""
    doc = {"format": "strata-bundle/1",
           "gsets": {"data": {"contains": [["D0", "D1"]], "granularities": ["D2"]},
                     "process": {"granularities": ["P0"]}},
           "types": [{"name": "T0", "granularities": ["D0", "D2"], "attributes": {"n": "int", "s": "string"}}],
           "elements": [{"id": "d1", "granularity": "D1"}, {"id": "d0", "granularity": "D0", "parents": ["d1"],
                                                             "attrs": {"n": 1}},
                        {"id": "d2", "granularity": "D2"}, {"id": "p0", "granularity": "P0"},
                        {"id": "d0b", "granularity": "D0", "attrs": {"n": 3}}],
           "vertices": [{"id": "v0", "type": "T0", "elements": [{"D0": "d0", "D2": "d2"}], "attrs": {"n": 2}}],
           "edges": [{"src": "d0", "process": "p0", "dst": "v0"}]}

    draws = iter([1, 0, 0, 0, 0])

    def draw(strategy):
        example = next(draws, 0)
        values = getattr(strategy, "elements", None)
        return values[example % len(values)] if values else example

    _mutate(draw, doc, kind)
    local, sp = base_pair
    result = same(local, sp, doc)
    assert result[0] == "error", result


# ---------------------------------------------------------------------------- triples
def _csv(path, rows, header="src,dst,op,src_table,dst_table"):
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


@st.composite
def triples_files(draw):
    values = [f"x{i}" for i in range(draw(st.integers(2, 12)))]
    ops = draw(st.lists(st.sampled_from(["o1", "o2", "o3"]), min_size=1, max_size=3, unique=True))
    tables = {v: draw(st.sampled_from(["", "", "T1", "T2"])) for v in values}
    rows = draw(st.lists(st.tuples(st.sampled_from(values), st.sampled_from(values), st.sampled_from(ops)),
                         min_size=1, max_size=15))
    return [(s, d, o, tables[s], tables[d]) for s, d, o in rows]


@_DEEP  # by default, test_triples_errors_are_the_same compares a valid file's tables on both engines
@settings(max_examples=max(1, SPARK_EXAMPLES // 2), **_SETTINGS)
@given(triples_files(), triples_files())
def test_random_triples_files_give_the_same_tables(spark, tmp_path_factory, first, second):
    root = tmp_path_factory.mktemp("triples")
    a, b = _csv(root / "a.csv", first), _csv(root / "b.csv", second)
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = list(zip(*second, strict=True))
    pq.write_table(pa.table({c: list(v) for c, v in zip(("src", "dst", "op", "src_table", "dst_table"), cols,
                                                          strict=True)}), root / "b.parquet")
    local, sp = pair(root, spark)
    same(local, sp, a)
    same(local, sp, b, root / "b.parquet")  # the same triples twice in one commit: added once
    assert snapshot(local) == snapshot(sp)


@pytest.mark.parametrize("rows, setup, expected", [
    ([("a", "b", "op", "T", "T")], False, "ok"),
    ([("a", " ", "op", "", "")], False, "row 1: src, dst and op must all be non-empty"),
    pytest.param([("a", "b", "op", "", ""), ("c", "", "op", "", "")], False, "row 2", marks=_DEEP),
    ([("a", "b", "op", "T1", ""), ("a", "c", "op", "T2", "")], False, "is given two tables"),
    ([("a", "b", "a", "", "")], False, "is both a value and an op"),
    pytest.param([("a", "b", "op", "b", "")], False, "names both a table and a value or op", marks=_DEEP),
    pytest.param([("a", "b", "base_p", "", "")], True, "ok", marks=_DEEP),
    pytest.param([("base_d", "b", "op", "", "")], True, "ok", marks=_DEEP),
    ([("a", "b", "base_d", "", "")], True, "'process' must be a process vertex"),
    pytest.param([("base_p", "b", "op", "", "")], True, "'src' must be a data vertex", marks=_DEEP),
    ([("a", "b", "op", "base_d", "")], True, "not coarser than Value"),
    ([("v_explicit", "b", "op", "", "")], True, "already in the store"),
])
def test_triples_errors_are_the_same(triples_pairs, tmp_path, rows, setup, expected):
    local, sp = triples_pairs[setup]
    path = _csv(tmp_path / "t.csv", rows)
    result = tried(local, path, triples=True)
    assert result == tried(sp, path, triples=True)
    assert result[0] == expected if expected == "ok" else (result[0] == "error" and expected in result[1]), result


@pytest.fixture(scope="module")
def triples_pairs(spark, tmp_path_factory):
    """An empty store pair, and one holding elements and an explicit vertex triples can clash with."""
    root = tmp_path_factory.mktemp("triples-base")
    base = copy.deepcopy(BASE)
    base["gsets"] = {"data": {"contains": [["Value", "Table"]], "granularities": ["D3"]},
                     "process": {"granularities": ["P0", "Transformation"]}}
    base["vertices"] = [{"id": "v_explicit", "type": "D3", "elements": [{"D3": "base_d"}]}]
    with_base = pair(root, spark, "base")
    assert same(*with_base, base)[0] == "ok"
    return {False: pair(root, spark, "empty"), True: with_base}


# ---------------------------------------------------------------------------- choosing, atomicity
def test_auto_ingests_small_inputs_locally_and_large_ones_with_spark(spark, tmp_path, examples_dir):
    st = Store.open(tmp_path / "auto", spark=spark)
    info = st.ingest(examples_dir / "movies.json")
    assert info.engine.startswith("engine: local (reads 40 rows, within the local limit")
    small = Store.open(tmp_path / "auto", spark=spark, local_rows=2)
    info = small.ingest({"format": "strata-bundle/1", "elements": [
        {"id": f"r{i}", "granularity": "Row", "parents": ["imdb_table"]} for i in range(3)]})
    assert info.engine == "engine: spark (reads 3 rows, more than the local limit of 2)"
    assert {r.id for r in small.table("parents").filter("parent = 'imdb_table'").collect()} >= {"r0", "r1", "r2"}
    frame = spark.createDataFrame([], "src string, process string, dst string")
    with pytest.raises(UserError, match="Spark DataFrames"):
        Store.open(tmp_path / "auto", spark=spark, engine="local").ingest({"format": "strata-bundle/1",
                                                                          "edges": frame})


def test_a_failed_source_commits_none_of_the_others(spark, tmp_path, examples_dir):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "strata-bundle/1", "elements": [{"id": "x", "granularity": "Nope"}]}))
    local, sp = pair(tmp_path, spark)
    result = same(local, sp, examples_dir / "movies.json", bad)
    assert result[0] == "error" and "unknown granularity 'Nope'" in result[1]
    for s in (local, sp):
        assert s.version == 0
        assert not os.path.exists(os.path.join(s.root, "tables")) or not any(
            os.listdir(os.path.join(s.root, "tables", t)) for t in os.listdir(os.path.join(s.root, "tables")))
