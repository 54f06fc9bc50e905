"""The in-process index build (store/duckdb/index.py) writes exactly what the Spark build writes.

Stores here are written without Spark (`append_rows` writes one Parquet file with pyarrow on a
local store): edges, and the containment a triples ingest creates (a value under its table,
some values under a second root, some vertices made of two values' elements). Each is indexed
once in this process and once on Spark, and the seven index tables, the split plan and the
counts must be equal, row for row. Lineage, incremental updates, a failed and a killed build,
the choice of path and the hash that places rows in buckets are tested here too.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import hypothesis.strategies as hst
import pytest
import xxhash
from hypothesis import HealthCheck, Phase, given, settings
from support.depth import examples
from support.lineage_reference import batch_triples, reference_lineage
from support.paths import ROOT, TESTS
from support.progress import FailingReporter
from support.strategies import SPARK_EXAMPLES

from store import progress
from store import schema as S
from store.engine import LOCAL_TRIPLES_ENV, Engine
from store.index import IndexParams
from store.index import layout as L
from store.index.xxh import buckets_of, hashes
from store.indexing import build_index, choose_builder, update_index
from store.lineage import Method, lineage
from store.store import Store

META_SAME = ("splits", "workflow", "components", "nodes", "triples", "sets", "split_components",
             "set_dependencies", "edges_segments", "scope_segments", "theta", "bands", "buckets")


def _no_spark():
    raise AssertionError("this step must not start Spark")


def write_graph(root: Path, edges, table_of: dict, second_root: dict, cells: dict, more=()) -> str:
    """A store holding `edges` (src, dst, process) and the containment a triples ingest makes:
    every value v an element under its table (depth 1; none: v is a root itself), under a
    second root when `second_root` gives one as (root, depth) — at depth 1 it ties with the table,
    and both builds must pick the same (the larger id) — a data vertex with one complex element
    (itself); `cells` adds vertices made of two values' elements; `more`: values to hold
    without edges yet."""
    st = Store.open(str(root), spark=_no_spark)
    values = sorted(({v for e in edges for v in e[:2]} - set(cells)) | set(table_of) | set(more))
    append_graph(st, "test: a graph", edges, values, table_of, second_root, cells)
    return st.root


def append_graph(st, message: str, edges, values, table_of: dict, second_root: dict, cells: dict) -> None:
    """One commit of `edges` and the containment of `values` and `cells` (see `write_graph`)."""
    anc, cx, vx = set(), [], []
    for v in values:
        anc.add((v, v, 0))
        if table_of.get(v):
            anc.add((v, table_of[v], 1))
            anc.add((table_of[v], table_of[v], 0))
        if second_root.get(v):
            other, depth = second_root[v]
            anc.add((v, other, depth))
            anc.add((other, other, 0))
        cx.append((v, 0, "Value", v))
        vx.append((v, "data", "Value", 1, 1, None, False))
    for c, (a, b) in cells.items():
        cx += [(c, 0, "Value", a), (c, 1, "Value", b)]
        vx.append((c, "data", "Cell", 2, 1, None, False))
    with st.transaction(message) as tx:
        if edges:
            tx.append_rows(S.EDGES, list(edges), S.SCHEMAS[S.EDGES])
        if anc:
            tx.append_rows(S.ANCESTORS, sorted(anc), S.SCHEMAS[S.ANCESTORS])
        if cx:
            tx.append_rows(S.COMPLEX, cx, S.SCHEMAS[S.COMPLEX])
        if vx:
            tx.append_rows(S.VERTICES, vx, S.SCHEMAS[S.VERTICES])


def snapshot(root: str) -> dict:
    """Every index table of a store as a multiset of rows, plus each table's manifest entry."""
    st = Store.open(root, spark=_no_spark)
    out = {}
    for name in L.INDEX_TABLES:
        entry = st.manifest.tables[name]
        table = st.local().arrow(name)
        fields = [(f["name"], f["type"]) for f in json.loads(entry.schema)["fields"]]
        rows = zip(*[table.column(c).to_pylist() for c in table.column_names], strict=True)
        out[name] = (fields, entry.partition_by, entry.sort_by, str(table.schema), collections.Counter(rows))
    meta = st.meta(L.META_KEY)
    out["meta"] = {k: meta.get(k) for k in META_SAME}
    return out


def assert_same(a: dict, b: dict) -> None:
    for name in a:
        assert a[name] == b[name], name


