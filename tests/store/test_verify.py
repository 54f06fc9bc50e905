"""Tamper evidence (store/seal.py, store/verify.py, docs/verify.md): every way a person could edit a store
is named by `strata verify`, and clean stores verify.

The stores are real: bundles and triples ingested in this process, an index built, a pipeline
captured with Spark; each tamper works on a copy of a store, with pyarrow and plain file edits.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import EXAMPLES

from store import Store, seal
from store.storage import MANIFEST_DIR
from strata.cli import main

MOVIES = str(EXAMPLES / "movies.json")


def _no_spark():
    raise AssertionError("this store must not start Spark")


@pytest.fixture(scope="module")
def movies(tmp_path_factory):
    """Movies ingested (v1), indexed (v2), a table of small row groups appended (v3): no JVM."""
    st = Store.open(str(tmp_path_factory.mktemp("verify") / "movies"), spark=_no_spark)
    st.ingest(MOVIES)
    from store.index import IndexParams
    from store.indexing import build_index

    build_index(st, IndexParams())
    with st.transaction("notes") as tx:
        schema = pa.schema([("id", pa.string()), ("n", pa.int64())])
        folder = tx.stage_local("notes", json.dumps({"type": "struct", "fields": [
            {"name": "id", "type": "string", "nullable": True, "metadata": {}},
            {"name": "n", "type": "long", "nullable": True, "metadata": {}}]}))
        pq.write_table(pa.table({"id": [f"r{i:02d}" for i in range(30)], "n": list(range(30))}, schema=schema),
                       os.path.join(folder, "part-00000.parquet"), row_group_size=10)
    return st.root


def verify(root: str, *args: str) -> tuple[int, dict]:
    r = CliRunner().invoke(main, ["--store", root, "verify", *args, "--format", "json"])
    assert r.exit_code in (0, 3), r.output
    return r.exit_code, json.loads(r.stdout)


def copy(root: str, tmp_path) -> str:
    dst = str(tmp_path / "copy")
    shutil.copytree(root, dst)
    return dst


def files_of(root: str, table: str) -> list[str]:
    st = Store.open(root, spark=_no_spark)
    return [f for seg in st.manifest.tables[table].segments for f in seal.segment_files(st.storage, seg)]


def only(problems: list[dict], kind: str) -> dict:
    assert [p["kind"] for p in problems] == [kind], problems
    return problems[0]


def test_a_clean_store_verifies(movies):
    code, rep = verify(movies)
    assert code == 0 and rep["ok"] is True and rep["problems"] == []
    assert rep["versions"] == 3 and rep["unhashed"] == [] and rep["checked"]["files"] > 20
    r = CliRunner().invoke(main, ["--store", movies, "verify"])
    assert r.exit_code == 0 and r.stdout.startswith("ok: the store is intact: 3 versions")


def test_one_rewritten_value_is_named_with_its_table_version_file_and_row_group(movies, tmp_path):
    root = copy(movies, tmp_path)
    rel = files_of(root, "notes")[0]
    path = os.path.join(root, rel)
    t = pq.read_table(path)
    n = t.column("n").to_pylist()
    n[15] = 999
    pq.write_table(t.set_column(1, "n", pa.array(n)), path, row_group_size=10)
    code, rep = verify(root)
    p = only(rep["problems"], "changed")
    assert code == 3 and rep["ok"] is False
    assert (p["table"], p["version"], p["file"]) == ("notes", 3, rel)
    assert p["detail"] == "row group 1 (rows 10-19) changed"


def test_an_edited_core_table_file_is_named(movies, tmp_path):
    root = copy(movies, tmp_path)
    rel = files_of(root, "edges")[0]
    path = os.path.join(root, rel)
    t = pq.read_table(path)
    pq.write_table(t.set_column(0, "src", pa.array(["forged", *t.column("src").to_pylist()[1:]])), path,
                   compression="zstd")
    p = only(verify(root)[1]["problems"], "changed")
    assert (p["table"], p["version"], p["file"]) == ("edges", 1, rel)


def test_a_deleted_row_group(movies, tmp_path):
    root = copy(movies, tmp_path)
    rel = files_of(root, "notes")[0]
    path = os.path.join(root, rel)
    f = pq.ParquetFile(path)
    kept = pa.concat_tables([f.read_row_group(0), f.read_row_group(2)])
    pq.write_table(kept, path, row_group_size=10)
    p = only(verify(root)[1]["problems"], "changed")
    assert p["file"] == rel and "row group 2 (rows 20-29) removed" in p["detail"]
    assert "20 rows, committed 30" in p["detail"]


def test_a_dropped_file_and_an_added_file(movies, tmp_path):
    root = copy(movies, tmp_path)
    dropped = files_of(root, "vertices")[0]
    os.remove(os.path.join(root, dropped))
    edges = files_of(root, "edges")[0]
    added = edges.rsplit("/", 1)[0] + "/part-99999"  # no .parquet: Spark reads it all the same
    shutil.copy(os.path.join(root, edges), os.path.join(root, added))
    code, rep = verify(root)
    kinds = {p["kind"]: p for p in rep["problems"]}
    assert code == 3 and set(kinds) == {"removed", "added"}
    assert (kinds["removed"]["table"], kinds["removed"]["file"], kinds["removed"]["version"]) == \
        ("vertices", dropped, 1)
    assert (kinds["added"]["table"], kinds["added"]["file"]) == ("edges", added)


def _manifest(root: str, v: int) -> str:
    return os.path.join(root, MANIFEST_DIR, f"{v:08d}.json")


def test_an_edited_manifest(movies, tmp_path):
    root = copy(movies, tmp_path)
    body = json.load(open(_manifest(root, 1)))
    body["message"] = "ingest something else"
    json.dump(body, open(_manifest(root, 1), "w"))
    p = only(verify(root)[1]["problems"], "manifest")
    assert p["version"] == 1 and p["file"].endswith("00000001.json")


def test_a_replaced_manifest_breaks_the_chain_at_the_next_version(movies, tmp_path):
    """Replaced with a self-consistent one (its root recomputed): the next commit names it."""
    root = copy(movies, tmp_path)
    body = json.load(open(_manifest(root, 2)))
    body["meta"]["index"]["theta"] = 1
    body["integrity"]["root"] = seal.manifest_root(body)
    json.dump(body, open(_manifest(root, 2), "w"))
    p = only(verify(root)[1]["problems"], "chain")
    assert p["version"] == 3 and "version 2" in p["detail"]


def test_a_truncated_chain(movies, tmp_path):
    """Commits removed from the end leave their segments behind; one removed from the start or
    the middle leaves a gap; an expected head root catches a replaced head."""
    root = copy(movies, tmp_path)
    head = verify(root)[1]["root"]
    os.remove(_manifest(root, 3))
    p = only(verify(root)[1]["problems"], "chain")
    assert (p["version"], p["table"]) == (3, "notes") and "chain ends at version 2" in p["detail"]
    code, rep = verify(root, "--expect", head)
    assert code == 3 and "not the expected" in rep["problems"][0]["detail"]
    os.remove(_manifest(root, 1))
    kinds = sorted((p["kind"], p["version"]) for p in verify(root)[1]["problems"])
    assert kinds == [("chain", 1), ("chain", 3)]


def test_a_store_written_before_hashing_says_so(movies, tmp_path):
    root = copy(movies, tmp_path)
    for v in (1, 2, 3):
        body = json.load(open(_manifest(root, v)))
        del body["integrity"]
        json.dump(body, open(_manifest(root, v), "w"))
    code, rep = verify(root)
    assert code == 0 and rep["unhashed"] == [1, 2, 3] and "before Strata hashed" in rep["notes"][0]
    r = CliRunner().invoke(main, ["--store", root, "verify"])
    assert "strata: note: version(s) 1-3 were committed before Strata hashed" in r.stderr
    # a new commit on such a store is hashed, and chains from nothing
    st = Store.open(root, spark=_no_spark)
    st.ingest({"format": "strata-bundle/1", "elements": [{"id": "x1", "granularity": "Row"}]})
    code, rep = verify(root)
    assert code == 0 and rep["unhashed"] == [1, 2, 3] and rep["versions"] == 4
    # stripping the hashes of a later commit is not taken for an old store
    body = json.load(open(_manifest(root, 4)))
    del body["integrity"]
    json.dump(body, open(_manifest(root, 4), "w"))
    assert verify(root)[1]["unhashed"] == [1, 2, 3, 4]


def test_verify_item_reads_only_its_lineage_rows(movies, tmp_path):
    code, rep = verify(movies, "imdb_table")
    assert code == 0 and rep["ok"]
    whole = verify(movies)[1]["checked"]
    assert rep["checked"]["bytes"] < whole["bytes"]
    root = copy(movies, tmp_path)
    rel = files_of(root, "notes")[0]  # not in any lineage: verify ITEM does not see it
    os.remove(os.path.join(root, rel))
    assert verify(root, "imdb_table")[0] == 0
    rel = files_of(root, "edges")[0]
    path = os.path.join(root, rel)
    t = pq.read_table(path)
    pq.write_table(t.set_column(2, "process", pa.array(["forged"] * t.num_rows)), path, compression="zstd")
    code, rep = verify(root, "imdb_table")
    assert code == 3 and [(p["kind"], p["table"]) for p in rep["problems"]] == [("changed", "edges")]


def test_a_clean_triples_store_with_its_index_verifies(tmp_path):
    """Triples ingested in this process and indexed; then one edge table row group edited."""
    csv = tmp_path / "t.csv"
    csv.write_text("src,dst,op\n" + "".join(f"a{i},a{i + 1},R{i % 3}\n" for i in range(40)), encoding="utf-8")
    st = Store.open(str(tmp_path / "store"), spark=_no_spark)
    st.ingest(str(csv))
    from store.index import IndexParams
    from store.indexing import build_index

    build_index(st, IndexParams())
    code, rep = verify(st.root)
    assert code == 0 and rep["versions"] == 2 and rep["checked"]["files"] >= 10
    assert verify(st.root, "a7")[0] == 0
    rel = files_of(st.root, "index_triples")[0]
    os.remove(os.path.join(st.root, rel))
    p = only(verify(st.root)[1]["problems"], "removed")
    assert (p["table"], p["version"], p["file"]) == ("index_triples", 2, rel)


def test_an_edited_or_removed_digests_file(tmp_path, monkeypatch):
    """A commit whose digests are too many for its manifest writes a digests file (made to happen
    here for the movies bundle by lowering the limit)."""
    monkeypatch.setattr(seal, "INLINE_DIGESTS", 0)
    st = Store.open(str(tmp_path / "store"), spark=_no_spark)
    st.ingest(MOVIES)
    body = json.load(open(_manifest(st.root, 1)))
    assert "files" not in body["integrity"] and verify(st.root)[0] == 0
    digests = os.path.join(st.root, body["integrity"]["digests"]["file"])
    text = open(digests).read()
    open(digests, "w").write(text.replace('"rows":7', '"rows":8'))
    p = only(verify(st.root)[1]["problems"], "manifest")
    assert p["version"] == 1 and "digests file was edited" in p["detail"]
    os.remove(digests)
    p = only(verify(st.root)[1]["problems"], "manifest")
    assert "digests file is missing" in p["detail"]


def _committed(root: str) -> list[str]:
    """Every file a commit wrote or published: table files and manifests."""
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.relpath(os.path.join(d, n), root) for n in names
                if n.endswith((".parquet", ".json")) and not n.startswith((".", "_"))]
    return sorted(out)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_flipped_byte_of_any_committed_file_is_named(movies, tmp_path_factory, data):
    """Property: flip one bit of one byte anywhere in a table file or a manifest; verify fails,
    and names that file (a table file as changed, a manifest as manifest or chain)."""
    root = str(tmp_path_factory.mktemp("flip") / "s")
    shutil.copytree(movies, root)
    rel = data.draw(st.sampled_from(_committed(root)), label="file")
    path = os.path.join(root, rel)
    raw = bytearray(open(path, "rb").read())
    at = data.draw(st.integers(0, len(raw) - 1), label="byte")
    raw[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    open(path, "wb").write(bytes(raw))
    code, rep = verify(root)
    assert code == 3 and not rep["ok"]
    named = {p["file"] for p in rep["problems"]} | {f"_strata/manifests/{p['version']:08d}.json"
                                                      for p in rep["problems"] if p["kind"] == "chain"}
    assert rel.replace(os.sep, "/") in named, rep["problems"]


def test_an_unreadable_newest_manifest_is_named(movies, tmp_path):
    root = copy(movies, tmp_path)
    text = open(_manifest(root, 3)).read()
    open(_manifest(root, 3), "w").write(text[: len(text) // 2])
    p = only(verify(root)[1]["problems"], "manifest")
    assert p["version"] == 3 and "not valid JSON" in p["detail"]
