"""Tests of the naive oracle (tests/support/reference.py) and the bundle generators (tests/support/strategies.py).

Pure Python, no Spark: the paper's movie scenario (examples/movies.json, docs/movies.md)
must give exactly the inferences of Ibis Section 5 and the answers of Table 1, and the
definitions must have their algebraic properties on random bundles.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from support.depth import examples
from support.paths import ROOT
from support.reference import DATA, PROCESS, Reference
from support.strategies import bundle_pairs, bundles

MOVIES = ROOT / "examples" / "movies.json"
PROPERTY = settings(max_examples=examples(25, 60), deadline=None)


@pytest.fixture(scope="module")
def movies() -> Reference:
    return Reference([json.loads(MOVIES.read_text())])


# --------------------------------------------------------------------------- validity


def assert_valid(bundles: list[dict]) -> None:
    """The rules of docs/bundle-format.md that a generator can get wrong, checked independently."""
    kind_of, up = {}, {}
    for b in bundles:
        for kind in (DATA, PROCESS):
            gset = b.get("gsets", {}).get(kind, {})
            for child, parent in gset.get("contains", []):
                for g in (child, parent):
                    assert kind_of.setdefault(g, kind) == kind, f"granularity {g} in both gsets"
                up.setdefault(child, set()).add(parent)
            for g in gset.get("granularities", []):
                assert kind_of.setdefault(g, kind) == kind

    def coarser(g: str, seen: frozenset = frozenset()) -> set[str]:
        assert g not in seen, f"containment cycle through {g}"
        out = set()
        for p in up.get(g, ()):
            out |= {p} | coarser(p, seen | {g})
        return out

    aliases: dict[frozenset, str] = {}
    named: dict[str, frozenset] = {}
    for b in bundles:
        for t in b.get("types", []):
            grans = frozenset(t["granularities"])
            if t["name"] in kind_of or len(grans) == 1:
                # a granularity is already the single-granularity type of the same name
                assert grans == {t["name"]}, f"type {t['name']} renames a granularity"
            assert grans not in aliases, f"two names for {sorted(grans)}"
            assert len({kind_of[g] for g in grans}) == 1
            for g in grans:
                assert not (grans - {g}) & coarser(g), f"type {t['name']} has comparable members"
            aliases[grans] = t["name"]
            named[t["name"]] = grans

    ids: set[str] = set()
    elem_gran: dict[str, str] = {}
    vertex_kind: dict[str, str] = {}
    for b in bundles:
        for e in b.get("elements", []):
            assert e["id"] not in ids, f"duplicate id {e['id']}"
            ids.add(e["id"])
            for p in e.get("parents", []):
                assert elem_gran[p] in coarser(e["granularity"]), f"{p} is not coarser than {e}"
            elem_gran[e["id"]] = e["granularity"]
            vertex_kind[e["id"]] = kind_of[e["granularity"]]
        for v in b.get("vertices", []):
            assert v["id"] not in ids, f"duplicate id {v['id']}"
            ids.add(v["id"])
            t = v["type"]
            grans = frozenset(t) if isinstance(t, list) else named.get(t, frozenset([t]))
            assert v["elements"], f"vertex {v['id']} has no complex element"
            for ce in v["elements"]:
                assert frozenset(ce) == grans
                assert all(elem_gran[x] == g for g, x in ce.items())
            vertex_kind[v["id"]] = kind_of[next(iter(grans))]
        for e in b.get("edges", []):
            assert vertex_kind[e["src"]] == DATA and vertex_kind[e["dst"]] == DATA
            assert vertex_kind[e["process"]] == PROCESS


def test_movies_bundle_is_valid():
    assert_valid([json.loads(MOVIES.read_text())])


@PROPERTY
@given(bundles())
def test_generated_bundles_are_valid_and_small(bundle):
    assert_valid([bundle])
    assert len(bundle["elements"]) <= 15
    assert len(bundle["vertices"]) <= 8
    assert 1 <= len(bundle["edges"]) <= 11


@PROPERTY
@given(bundle_pairs())
def test_bundle_pairs_are_valid_in_sequence_and_mean_the_whole(pair):
    first, second = pair
    assert_valid([first])
    assert_valid([first, second])
    first_ids = {e["id"] for e in first["elements"]} | {v["id"] for v in first["vertices"]}
    mentioned = (
        {p for e in second["elements"] for p in e.get("parents", [])}
        | {x for v in second["vertices"] for ce in v["elements"] for x in ce.values()}
        | {x for e in second["edges"] for x in e.values()}
    )
    assert mentioned & first_ids, "the second bundle must refer to the first"
    merged = {
        **first,
        "elements": first["elements"] + second["elements"],
        "vertices": first["vertices"] + second["vertices"],
        "edges": first["edges"] + second["edges"],
    }
    split, whole = Reference([first, second]), Reference([merged])
    assert split.under_pairs() == whole.under_pairs()
    assert split.influences_pairs(None) == whole.influences_pairs(None)


# --------------------------------------------------------------------------- Section 5


SECTION_5_INFERENCES = [
    # Section 5.1: the Worthington cell is under the lead actor column, which is under the table.
    ("under", ("imdb_worthington", "imdb_lead_actor_col")),
    ("under", ("imdb_lead_actor_col", "imdb_table")),
    # Definition 5.3 examples.
    ("feeds", ("imdb_page", "extract_script")),
    ("feeds", ("imdb_avatar_row", "merge_script")),
    # Definition 5.4 examples.
    ("emits", ("extract_script", "imdb_table")),
    ("emits", ("extract_job_1", "imdb_avatar_row")),
    # Definition 5.5 examples.
    ("influences", ("imdb_table", "imdb_avatar_row", 0)),
    ("influences", ("imdb_avatar_row", "avatar_lead_actor_v1", 1)),
    ("influences", ("imdb_page", "imdb_lead_actor_col", 1)),
    ("influences", ("imdb_page", "avatar_lead_actor_v1", 2)),
]


@pytest.mark.parametrize(
    "predicate,args", SECTION_5_INFERENCES, ids=[f"{p}{a}" for p, a in SECTION_5_INFERENCES]
)
def test_section5_inference_holds(movies, predicate, args):
    assert getattr(movies, predicate)(*args)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 10, None])
def test_section5_inference_that_cannot_be_made(movies, k):
    # (part of) IMDB extracted table influences(k) (all of) combined extracted table: never,
    # because the reduce attempt read the two map outputs together, not map output 1 alone.
    assert not movies.influences("imdb_table", "combined_table", k)
    assert not movies.influences("ymovies_table", "combined_table", k)


def test_influences_needs_enough_steps(movies):
    # The web page reaches V1 in two steps (page -> extracted table -> version), not one.
    assert not movies.influences("imdb_page", "avatar_lead_actor_v1", 1)
    assert movies.influences("imdb_page", "avatar_lead_actor_v1", 2)
    # Containment does not run upwards: the row does not influence(0) its table.
    assert not movies.influences("imdb_avatar_row", "imdb_table", 0)


def test_feeds_and_emits_do_not_cross_sources(movies):
    assert not movies.feeds("imdb_table", "merge_map_task2_attempt1")
    assert movies.feeds("imdb_table", "merge_map_task1_attempt1")
    assert movies.feeds("imdb_table", "merge_job")  # via the map task attempt under it
    # (part of) the reduce attempt emits (all of) the combined table and all that is under it.
    assert movies.emits("merge_reduce_task1_attempt1", "avatar_lead_actor_v2")
    # but nothing emitted map output 1 *and* 2 as a whole.
    assert not movies.emits("merge_map_task1_attempt1", "map_outputs")


# --------------------------------------------------------------------------- Table 1


def _q1(r: Reference) -> set[str]:
    return {
        p
        for p in r.vertices_of_type("WebPage")
        for v in r.vertices_of_type("Version")
        if r.influences(p, v, 2) and v == "avatar_lead_actor_v1"
    }


def _q2(r: Reference) -> set[str]:
    return {
        d
        for d in r.vertices(DATA)
        for t in r.vertices_of_type("Table")
        if r.influences(d, t, 2) and t == "combined_table"
    }


def _q3(r: Reference) -> set[str]:
    return {
        t
        for a in r.vertices_of_type("MRTaskAttempt")
        for t in r.vertices_of_type("Table")
        if r.feeds(t, a) and a == "merge_map_task2_attempt1"
    }


def _q4(r: Reference) -> set[str]:
    data = r.vertices(DATA)
    return {
        t
        for p in r.vertices_of_type("PigScript")
        if p == "extract_script"
        for j in r.vertices_of_type("PigJob")
        if r.under(j, p) and r.attrs(j).get("version") == 3
        for d1 in data
        if r.emits(j, d1)
        for d2 in data
        if r.influences(d1, d2, 2)
        for t in r.vertices_of_type("Table")
        if r.under(d2, t)
    }


def _q5(r: Reference) -> set[str]:
    return {
        v
        for v in r.vertices_of_type("Version")
        for t in r.vertices_of_type("Table")
        if t == "combined_table"
        and r.under(v, t)
        and not any(
            r.influences(source, v, 2) and r.attrs(source)["license"] != "yahoo"
            for source in r.vertices_of_type("WebPage")
        )
    }


def _q6(r: Reference) -> set[tuple[str, int]]:
    def best_score(v: str) -> int | None:
        scores = [
            r.attrs(source2)["authScore"]
            for v2 in r.vertices_of_type("Version")
            for source2 in r.vertices_of_type("WebPage")
            for common in r.vertices_of_type(["Row", "Column"])
            if r.influences(source2, v2, 2) and r.under(v, common) and r.under(v2, common)
        ]
        return max(scores) if scores else None

    return {
        (v, r.attrs(source)["authScore"])
        for v in r.vertices_of_type("Version")
        for source in r.vertices_of_type("WebPage")
        if r.influences(source, v, 2) and r.attrs(source)["authScore"] == best_score(v)
    }


TABLE_1 = [
    ("q1_pages_influencing_v1", _q1, {"imdb_page"}),
    ("q2_data_influencing_combined", _q2, {"map_outputs", "combined_table"}),
    ("q3_table_read_by_map_task2", _q3, {"ymovies_table"}),
    ("q4_contaminated_tables", _q4, {"ymovies_table", "combined_table"}),
    ("q5_yahoo_only_versions", _q5, {"avatar_lead_actor_v2"}),
    ("q6_most_authoritative", _q6, {("avatar_lead_actor_v2", 5)}),
]


@pytest.mark.parametrize("query,expected", [t[1:] for t in TABLE_1], ids=[t[0] for t in TABLE_1])
def test_table1_answers(movies, query, expected):
    assert query(movies) == expected


def test_docs_list_the_table1_answers():
    # docs/movies.md is what users read; its answer column must agree with the oracle.
    doc = (ROOT / "docs" / "movies.md").read_text()
    for _name, _query, expected in TABLE_1:
        for answer in expected:
            ident = answer[0] if isinstance(answer, tuple) else answer
            assert f"`{ident}`" in doc


# --------------------------------------------------------------------------- properties


def _compose(r1: set[tuple[str, str]], r2: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {(a, c) for a, b in r1 for b2, c in r2 if b == b2}


def _closure(rel: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Transitive closure by Warshall's algorithm, independent of Reference."""
    nodes = {x for pair in rel for x in pair}
    reach = {a: {b for x, b in rel if x == a} for a in nodes}
    for m in nodes:
        for a in nodes:
            if m in reach[a]:
                reach[a] |= reach[m]
    return {(a, b) for a in nodes for b in reach[a]}


