"""W3C PROV in and out: the mapping, round trips over prov's own test corpus, the CLI."""

from __future__ import annotations

from pathlib import Path

import prov.model as pm
import prov.tests
import pytest
from click.testing import CliRunner

import iql
from store import Store
from store.interop.prov import ingest_prov, read_document, stored_documents, to_bundle, to_document
from strata.cli import main
from strata.cli_interop import prov_document

TESTS = Path(prov.tests.__file__).parent
CORPUS = sorted((TESTS / "json").glob("*.json"))
PROVN_CORPUS = sorted((TESTS / "provn" / "provtoolbox-corpus").glob("*.provn"))


def _pure_round_trip(doc):
    b = to_bundle(doc).bundle
    nodes = [(e["id"], "data" if e["granularity"] == "Entity" else "process", e.get("attrs") or {})
             for e in b["elements"]] + [(v["id"], "data", v.get("attrs") or {}) for v in b["vertices"]]
    return to_document(nodes, [(e["src"], e["process"], e["dst"]) for e in b["edges"]], [doc])


@pytest.mark.parametrize("corpus", [CORPUS, PROVN_CORPUS], ids=["prov-json", "prov-n"])
def test_corpus_documents_with_mapped_relations_round_trip(corpus):
    """Every document of prov's PROV-JSON and PROV-N test corpora whose relations are all mapped
    comes back equal (prov's own comparison) from its bundle; the others name what the model
    leaves out."""
    mapped = unmapped = 0
    for path in corpus:
        doc = read_document(path)
        m = to_bundle(doc)
        if m.dropped:
            unmapped += 1
            assert all(n > 0 for n in m.dropped.values())
            continue
        mapped += 1
        assert _pure_round_trip(doc) == doc, path.name
    assert mapped > 300 and unmapped > 50


def test_corpus_sample_round_trips_through_a_store(tmp_path):
    """Every 20th mapped document of the PROV-JSON corpus, ingested into a store of its own and
    exported again (the whole store), equals the original."""
    sample = [p for p in CORPUS if not to_bundle(read_document(p)).dropped][::20]
    for k, path in enumerate(sample):
        st = Store.open(str(tmp_path / f"s{k}"))
        ingest_prov(st, [path])
        ids = tuple(r[0] for r in iql.run(st, "select x.id from Any x").rows())
        doc = prov_document(st, None, None, ids) if ids else to_document([], [], stored_documents(st))
        assert doc == read_document(path), path.name


def example() -> pm.ProvDocument:
    doc = pm.ProvDocument()
    doc.add_namespace("ex", "http://example.org/")
    raw, clean, report, coll = doc.entity("ex:raw"), doc.entity("ex:clean", {"prov:label": "clean"}), \
        doc.entity("ex:report"), doc.collection("ex:batch")
    etl = doc.activity("ex:etl", "2024-01-01T00:00:00", "2024-01-01T01:00:00")
    doc.agent("ex:alice", {"prov:type": pm.PROV["Person"]})
    doc.used(etl, raw)
    doc.wasGeneratedBy(clean, etl)
    doc.wasDerivedFrom(report, clean)
    doc.hadMember(coll, raw)
    doc.specializationOf("ex:raw_v1", raw)
    doc.wasAssociatedWith(etl, "ex:alice")
    doc.wasAttributedTo(report, "ex:alice")
    return doc


@pytest.fixture(scope="module")
def prov_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prov")
    path = folder / "example.provn"
    path.write_text(example().serialize(format="provn"))
    st = Store.open(str(folder / "store"))
    r = CliRunner().invoke(main, ["--store", st.root, "ingest", "--format", "prov", str(path)])
    assert r.exit_code == 0, r.output
    return st.refresh()