def files_sorted(root: str) -> None:
    """Each bucket file holds only its bucket's keys, sorted by the table's sort columns."""
    import pyarrow.parquet as pq

    st = Store.open(root, spark=_no_spark)
    buckets = int(st.meta(L.META_KEY)["buckets"])
    for name in L.INDEX_TABLES:
        key, sort_by = L.LAYOUT[name]
        for f in st.local().files(name):
            rows = pq.read_table(f).to_pylist()
            assert [tuple(r[c] for c in sort_by) for r in rows] == sorted(tuple(r[c] for c in sort_by) for r in rows)
            bucket = int(Path(f).parent.name.split("=")[1])
            assert {L.bucket_of_value(r[key], buckets) for r in rows} == {bucket}, (name, f)


@hst.composite
def graphs(draw):
    """Edges over ids in mixed scripts (byte order ≠ code-point order for none, but ≠ case
    order), with cycles, self-loops, duplicate triples, values alone, values without a table,
    values under two roots, and two-element vertices; θ small enough to split over levels."""
    n = draw(hst.integers(2, 36))
    names = draw(hst.lists(hst.text("aZé😀_1", min_size=1, max_size=3), min_size=n, max_size=n, unique=True))
    values = [f"v{s}" for s in names]
    tables = [f"T{i}" for i in range(draw(hst.integers(1, 5)))]
    table_of = {v: draw(hst.sampled_from([*tables, None, tables[0]])) for v in values}
    second_root = {v: (draw(hst.sampled_from(["A", "R", "Z"])), draw(hst.sampled_from([1, 2])))
                   for v in values if draw(hst.integers(0, 5)) == 0}
    cells = {f"x{i}": tuple(draw(hst.lists(hst.sampled_from(values), min_size=2, max_size=2)))
             for i in range(draw(hst.integers(0, 2)))}
    ends = values + sorted(cells)
    index = hst.integers(0, len(ends) - 1)
    pairs = draw(hst.lists(hst.tuples(index, index, hst.sampled_from(["f", "g"])), min_size=1, max_size=3 * n))
    edges = [(ends[a], ends[b], op) for a, b, op in pairs]
    edges += draw(hst.lists(hst.sampled_from(edges), max_size=4))  # duplicate triples
    # a chain through the tables, so a large component crosses several splits
    chain = [v for v in values if table_of[v]]
    edges += [(a, b, "c") for a, b in zip(chain, chain[1:], strict=False) if draw(hst.booleans())]
    theta = draw(hst.integers(2, 5))
    return edges, table_of, second_root, cells, theta


@hst.composite
def unions(draw, parts: int = 3):
    """Several random graphs side by side in one store (ids suffixed per graph): one Spark
    build checks them all, where each Spark build costs tens of seconds."""
    edges, table_of, second_root, cells = [], {}, {}, {}
    theta = None
    for k in range(parts):
        e, t, r, c, th = draw(graphs())
        theta = theta or th

        def ren(v, k=k):
            return f"{v}.{k}"

        edges += [(ren(a), ren(b), op) for a, b, op in e]
        table_of.update({ren(v): x for v, x in t.items()})
        second_root.update({ren(v): x for v, x in r.items()})
        cells.update({ren(x): (ren(a), ren(b)) for x, (a, b) in c.items()})
    return edges, table_of, second_root, cells, theta


