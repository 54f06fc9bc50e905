"""Every error docs/bundle-format.md lists ("Errors"): a one-paragraph message naming section,
record, id and reason — and nothing committed."""

from __future__ import annotations

import copy
import os

import pytest

from store import BundleError, Store

BASE = {
    "format": "strata-bundle/1",
    "gsets": {"data": {"contains": [["Row", "Table"], ["Column", "Table"], ["Version", "Row"],
                                    ["Version", "Column"]]},
              "process": {"contains": [["Job", "Script"]]}},
    "types": [{"name": "Cell", "granularities": ["Row", "Column"]},
              {"name": "Job", "granularities": ["Job"], "attributes": {"version": "int"}}],
    "elements": [
        {"id": "t", "granularity": "Table"},
        {"id": "r", "granularity": "Row", "parents": ["t"]},
        {"id": "c", "granularity": "Column", "parents": ["t"]},
        {"id": "s", "granularity": "Script"},
        {"id": "j", "granularity": "Job", "parents": ["s"], "attrs": {"version": 1}},
    ],
    "vertices": [{"id": "cell", "type": "Cell", "elements": [{"Row": "r", "Column": "c"}]}],
    "edges": [{"src": "t", "process": "j", "dst": "cell"}],
}


def bundle(**sections):
    b = {"format": "strata-bundle/1", "elements": [], "vertices": [], "edges": []}
    b.update(copy.deepcopy(sections))
    return b


CASES = [
    ("unknown-granularity", bundle(elements=[{"id": "x", "granularity": "Rowz"}]),
     ["section 'elements', record 0", "'x'", "unknown granularity 'Rowz'"]),
    ("unknown-parent", bundle(elements=[{"id": "ok", "granularity": "Table"},
                                        {"id": "x", "granularity": "Row", "parents": ["nope"]}]),
     ["section 'elements', record 1", "'x'", "unknown parent element 'nope'"]),
    ("parent-not-coarser", bundle(elements=[{"id": "x", "granularity": "Table", "parents": ["r"]}]),
     ["section 'elements', record 0", "parent 'r' has granularity Row", "not coarser than Table"]),
    ("cycle", bundle(gsets={"data": {"contains": [["Table", "Version"]]}}),
     ["section 'gsets'", "cycle"]),
    ("duplicate-in-bundle", bundle(elements=[{"id": "x", "granularity": "Table"},
                                             {"id": "x", "granularity": "Table"}]),
     ["section 'elements', record 1", "duplicate id 'x'"]),
    ("duplicate-in-store", bundle(vertices=[{"id": "t", "type": "Cell", "elements": [{"Row": "r", "Column": "c"}]}]),
     ["section 'vertices', record 0", "duplicate id 't'", "already in the store"]),
    ("unknown-type", bundle(vertices=[{"id": "v", "type": "Cel", "elements": [{"Row": "r", "Column": "c"}]}]),
     ["section 'vertices', record 0", "'v'", "unknown type 'Cel'", "did you mean 'Cell'"]),
    ("unknown-element", bundle(vertices=[{"id": "v", "type": "Cell", "elements": [{"Row": "r", "Column": "zz"}]}]),
     ["section 'vertices', record 0", "unknown element 'zz'"]),
    ("misses-granularity", bundle(vertices=[{"id": "v", "type": "Cell", "elements": [{"Row": "r"}]}]),
     ["section 'vertices', record 0", "misses granularity Column"]),
    ("adds-granularity", bundle(vertices=[{"id": "v", "type": ["Row"], "elements": [{"Row": "r", "Column": "c"}]}]),
     ["section 'vertices', record 0", "adds granularity Column"]),
    ("element-wrong-granularity",
     bundle(vertices=[{"id": "v", "type": "Cell", "elements": [{"Row": "c", "Column": "r"}]}]),
     ["section 'vertices', record 0", "has granularity", "but complex element 0 uses it as"]),
    ("process-where-data", bundle(edges=[{"src": "j", "process": "j", "dst": "t"}]),
     ["section 'edges', record 0", "'src' must be a data vertex", "'j' is a process vertex"]),
    ("data-where-process", bundle(edges=[{"src": "t", "process": "r", "dst": "t"}]),
     ["section 'edges', record 0", "'process' must be a process vertex"]),
    ("unknown-vertex",
     bundle(edges=[{"src": "t", "process": "j", "dst": "t"}, {"src": "t", "process": "j", "dst": "ghost"}]),
     ["section 'edges', record 1", "unknown data vertex 'ghost'"]),
    ("wrong-attr-type", bundle(elements=[{"id": "j2", "granularity": "Job", "attrs": {"version": "three"}}]),
     ["section 'elements', record 0", "'j2'", "attribute 'version' must be int, got string"]),
    ("conflicting-inferred", bundle(elements=[{"id": "a", "granularity": "Table", "attrs": {"owner": "ann"}},
                                              {"id": "b", "granularity": "Table", "attrs": {"owner": 7}}]),
     ["attribute 'owner'", "conflicting value types"]),
    ("missing-id", bundle(elements=[{"granularity": "Table"}]),
     ["section 'elements', record 0", "missing 'id'"]),
    ("bad-format", {"format": "other/2"}, ["'format' is 'other/2'"]),
]


@pytest.fixture(scope="module")
def base_store(spark, tmp_path_factory):
    st = Store.open(tmp_path_factory.mktemp("errors") / "store", spark=spark)
    st.ingest(BASE)
    return st


def _files(root: str) -> set[str]:
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        out |= {os.path.join(dirpath, f) for f in files}
    return out


@pytest.mark.parametrize("bad, parts", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_bundle_is_reported_and_commits_nothing(base_store, bad, parts):
    before_files = _files(base_store.root)
    with pytest.raises(BundleError) as e:
        base_store.ingest(bad)
    message = str(e.value)
    for part in parts:
        assert part in message, message
    assert "\n" not in e.value.message  # one paragraph
    assert base_store.refresh().version == 1
    assert _files(base_store.root) == before_files  # staged segments were removed
    assert base_store.table("vertices").count() == 6


def test_later_bundle_may_refer_to_earlier_ones(base_store, tmp_path_factory, spark):
    st = Store.open(tmp_path_factory.mktemp("later") / "store", spark=spark)
    st.ingest(BASE)
    st.ingest(bundle(elements=[{"id": "v1", "granularity": "Version", "parents": ["r", "c"]}],
                     edges=[{"src": "cell", "process": "s", "dst": "v1"}]))
    assert st.version == 2
    anc = {(r.id, r.ancestor) for r in st.table("ancestors").filter("id = 'v1'").collect()}
    assert anc == {("v1", "v1"), ("v1", "r"), ("v1", "c"), ("v1", "t")}
