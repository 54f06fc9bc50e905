"""Differential test: random IQL queries over random bundles, both engines vs the naive reference.

Each example ingests one small bundle (tests/support/strategies.py) into a fresh store and checks
random queries (pairs under a provenance predicate, [NOT] EXISTS with a correlated subquery, a
negated predicate, count(*)) against tests/support/reference.py evaluated by brute force: every query
on the local engine, the first few also on Spark. Few examples: each ingest needs Spark.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.reference import Reference
from support.strategies import SPARK_EXAMPLES, bundles

import iql

PREDICATES = ["under", "feeds", "emits", "influences(0)", "influences", "influences(2)",
              "influences(3)", "influences(*)"]
KINDS = {  # what the left/right operand may range over
    "under": ("same", "same"),
    "feeds": ("data", "process"),
    "emits": ("process", "data"),
}
_counter = itertools.count()
# Queries per example: on the local engine (milliseconds each), and the first few on Spark too.
LOCAL_QUERIES, SPARK_QUERIES = 12, 3


def _kind_of_gran(bundle: dict) -> dict[str, str]:
    kinds = {}
    for kind in ("data", "process"):
        gset = bundle["gsets"][kind]
        for pair in gset.get("contains", []):
            for g in pair:
                kinds[g] = kind
        for g in gset.get("granularities", []):
            kinds[g] = kind
    return kinds


def _type_pool(bundle: dict, ref: Reference) -> dict[str, list[tuple[str, set[str]]]]:
    """kind -> [(FROM text, the element ids it ranges over)], wildcards included."""
    grans = _kind_of_gran(bundle)
    pool: dict[str, list] = {"data": [("AnyData", ref.vertices("data"))],
                             "process": [("AnyProcess", ref.vertices("process"))]}
    for g, kind in sorted(grans.items()):
        pool[kind].append((g, ref.vertices_of_type(g)))
    for t in bundle["types"]:
        pool["data"].append((t["name"], ref.vertices_of_type(t["name"])))
        grans_t = list(reversed(t["granularities"]))
        pool["data"].append(("(" + ", ".join(grans_t) + ")", ref.vertices_of_type(grans_t)))
    everything = ("Any", ref.vertices())
    return {"data": pool["data"] + [everything], "process": pool["process"] + [everything]}


def _holds(ref: Reference, pred: str, a: str, b: str) -> bool:
    if pred == "under":
        return ref.under(a, b)
    if pred == "feeds":
        return ref.kind(a) == "data" and ref.kind(b) == "process" and ref.feeds(a, b)
    if pred == "emits":
        return ref.kind(a) == "process" and ref.kind(b) == "data" and ref.emits(a, b)
    k = {"influences": 1, "influences(*)": None}.get(pred)
    if pred not in ("influences", "influences(*)"):
        k = int(pred[len("influences("):-1])
    return ref.influences(a, b, k)


@st.composite
def query_cases(draw, bundle: dict, ref: Reference, n_attr_types: set[str]):
    """(IQL text, expected rows as a Counter)."""
    pool = _type_pool(bundle, ref)
    pred = draw(st.sampled_from(PREDICATES))
    left_kind, right_kind = KINDS.get(pred, ("data", "data"))
    if left_kind == "same":
        left_kind = right_kind = draw(st.sampled_from(["data", "process"]))
    ta, dom_a = draw(st.sampled_from(pool[left_kind]))
    tb, dom_b = draw(st.sampled_from(pool[right_kind]))
    shape = draw(st.sampled_from(["pairs", "pairs", "exists", "not_exists", "negated", "count"]))
    where_a, keep_a = [], lambda a: True
    if draw(st.booleans()):
        pin = draw(st.sampled_from(sorted(ref.vertices())))
        where_a.append(f"a.id = '{pin}'")
        keep_a = lambda a, pin=pin: a == pin  # noqa: E731
    elif ta in n_attr_types and draw(st.booleans()):
        lo = draw(st.integers(0, 9))
        where_a.append(f"a.n >= {lo}")
        keep_a = lambda a, lo=lo: (ref.attrs(a).get("n") is not None  # noqa: E731
                                   and ref.attrs(a)["n"] >= lo)
    extra = "".join(f" and {w}" for w in where_a)
    dom_a = sorted(a for a in dom_a if keep_a(a))
    dom_b = sorted(dom_b)
    if shape in ("pairs", "negated", "count"):
        neg = "not " if shape == "negated" else ""
        from_where = f"from {ta} a, {tb} b where {neg}a {pred} b{extra}"
        hits = [(a, b) for a in dom_a for b in dom_b if _holds(ref, pred, a, b) != (shape == "negated")]
        if shape == "count":
            return f"select count(*) {from_where}", Counter([(len(hits),)])
        return f"select a.id, b.id {from_where}", Counter(hits)
    neg = "not " if shape == "not_exists" else ""
    text = (f"select a.id from {ta} a where {neg}exists (select * from {tb} b where a {pred} b)"  # noqa: S608 - IQL text, not SQL
            f"{extra}")
    rows = [(a,) for a in dom_a
            if any(_holds(ref, pred, a, b) for b in dom_b) != (shape == "not_exists")]
    return text, Counter(rows)


@pytest.mark.slow
@settings(max_examples=SPARK_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(bundle=bundles(max_data_elements=8, max_vertices=5, max_edges=7), data=st.data())
def test_random_queries_match_the_reference(spark, tmp_path_factory, bundle, data):
    from store import Store

    st_ = Store.open(str(tmp_path_factory.mktemp("iqldiff") / f"s{next(_counter)}"), spark=spark)
    st_.ingest(bundle)
    ref = Reference([bundle])
    n_attr_types = {name for name in st_.catalog.type_names()
                    if (info := st_.catalog.type_by_name(name)) and info.attribute("n") is not None}
    engines = {name: Store.open(st_.root, spark=spark, engine=name) for name in ("local", "spark")}
    for i in range(LOCAL_QUERIES):
        text, expected = data.draw(query_cases(bundle, ref, n_attr_types), label="query")
        for name in ("local", "spark") if i < SPARK_QUERIES else ("local",):
            got = Counter(iql.run(engines[name], text).rows())
            assert got == expected, f"{name}: {text}\n  got {sorted(got.items())}\n  want {sorted(expected.items())}"