_SPARK = settings(max_examples=max(1, SPARK_EXAMPLES // 2), deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                         HealthCheck.data_too_large])


@_SPARK
@given(case=unions(), data=hst.data())
def test_in_process_and_spark_builds_write_the_same_index(spark, tmp_path_factory, case, data):
    edges, table_of, second_root, cells, theta = case
    base = tmp_path_factory.getbasetemp() / f"inmem-{uuid.uuid4().hex}"
    local_root = write_graph(base / "local", edges, table_of, second_root, cells)
    spark_root = str(base / "spark")
    shutil.copytree(local_root, spark_root)
    params = IndexParams(theta=theta, buckets=3, bands=2)
    meta = build_index(Store.open(local_root, spark=_no_spark, engine="local"), params)
    assert meta["builder"] == "local"
    assert build_index(Store.open(spark_root, spark=spark, engine="spark"), params)["builder"] == "spark"
    mine, theirs = snapshot(local_root), snapshot(spark_root)
    assert_same(mine, theirs)
    files_sorted(local_root)
    # lineage over either index answers the same, and as the plain reference does
    triples = sorted(set(edges))
    items = data.draw(hst.lists(hst.sampled_from(sorted({e[1] for e in edges})), min_size=1, max_size=3, unique=True))
    for item in items:
        for method in (Method.CC, Method.CS):
            for forward in (False, True):
                want = reference_lineage(triples, item, None, forward)
                got = [lineage(Store.open(r, spark=_no_spark, engine="local"), item, None, forward, method)
                       for r in (local_root, spark_root)]
                for res in got:
                    assert (set(res.nodes), set(res.edges)) == want, (item, method, forward)
                assert got[0].triples_read == got[1].triples_read
    # Spark reads the in-process build's files (partition discovery, row-group statistics)
    res = lineage(Store.open(local_root, spark=spark, engine="spark"), items[0], None, False, Method.CS)
    assert (set(res.nodes), set(res.edges)) == reference_lineage(triples, items[0], None, False)


def _batch(root: Path, edges) -> str:
    """A store of `edges` holding the containment of every value of the lineage batch."""
    triples, tables = batch_triples()
    return write_graph(root, edges, tables, {}, {}, {v for t in triples for v in t[:2]})


def test_updates_on_both_paths_equal_a_full_build(spark, tmp_path):
    """Old edges: 60% of the lineage batch without table Td's; new: the rest (components merge,
    values are added, the workflow graph gains a table, so the split plan changes and components
    are split again). The in-process update, and a Spark incremental update of an index built
    in-process (store/spark/index/maintenance.py `merge_frames`), both equal a full build."""
    import random

    triples, tables = batch_triples()
    rng = random.Random(5)
    shuffled = triples[:]
    rng.shuffle(shuffled)
    old = [t for t in shuffled[: int(len(shuffled) * 0.6)] if tables.get(t[1]) != "Td"]
    new = sorted(set(triples) - set(old))
    params = IndexParams(theta=4, buckets=4)
    full = _batch(tmp_path / "full", old + new)
    build_index(Store.open(full, spark=_no_spark, engine="local"), params)
    roots = {}
    for path in ("local", "spark"):
        roots[path] = _batch(tmp_path / path, old)
        build_index(Store.open(roots[path], spark=_no_spark, engine="local"), params)
        st = Store.open(roots[path], spark=_no_spark)
        with st.transaction("test: new edges") as tx:
            tx.append_rows(S.EDGES, new, S.SCHEMAS[S.EDGES])
    local_meta = update_index(Store.open(roots["local"], spark=_no_spark, engine="local"))
    spark_meta = update_index(Store.open(roots["spark"], spark=spark, engine="spark"))
    assert (local_meta["builder"], spark_meta["builder"], spark_meta["mode"]) == ("local", "spark", "incremental")
    want = snapshot(full)
    want["meta"].pop("edges_segments")
    want["meta"].pop("scope_segments")
    for path in ("local", "spark"):
        got = snapshot(roots[path])
        got["meta"].pop("edges_segments")
        got["meta"].pop("scope_segments")
        assert_same(got, want)
    # nothing new: the index is left as it is
    assert update_index(Store.open(roots["local"], spark=_no_spark, engine="local"))["mode"] == "unchanged"


def _index_segments(root: str) -> list[str]:
    tables = Path(root) / "tables"
    return sorted(str(p) for t in tables.iterdir() if t.name.startswith("index_") for p in t.iterdir())


def test_a_failed_build_commits_nothing_and_leaves_no_files(tmp_path):
    triples, _ = batch_triples()
    root = _batch(tmp_path / "s", triples)
    st = Store.open(root, spark=_no_spark, engine="local")
    version = st.version
    for step in ("write index_sets", "write index_scope_rows"):  # before and after the first tables
        with progress.reporting(FailingReporter(step)), pytest.raises(RuntimeError, match="failed at"):
            build_index(st, IndexParams(theta=4, buckets=4))
        assert st.refresh().version == version and st.meta(L.META_KEY) is None
        assert _index_segments(root) == []
    assert build_index(st, IndexParams(theta=4, buckets=4))["builder"] == "local"


def test_a_killed_build_commits_nothing(tmp_path):
    triples, _ = batch_triples()
    root = _batch(tmp_path / "s", triples)
    version = Store.open(root, spark=_no_spark).version
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from support.progress import FailingReporter
        from store import progress
        from store.index import IndexParams
        from store.indexing import build_index
        from store.store import Store
        with progress.reporting(FailingReporter("write index_setdeps", kill=True)):
            build_index(Store.open({root!r}, engine="local"), IndexParams(theta=4, buckets=4))
    """)
    env = {**os.environ, "JAVA_HOME": "/nonexistent"}
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == -signal.SIGKILL, r.stderr
    st = Store.open(root, spark=_no_spark, engine="local")
    assert st.version == version and st.meta(L.META_KEY) is None
    assert _index_segments(root)  # the killed build's staged folders: never referenced
    meta = build_index(st, IndexParams(theta=4, buckets=4))
    assert meta["builder"] == "local" and meta["triples"] == len(set(triples))


def test_the_path_follows_the_engine_setting_and_the_edge_limit(tmp_path, monkeypatch):
    triples, _ = batch_triples()
    root = _batch(tmp_path / "s", triples)
    monkeypatch.delenv(LOCAL_TRIPLES_ENV, raising=False)
    assert choose_builder(Store.open(root, spark=_no_spark)).engine is Engine.LOCAL
    assert choose_builder(Store.open(root, spark=_no_spark, engine="spark")).engine is Engine.SPARK
    monkeypatch.setenv(LOCAL_TRIPLES_ENV, str(len(triples) - 1))
    choice = choose_builder(Store.open(root, spark=_no_spark))
    assert choice.engine is Engine.SPARK and f"{len(triples):,}" in choice.reason
    assert choose_builder(Store.open(root, spark=_no_spark, engine="local")).engine is Engine.LOCAL
    assert choose_builder(Store.open(root, spark=_no_spark, engine="auto", master="spark://h:7077")).engine \
        is Engine.SPARK


def test_strata_index_builds_in_process_without_a_jvm(tmp_path):
    """`strata index` on a local store that fits: no JVM (JAVA_HOME points nowhere), and the
    output says where it was built."""
    triples, _ = batch_triples()
    root = _batch(tmp_path / "s", triples)
    env = {k: v for k, v in os.environ.items() if k not in ("STRATA_ENGINE", LOCAL_TRIPLES_ENV)}
    env["JAVA_HOME"] = "/nonexistent"
    r = subprocess.run([sys.executable, "-m", "strata.cli", "--store", root, "index", "--theta", "4",
                        "--format", "json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["builder"], out["mode"], out["triples"]) == ("local", "full", len(set(triples)))
    r = subprocess.run([sys.executable, "-m", "strata.cli", "--store", root, "index"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "index (unchanged" in r.stdout, r.stdout + r.stderr


@settings(max_examples=examples(60, 200), deadline=None, derandomize=True)
@given(keys=hst.lists(hst.text(max_size=70), max_size=40), buckets=hst.integers(1, 64))
def test_vectorized_hash_is_sparks_xxhash64(keys, buckets):
    import pyarrow as pa

    want = []
    for k in keys:
        h = xxhash.xxh64_intdigest(k.encode("utf-8"), seed=42)
        want.append(h - (1 << 64) if h >= 1 << 63 else h)
    assert hashes(pa.array(keys, pa.string())).tolist() == want
    assert buckets_of(pa.array(keys, pa.string()), buckets).tolist() == [L.bucket_of_value(k, buckets) for k in keys]
    if len(keys) > 2:  # an array slice (non-zero offset) hashes its own keys
        assert hashes(pa.array(keys, pa.string()).slice(1, len(keys) - 2)).tolist() == want[1:-1]


def test_auto_builds_on_spark_when_the_build_would_not_fit_in_memory(tmp_path, monkeypatch):
    """`auto` compares the build's expected peak memory with what the machine has available;
    `--engine local` still forces the in-process build."""
    import store.engine as engine
    import store.indexing as im

    triples, _ = batch_triples()
    root = _batch(tmp_path / "s", triples)
    monkeypatch.delenv(LOCAL_TRIPLES_ENV, raising=False)
    need = im.estimated_bytes(len(triples), Store.open(root, spark=_no_spark).local().rows(S.COMPLEX))
    monkeypatch.setattr(engine, "available_bytes", lambda: need - 1)
    choice = choose_builder(Store.open(root, spark=_no_spark))
    assert choice.engine is Engine.SPARK and "available" in choice.reason, choice
    assert choose_builder(Store.open(root, spark=_no_spark, engine="local")).engine is Engine.LOCAL
    monkeypatch.setattr(engine, "available_bytes", lambda: need)
    assert choose_builder(Store.open(root, spark=_no_spark)).engine is Engine.LOCAL


# Why an in-process update may recompute the whole index instead of merging (index_update.py)
_PLAN_CHANGED = "the split plan changed"
_INCREMENTAL_EXAMPLES = int(os.environ.get("STRATA_INCREMENTAL_EXAMPLES", examples(4, 10)))
_NO_EXPLAIN = [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink]


@settings(max_examples=_INCREMENTAL_EXAMPLES, deadline=None, derandomize=True, phases=_NO_EXPLAIN,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(case=unions(parts=2), data=hst.data())
def test_incremental_updates_in_process_equal_a_full_build(tmp_path_factory, case, data):
    """Random triples split into several appends; after each, the in-process update
    (store/duckdb/index_update.py) must equal a full in-process build of the same store, table for
    table, with every file sorted and in its bucket. Appends bring new values (with their
    containment in the same commit, or held earlier without edges), merge components (a last
    append may chain random values of both graphs, joining large components), and add tables
    (which can change the split plan: then the update recomputes everything, and says so).
    Between them, commits of containment alone (a new value, a cell over two held values, which
    can join two influence scopes) merge into the scopes (store/duckdb/scope_update.py). The cost
    rule (index_update.MAX_AFFECTED_SHARE) is off: small graphs would always be recomputed."""
    edges, table_of, second_root, cells, theta = case
    k = data.draw(hst.integers(2, 4), label="appends")
    part = [data.draw(hst.integers(0, k - 1)) for _ in edges]
    parts = [[e for e, p in zip(edges, part, strict=True) if p == i] for i in range(k)]
    if data.draw(hst.booleans(), label="bridge"):  # join components, large ones included
        ends = sorted({v for e in edges for v in e[:2]})
        picks = data.draw(hst.lists(hst.sampled_from(ends), min_size=2, max_size=6))
        parts.append([(a, b, "m") for a, b in zip(picks, picks[1:], strict=False)])
    if data.draw(hst.booleans(), label="every value in a named table"):  # fewer new tables: more merges
        table_of = {v: t or "T0" for v, t in table_of.items()}
    early = {v for v in table_of if data.draw(hst.integers(0, 3)) == 0}  # held before their edges
    base = tmp_path_factory.getbasetemp() / f"incr-{uuid.uuid4().hex}"
    st = Store.open(str(base / "store"), spark=_no_spark, engine="local")
    seen = set(early)
    first = parts[0] or [edges[0]]
    values = sorted(({v for e in first for v in e[:2]} - set(cells)) | early)
    seen |= set(values)
    append_graph(st, "test: first part", first, values, table_of, second_root, cells)
    import store.duckdb.index_rewrite as U
    import store.duckdb.index_update as IU

    sizes = (U.MAX_ADDED_FILES, U.PIECE_BYTES, U.PIECE_MIN_ROWS)
    if data.draw(hst.booleans(), label="tiny files"):  # buckets in pieces of 2 rows, merged past 2 added files
        U.MAX_ADDED_FILES, U.PIECE_BYTES, U.PIECE_MIN_ROWS = 2, 1, 2
    params = IndexParams(theta=theta, buckets=3, bands=2)
    modes = []
    share, IU.MAX_AFFECTED_SHARE = IU.MAX_AFFECTED_SHARE, 1.0
    try:
        build_index(st, params)
        _appends(st, parts, cells, seen, table_of, second_root, params, base, modes, data)
    finally:
        U.MAX_ADDED_FILES, U.PIECE_BYTES, U.PIECE_MIN_ROWS = sizes
        IU.MAX_AFFECTED_SHARE = share
    hypothesis_event(modes)


def _appends(st, parts, cells, seen, table_of, second_root, params, base, modes, data) -> None:
    for i, p in enumerate(parts[1:], 1):
        if not p:
            continue
        if data.draw(hst.booleans(), label="containment alone first"):
            _containment_append(st, i, seen, table_of, second_root, data)
            meta = update_index(Store.open(st.root, spark=_no_spark, engine="local"))
            assert meta["mode"] == "scopes", meta
            modes.append(f"scopes {meta['scopes']}: {meta.get('scopes_reason', '')}")
            _same_as_full(st, params, base, i)
        values = sorted({v for e in p for v in e[:2]} - set(cells) - seen)
        seen |= set(values)
        append_graph(st, f"test: part {i}", p, values, table_of, second_root, {})
        meta = update_index(Store.open(st.root, spark=_no_spark, engine="local"))
        modes.append(meta.get("update_reason", meta["mode"]))
        assert meta["mode"] == "incremental" or meta["update_reason"].startswith(_PLAN_CHANGED), meta
        modes.append(f"scopes {meta.get('scopes', 'empty')}: {meta.get('scopes_reason', '')}")
        _same_as_full(st, params, base, i)


def _containment_append(st, i: int, seen: set, table_of: dict, second_root: dict, data) -> None:
    """One commit with no edges: a new value (in a held table, a new one, or none) and a cell
    over two held values (its complex rows link their roots: two scopes may merge)."""
    held = sorted(seen)
    value = f"held{i}"
    table_of[value] = data.draw(hst.sampled_from(["T0", f"Tnew{i}", None]), label="its table")
    cell = {f"cell{i}": (data.draw(hst.sampled_from(held)), data.draw(hst.sampled_from(held)))} if held else {}
    append_graph(st, f"test: containment {i}", [], [value], table_of, second_root, cell)
    seen.add(value)


def _same_as_full(st, params, base, i: int) -> None:
    full = str(base / f"full-{i}")
    shutil.copytree(st.root, full)
    build_index(Store.open(full, spark=_no_spark, engine="local"), params)
    assert_same(snapshot(st.root), snapshot(full))
    files_sorted(st.root)
    shutil.rmtree(full)


def hypothesis_event(modes) -> None:
    from hypothesis import event

    for m in modes:
        event(m if m == "incremental" or m.startswith("scopes") else "recomputed: " + m.split("(")[0].strip())


def test_an_append_inside_components_is_merged_incrementally(tmp_path, monkeypatch):
    """An append whose new values join existing components, one of which merges two large ones,
    is merged (mode `incremental`), rewrites buckets only where rows changed, and equals a full build."""
    import store.duckdb.index_update as IU

    monkeypatch.setattr(IU, "MAX_AFFECTED_SHARE", 1.0)  # the merged components hold most triples
    triples, tables = batch_triples()
    params = IndexParams(theta=4, buckets=4)
    root = _batch(tmp_path / "s", triples)
    build_index(Store.open(root, spark=_no_spark, engine="local"), params)
    st = Store.open(root, spark=_no_spark, engine="local")
    # table pairs the workflow graph has already: the split plan stays
    by_pair = collections.defaultdict(list)
    for t in triples:
        if tables.get(t[0]) and tables.get(t[1]):  # a value without a table is a table of its own
            by_pair[(tables[t[0]], tables[t[1]])].append(t)
    (a, b, _op), (c, d, _op) = next((ts[0], t) for ts in by_pair.values() for t in ts[1:]
                                    if t[0] != ts[0][0] and t[1] != ts[0][1])
    new = [(a, f"{b}.new", "n"), (a, d, "m"), (c, b, "m")]
    append_graph(st, "test: new values", new, [f"{b}.new"], {f"{b}.new": tables.get(b)}, {}, {})
    meta = update_index(Store.open(root, spark=_no_spark, engine="local"))
    assert meta["mode"] == "incremental", meta.get("update_reason")
    assert meta["new_triples"] == 3 and meta["affected_components"] >= 1
    full = str(tmp_path / "full")
    shutil.copytree(root, full)
    build_index(Store.open(full, spark=_no_spark, engine="local"), params)
    assert_same(snapshot(root), snapshot(full))
    files_sorted(root)


def test_an_append_into_components_holding_most_triples_is_recomputed(tmp_path):
    """The cost rule: when the components an append touches hold more than MAX_AFFECTED_SHARE of
    the index's triples, the update recomputes the component tables (checked before their rows
    are read), says why, and merges the scopes still; a small component's append is merged."""
    import store.duckdb.index_update as IU

    triples, tables = batch_triples()
    params = IndexParams(theta=4, buckets=4)
    root = _batch(tmp_path / "s", triples)
    build_index(Store.open(root, spark=_no_spark, engine="local"), params)
    st = Store.open(root, spark=_no_spark, engine="local")
    size = {c[L.CCID]: c[L.N_TRIPLES] for c in st.local().arrow(L.COMPONENTS).to_pylist()}
    ccid = {r["id"]: r[L.CCID] for r in st.local().arrow(L.NODES).to_pylist()}
    total = sum(size.values())
    # a triple of the smallest and one of the largest component whose ends have tables: a new
    # value in the table of its dst keeps the workflow graph, and so the split plan
    with_tables = sorted((size[ccid[a]], a, b) for a, b, _op in triples if tables.get(a) and tables.get(b))
    for i, ((_n, a, b), share, mode) in enumerate([(with_tables[0], IU.MAX_AFFECTED_SHARE, "incremental"),
                                                   (with_tables[-1], with_tables[-1][0] / total / 2, "full")]):
        append_graph(st, f"test: one new value {i}", [(a, f"{b}.new{i}", "n")], [f"{b}.new{i}"],
                     {f"{b}.new{i}": tables[b]}, {}, {})
        old_share, IU.MAX_AFFECTED_SHARE = IU.MAX_AFFECTED_SHARE, share
        try:
            meta = update_index(Store.open(root, spark=_no_spark, engine="local"))
        finally:
            IU.MAX_AFFECTED_SHARE = old_share
        assert meta["mode"] == mode, meta.get("update_reason")
        if mode == "full":
            assert meta["update"] == "recomputed" and "a full recompute costs less" in meta["update_reason"]
        assert meta["scopes"] == "incremental", meta.get("scopes_reason")
        full = str(tmp_path / f"full-{i}")
        shutil.copytree(root, full)
        build_index(Store.open(full, spark=_no_spark, engine="local"), params)
        assert_same(snapshot(root), snapshot(full))


def test_containment_alone_merges_into_the_influence_scopes(tmp_path):
    """A commit with no edges but a cell over values of two tables (two roots, two scopes) and a
    value under a new table: `strata index` refreshes only the scopes, by merging the new rows
    (store/duckdb/scope_update.py: the two scopes become one, under the smaller root), and the
    scope tables equal a full build's; later appends of edges and values merge the same way."""
    triples, tables = batch_triples()
    params = IndexParams(theta=4, buckets=4)
    root = _batch(tmp_path / "s", triples)
    build_index(Store.open(root, spark=_no_spark, engine="local"), params)
    st = Store.open(root, spark=_no_spark, engine="local")
    scopes = {r["id"]: r["scope"] for r in st.local().arrow(L.SCOPE_NODES).to_pylist()}
    by_scope = collections.defaultdict(list)
    for v in sorted(scopes):
        by_scope[scopes[v]].append(v)
    assert len(by_scope) > 1
    (s1, vs1), (s2, vs2) = sorted(by_scope.items())[:2]
    append_graph(st, "test: a cell over two scopes", [], ["lone"], {"lone": "Tlone"}, {},
                 {"cell": (vs1[0], vs2[0])})
    meta = update_index(Store.open(root, spark=_no_spark, engine="local"))
    assert (meta["mode"], meta["scopes"]) == ("scopes", "incremental"), meta.get("scopes_reason")
    assert meta["scopes_merged"] == 1
    st = Store.open(root, spark=_no_spark, engine="local")
    scopes = {r["id"]: r["scope"] for r in st.local().arrow(L.SCOPE_NODES).to_pylist()}
    assert scopes[vs1[0]] == scopes[vs2[0]] == scopes["cell"] == min(s1, s2)
    assert scopes["lone"] == "Tlone"
    # edges along table pairs the workflow graph has: the split plan stays, the update merges
    a, b = next((a, b) for a, b, _op in triples if tables.get(a) and tables.get(b))
    for i, new in enumerate([[(a, "after", "m")], [(a, b, "m2"), ("after", "after2", "m")]]):
        append_graph(st, f"test: edges {i}", new, ["after2" if i else "after"],
                     {"after": tables[b], "after2": tables[b]}, {}, {})
        meta = update_index(Store.open(root, spark=_no_spark, engine="local"))
        assert meta.get("scopes") == "incremental", meta.get("scopes_reason") or meta.get("update_reason")
        full = str(tmp_path / f"full-{i}")
        shutil.copytree(root, full)
        build_index(Store.open(full, spark=_no_spark, engine="local"), params)
        assert_same(snapshot(root), snapshot(full))
        files_sorted(root)


def test_an_update_keeps_the_skeletons_of_unaffected_components(tmp_path, monkeypatch):
    """Lineage skeletons (index_reads.write_skeletons) after an incremental update: those of
    components the new edges did not touch are moved to the new index, those of affected ones
    written again; each describes its component as the index now holds it."""
    import store.duckdb.index_reads as R
    import store.duckdb.index_update as IU

    monkeypatch.setattr(R, "LARGE_COMPONENT", 3)
    monkeypatch.setattr(IU, "MAX_AFFECTED_SHARE", 1.0)
    triples, tables = batch_triples()
    root = _batch(tmp_path / "s", triples)
    build_index(Store.open(root, spark=_no_spark, engine="local"), IndexParams(theta=4, buckets=4))
    st = Store.open(root, spark=_no_spark, engine="local")
    before = R.LocalIndex.of(st)
    old_folder = os.path.join(before.cache, os.path.basename(before.folders[L.TRIPLES]))
    # Each old skeleton (a folder) held open: one deleted and written again cannot then get its old
    # inode back, so an inode found again means it was moved.
    held = {name: os.open(os.path.join(old_folder, name), os.O_RDONLY) for name in os.listdir(old_folder)}
    inode = {name: os.fstat(fd).st_ino for name, fd in held.items()}
    assert len(inode) > 1
    a, b, _op = next(t for t in triples if tables.get(t[0]) and tables.get(t[1]))
    append_graph(st, "test: one new value", [(a, f"{b}.new", "n")], [f"{b}.new"], {f"{b}.new": tables[b]}, {}, {})
    meta = update_index(Store.open(root, spark=_no_spark, engine="local"))
    assert meta["mode"] == "incremental", meta.get("update_reason")
    st = Store.open(root, spark=_no_spark, engine="local")
    index = R.LocalIndex.of(st)
    folder = os.path.join(index.cache, os.path.basename(index.folders[L.TRIPLES]))
    assert os.path.isdir(folder) and not os.path.isdir(os.path.join(before.cache, os.path.basename(
        before.folders[L.TRIPLES])))
    comps = st.local().arrow(L.COMPONENTS).to_pylist()
    large = [c[L.CCID] for c in comps if c[L.N_TRIPLES] > 3]
    assert sorted(os.listdir(folder)) == sorted(xxhash.xxh64_hexdigest(c.encode()) for c in large)
    (ccid,) = {r[L.CCID] for r in st.local().arrow(L.NODES).to_pylist() if r["id"] == a}
    touched = xxhash.xxh64_hexdigest(ccid.encode())
    kept = {name for name in os.listdir(folder) if inode.get(name) == os.stat(os.path.join(folder, name)).st_ino}
    for fd in held.values():
        os.close(fd)
    assert kept == set(inode) - {touched}  # moved, not written again; the touched one written again
    rows = st.local().arrow(L.TRIPLES).to_pylist()
    deps = st.local().arrow(L.SETDEPS).to_pylist()
    for ccid in large:
        comp = R.Component.open(index.skeleton(ccid))
        got = set(zip(*[comp.scope(None).column(c).to_pylist() for c in ("src", "dst", L.OP)], strict=True))
        assert got == {(r["src"], r["dst"], r[L.OP]) for r in rows if r[L.CCID] == ccid}, ccid
        ids, groups, nxt = comp.deps[False]
        want = {(d[L.DST_CSID], d[L.SRC_CSID]) for d in deps if d[L.CCID] == ccid}
        assert len(nxt) == len(want)


@settings(max_examples=60, deadline=None)
@given(arrays=hst.lists(hst.lists(hst.lists(hst.sampled_from("abcde"), max_size=3), max_size=3),
                        min_size=1, max_size=3))
def test_encode_gives_each_value_its_rank_whatever_the_chunks(arrays):
    """The in-process build's id codes (store/duckdb/index.py `encode`): one code per value of each
    array, the value's rank among all distinct values; empty chunks included (pyarrow's
    dictionary_encode leaves them out of its result, which must not shift the codes)."""
    import pyarrow as pa

    from store.duckdb.index import encode

    chunked = [pa.chunked_array([pa.array(c, pa.string()) for c in chunks], pa.string()) for chunks in arrays]
    values, codes = encode(*chunked)
    distinct = sorted({v for chunks in arrays for c in chunks for v in c})
    assert values.to_pylist() == distinct
    assert [list(c) for c in codes] == [[distinct.index(v) for c in chunks for v in c] for chunks in arrays]