@PROPERTY
@given(bundles())
def test_under_is_reflexive_and_transitive(bundle):
    r = Reference([bundle])
    under = r.under_pairs()
    assert all((v, v) in under for v in r.vertices())
    assert _compose(under, under) <= under


@PROPERTY
@given(bundles())
def test_contains_is_reflexive_and_transitive(bundle):
    r = Reference([bundle])
    es = r.elements()
    contains = {(a, b) for a in es for b in es if r.contains(a, b)}
    assert all((e, e) in contains for e in es)
    assert _compose(contains, contains) <= contains


@PROPERTY
@given(bundles())
def test_influences_is_monotone_in_k(bundle):
    r = Reference([bundle])
    previous = r.influences_pairs(0)
    for k in range(1, 4):
        current = r.influences_pairs(k)
        assert previous <= current
        previous = current
    assert previous <= r.influences_pairs(None)


@PROPERTY
@given(bundles())
def test_influences_zero_is_under_reversed(bundle):
    r = Reference([bundle])
    data = r.vertices(DATA)
    expected = {(b, a) for a, b in r.under_pairs() if a in data and b in data}
    assert r.influences_pairs(0) == expected


@PROPERTY
@given(bundles())
def test_influences_star_is_the_fixpoint(bundle):
    r = Reference([bundle])
    one, star = r.influences_pairs(1), r.influences_pairs(None)
    assert star == _closure(one)
    assert _compose(one, star) <= star  # one more step adds nothing
    assert star == r.influences_pairs(len(r.vertices(DATA)))


@PROPERTY
@given(bundles())
def test_every_edge_feeds_emits_and_influences(bundle):
    r = Reference([bundle])
    for src, proc, dst in r.edges():
        assert r.feeds(src, proc)
        assert r.emits(proc, dst)
        assert r.influences(src, dst, 1)


@PROPERTY
@given(bundles())
def test_more_facts_never_retract_an_inference(bundle):
    # Open world (Section 4): positive inferences are monotone in the registered facts.
    fewer = Reference([{**bundle, "edges": bundle["edges"][:-1]}])
    more = Reference([bundle])
    assert fewer.feeds_pairs() <= more.feeds_pairs()
    assert fewer.emits_pairs() <= more.emits_pairs()
    assert fewer.influences_pairs(None) <= more.influences_pairs(None)
