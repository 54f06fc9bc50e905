"""The same bundle as a JSON document, a JSON Lines file, or a folder of JSONL / Parquet
sections ingests to the same tables; errors in file sections name their record."""

from __future__ import annotations

import json

import pytest
from support.bundles import write_folder, write_jsonl

from store import BundleError, Store


def snapshot(st: Store) -> dict[str, set]:
    return {
        "elements": {tuple(r) for r in st.table("elements").collect()},
        "ancestors": {tuple(r) for r in st.table("ancestors").collect()},
        "vertices": {(r.id, r.kind, r.type, r.n_ce, r.ce_size, json.dumps(r.attrs, sort_keys=True))
                     for r in st.table("vertices").collect()},
        "complex": {tuple(r) for r in st.table("complex").collect()},
        "edges": {tuple(r) for r in st.table("edges").collect()},
    }


@pytest.fixture(scope="module")
def movies(examples_dir):
    return json.loads((examples_dir / "movies.json").read_text())


@pytest.fixture(scope="module")
def expected(movies_store):
    return snapshot(movies_store)


@pytest.mark.parametrize("kind", ["jsonl-file", "jsonl-folder", "parquet-folder"])
def test_file_sources_ingest_like_the_json_document(spark, tmp_path, movies, expected, kind):
    src = tmp_path / ("movies.jsonl" if kind == "jsonl-file" else "movies")
    if kind == "jsonl-file":
        write_jsonl(src, movies)
    else:
        write_folder(src, movies, spark, kind.split("-")[0])
    st = Store.open(tmp_path / "store", spark=spark)
    st.ingest(src)
    assert snapshot(st) == expected


def test_jsonl_errors_name_the_record_and_commit_nothing(spark, tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text("\n".join([
        json.dumps({"format": "strata-bundle/1", "gsets": {"data": {"contains": [["Row", "Table"]]}}}),
        json.dumps({"section": "elements", "id": "t", "granularity": "Table"}),
        json.dumps({"section": "elements", "id": "r", "granularity": "Row", "parents": ["t"]}),
        json.dumps({"section": "elements", "id": "q", "granularity": "Row", "parents": ["missing"]}),
    ]) + "\n")
    st = Store.open(tmp_path / "store", spark=spark)
    with pytest.raises(BundleError, match=r"section 'elements', record 2 \(id 'q'\): unknown parent element 'missing'"):
        st.ingest(src)
    assert st.refresh().version == 0


def test_jsonl_syntax_error_names_the_line(spark, tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps({"format": "strata-bundle/1"}) + '\n{"section": "elements", "id": \n')
    with pytest.raises(BundleError, match="line 2 is not valid JSON"):
        Store.open(tmp_path / "store", spark=spark).ingest(src)