def test_mapping_as_queries_see_it(prov_store):
    def ids(q):
        return sorted(r[0] for r in iql.run(prov_store, q).rows())

    ex = "http://example.org/"
    assert ids("select b.id from Entity a, Entity b where a influences(*) b and "
               "a.id = 'http://example.org/raw'") == sorted([f"{ex}raw", f"{ex}raw#self", f"{ex}raw_v1", f"{ex}clean",
                                                 f"{ex}report"])  # raw_v1 is under raw (specializationOf)
    assert ids("select a.id from Entity a, Entity c where a under c and c.id = 'http://example.org/batch'") == \
        sorted([f"{ex}batch", f"{ex}batch#self", f"{ex}raw", f"{ex}raw#self", f"{ex}raw_v1"])  # transitively
    assert ids("select a.wasAssociatedWith from Activity a") == ["ex:alice"]
    assert ids("select e.label from Entity e where e.label = 'clean'") == ["clean"]


@pytest.mark.parametrize("fmt", ["json", "provn", "xml"])
def test_export_of_the_ingest_equals_the_original(prov_store, tmp_path, fmt):
    out = tmp_path / f"out.{fmt}"
    r = CliRunner().invoke(main, ["--store", prov_store.root, "export", "prov", "--query",
                                  "select x.id from Any x", "--format", fmt, "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert read_document(out, fmt) == example()


def test_export_with_no_selection_is_the_whole_store(prov_store, tmp_path):
    """`strata export prov` with neither --query nor --lineage exports every vertex (here: the
    document ingested, equal to the original), and an empty store gives an empty document."""
    out = tmp_path / "all.json"
    r = CliRunner().invoke(main, ["--store", prov_store.root, "export", "prov", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert read_document(out, "json") == example()
    r = CliRunner().invoke(main, ["--store", str(tmp_path / "empty"), "export", "prov", "--format", "provn"])
    assert r.exit_code == 0, r.output
    assert "document" in r.output and "entity" not in r.output


def test_export_with_no_selection_over_the_budget_exits_2(prov_store):
    """Over --max-nodes the whole-store export refuses (exit 2) and says how many and how to fix."""
    n = len(iql.run(prov_store, "select x.id from Any x").rows())
    r = CliRunner().invoke(main, ["--store", prov_store.root, "export", "prov", "--max-nodes", "3"])
    assert r.exit_code == 2, r.output
    assert f"the store has {n} vertices, more than the node budget of 3" in r.output
    assert f"--max-nodes {n}" in r.output and "--lineage ITEM" in r.output
    r = CliRunner().invoke(main, ["--store", prov_store.root, "export", "prov", "--max-nodes", str(n)])
    assert r.exit_code == 0, r.output


def test_unmapped_relations_warn_and_still_ingest(tmp_path):
    doc = example()
    doc.wasInformedBy("ex:etl", "ex:load")
    path = tmp_path / "doc.json"
    path.write_text(doc.serialize(format="json"))
    r = CliRunner().invoke(main, ["--store", str(tmp_path / "s"), "ingest", "--format", "prov", str(path)])
    assert r.exit_code == 0 and "not mapped into the model" in r.output and "1 wasInformedBy" in r.output


def test_a_bad_document_exits_2(tmp_path):
    path = tmp_path / "bad.provn"
    path.write_text("document\n  entity(ex:e1\nendDocument\n")
    r = CliRunner().invoke(main, ["--store", str(tmp_path / "s"), "ingest", "--format", "prov", str(path)])
    assert r.exit_code == 2 and f"invalid PROV document {path}" in r.output and "Traceback" not in r.output
    assert Store.open(str(tmp_path / "s")).version == 0


def test_captured_or_other_vertices_export_in_the_strata_namespace():
    doc = to_document([("a", "data", {"name": "x"}), ("p", "process", {}), ("b", "data", {})],
                      [("a", "p", "b")])
    text = doc.serialize(format="provn")
    assert "used(strata:p, strata:a, -)" in text and "wasGeneratedBy(strata:b, strata:p, -)" in text


def test_reingesting_a_document_commits_nothing(prov_store, tmp_path):
    path = tmp_path / "again.json"
    path.write_text(example().serialize(format="json"))
    before = prov_store.refresh().version
    r = CliRunner().invoke(main, ["--store", prov_store.root, "ingest", "--format", "prov", str(path)])
    assert r.exit_code == 0 and "nothing new" in r.output
    assert prov_store.refresh().version == before
