"""The incremental OpenLineage ingest (store/interop/ol_commit.py) against the full re-derivation:
whatever order events arrive in and however they are split between ingests, the store holds
exactly the rows of `to_bundle` of all events ingested at once through the plain bundle path.

Runs here have schema facets (a RUNNING event's replaced by the COMPLETE event's), column lineage
(per field and dataset-level, from inputs and from datasets they do not list), parent runs,
version facets, RUNNING/FAIL events and static events, over three datasets; every example is
split into at least two ingests;
shards are made tiny so that ingests rewrite some shards, keep others, and re-shard. No JVM."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.ol_helpers import NS, attrs, dataset, facet, rid, run_event, split_into, table

from store import Store
from store.errors import ConcurrentWriteError
from store.interop import ol_commit
from store.interop.ol_commit import ingest_events
from store.interop.openlineage import Event, owners, to_bundle
from store.kept import KeptRows
from store.segments import segment_files

DATASETS = ("a", "b", "c")
FIELDS = ("x", "y")
CORE = ("elements", "parents", "ancestors", "vertices", "complex", "edges")


def _row(r: dict) -> tuple:
    return tuple(sorted((k, tuple(sorted(v)) if isinstance(v, list) else v) for k, v in r.items()))


def rows(store: Store) -> dict[str, Counter]:
    """Every core table as a multiset of rows: a row written twice shows."""
    return {name: Counter(_row(r) for r in table(store, name)) for name in CORE}


run_strategy = st.fixed_dictionaries({
    "start": st.integers(0, 30), "length": st.integers(0, 12),
    "state": st.sampled_from(["COMPLETE", "COMPLETE", "FAIL", None]),
    "running": st.booleans(),
    "ins": st.sets(st.sampled_from(DATASETS), max_size=2),
    "outs": st.sets(st.sampled_from(DATASETS), min_size=1, max_size=2),
    "schema": st.booleans(),
    "lineage": st.sampled_from(["none", "field", "dataset", "both", "elsewhere"]),
    "parent": st.integers(0, 6),  # 0: none, else the runId of run k (which may not exist)
    "named": st.sampled_from([None, "v1", "v2"]),
    "job": st.integers(0, 2),
})


def run_events(n: int, spec: dict) -> list[dict]:
    job = f"job{spec['job']}"
    parent = (rid(spec["parent"]), f"job{spec['parent'] % 3}") if spec["parent"] else None
    ins = [dataset(d, list(FIELDS) if spec["schema"] else None) for d in sorted(spec["ins"])]
    if spec["named"] and ins:
        ins[0]["facets"]["version"] = facet("DatasetVersionDatasetFacet", datasetVersion=spec["named"])
    src = sorted(spec["ins"]) or ["d"]
    if spec["lineage"] in ("field", "both"):
        lineage = {"x": {"inputFields": [{"namespace": NS, "name": src[0], "field": "x",
                                          "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}]}]},
                   "y": {"inputFields": [{"namespace": NS, "name": src[-1], "field": "y"}]}}
    elif spec["lineage"] == "elsewhere":  # a source dataset the run does not list as an input
        lineage = {"x": {"inputFields": [{"namespace": NS, "name": "d", "field": "z"}]}}
    else:
        lineage = None
    outs = []
    for d in sorted(spec["outs"]):
        out = dataset(d, list(FIELDS) if spec["schema"] else None, lineage)
        if spec["lineage"] in ("dataset", "both"):
            out["facets"]["columnLineage"] = facet("ColumnLineageDatasetFacet", fields={}, dataset=[
                {"namespace": NS, "name": src[0], "field": "y",
                 "transformations": [{"type": "INDIRECT", "subtype": "FILTER"}]}])
        if spec["named"]:
            out["facets"]["version"] = facet("DatasetVersionDatasetFacet", datasetVersion=f"{spec['named']}-{n}")
        outs.append(out)
    start, end = spec["start"], spec["start"] + spec["length"]
    events = [run_event(start, "START", rid(n), job, ins, parent=parent)]
    if spec["running"]:
        # a schema facet the COMPLETE event's replaces (when it has one)
        events.append(run_event(start, "RUNNING", rid(n), job, [], [dataset(sorted(spec["outs"])[0], ["z"])]))
    if spec["state"] is not None:
        events.append(run_event(end, spec["state"], rid(n), job, [], outs, parent=parent))
    return events


STATIC = [
    {"eventTime": "2024-01-01T00:00:00Z", "producer": "https://x", "schemaURL": "https://x/y",
     "dataset": {"namespace": NS, "name": "a"}},
    {"eventTime": "2024-01-01T00:00:00Z", "producer": "https://x", "schemaURL": "https://x/y",
     "job": {"namespace": NS, "name": "job1"}, "inputs": [{"namespace": NS, "name": "e"}]},
]


def reference_rows(folder: Path, bodies: list[dict]) -> dict[str, Counter]:
    """The full re-derivation: `to_bundle` of every event, through the plain bundle ingest."""
    whole = Store.open(str(folder / "reference"))
    whole.ingest(to_bundle(bodies))
    return rows(whole)


@pytest.fixture
def tiny_shards(monkeypatch):
    monkeypatch.setattr(ol_commit, "EVENTS_PER_SHARD", 2)
    monkeypatch.setattr(ol_commit, "SEGMENTS_PER_SHARD", 2)  # shards' segments merged often


@settings(max_examples=examples(10, 30), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(specs=st.lists(run_strategy, min_size=1, max_size=6), static=st.booleans(), data=st.data())
def test_incremental_ingests_equal_the_full_rederivation(tiny_shards, specs, static, data):
    events = [e for n, spec in enumerate(specs, 1) for e in run_events(n, spec)] + (STATIC if static else [])
    shuffled = data.draw(st.permutations(events))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(events) - 1)), min_size=1, max_size=4)))
    chunks = split_into(shuffled, cuts)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = Store.open(str(folder / "incremental"))
        for k, chunk in enumerate(chunks):
            again = chunk[: len(chunk) // 2] if k else []  # some events sent twice: kept once
            ingest_events(store, [Event("chunk", i, b) for i, b in enumerate(again + chunk)], f"chunk {k}")
        got, want = rows(store), reference_rows(folder, events)
        assert {n: set(c) for n, c in got.items()} == {n: set(c) for n, c in want.items()}
        assert got == want  # and no row twice
        assert shards_hold_their_owners(store, events)
        assert store.meta("openlineage")["events"] == len({Event("", 0, e).key for e in events})


def test_a_late_run_renumbers_only_through_the_affected_owners(tmp_path):
    """Ten runs over two datasets; a run that ended before all of them arrives last: the versions
    of the dataset it wrote move up and the later reader now reads the right one."""
    early = run_events(99, {"start": 0, "length": 1, "state": "COMPLETE", "running": False, "ins": set(),
                            "outs": {"a"}, "schema": False, "lineage": "none", "parent": 0, "named": None, "job": 0})
    rest = [e for n in range(1, 11) for e in run_events(n, {
        "start": 10 * n, "length": 2, "state": "COMPLETE", "running": False, "ins": {"a"} if n % 2 else {"b"},
        "outs": {"b"} if n % 2 else {"c"}, "schema": True, "lineage": "field", "parent": 0, "named": None,
        "job": n % 3})]
    st_ = Store.open(str(tmp_path / "s"))
    ingest_events(st_, [Event("rest", i, b) for i, b in enumerate(rest)], "rest")
    ingest_events(st_, [Event("early", i, b) for i, b in enumerate(early)], "early")
    assert rows(st_) == reference_rows(tmp_path, rest + early)


def _ingest_in_turn(tmp_path, *batches: list[dict]) -> None:
    st_ = Store.open(str(tmp_path / "s"))
    for k, batch in enumerate(batches):
        ingest_events(st_, [Event(f"b{k}", i, b) for i, b in enumerate(batch)], f"batch {k}")
    assert rows(st_) == reference_rows(tmp_path, [e for b in batches for e in b])


def test_a_parent_arriving_late_puts_its_children_under_its_job(tmp_path):
    child = [run_event(5, "START", rid(2), "child", [dataset("x")], parent=(rid(1), "facet-job")),
             run_event(6, "COMPLETE", rid(2), "child", [], [dataset("y")], parent=(rid(1), "facet-job"))]
    grandchild = [run_event(7, "START", rid(3), "leaf", [dataset("y")], parent=(rid(2), "child")),
                  run_event(8, "COMPLETE", rid(3), "leaf", [], [dataset("z")], parent=(rid(2), "child"))]
    parent = [run_event(0, "START", rid(1), "boss"), run_event(9, "COMPLETE", rid(1), "boss", [], [dataset("p")])]
    _ingest_in_turn(tmp_path, child + grandchild, parent)


def test_a_rederived_run_still_reads_versions_of_datasets_nothing_changed(tmp_path):
    """Run 3 reads e (written by run 1) and d; a late writer of d re-derives run 3, whose read of
    e needs e's writer although e did not change."""
    stored = [run_event(0, "START", rid(1), "w"), run_event(1, "COMPLETE", rid(1), "w", [], [dataset("e")]),
              run_event(10, "START", rid(3), "r", [dataset("e"), dataset("d")]),
              run_event(11, "COMPLETE", rid(3), "r", [], [dataset("f")])]
    late = [run_event(2, "START", rid(2), "w2"), run_event(3, "COMPLETE", rid(2), "w2", [], [dataset("d")])]
    _ingest_in_turn(tmp_path, stored, late)


def test_a_rederived_run_keeps_the_jobs_of_its_stored_parents(tmp_path):
    stored = [run_event(0, "START", rid(1), "boss"), run_event(1, "COMPLETE", rid(1), "boss"),
              run_event(5, "START", rid(2), "child", [dataset("x")], parent=(rid(1), "facet-job")),
              run_event(6, "COMPLETE", rid(2), "child", [], [dataset("y")], parent=(rid(1), "facet-job"))]
    late = [run_event(2, "START", rid(4), "w"), run_event(3, "COMPLETE", rid(4), "w", [], [dataset("x")])]
    _ingest_in_turn(tmp_path, stored, late)


def test_events_derived_from_an_older_version_are_not_committed(tmp_path):
    first = [run_event(0, "START", rid(1), "w"), run_event(1, "COMPLETE", rid(1), "w", [], [dataset("a")])]
    late = [run_event(2, "START", rid(2), "w"), run_event(3, "COMPLETE", rid(2), "w", [], [dataset("a")])]
    stale = Store.open(str(tmp_path / "s"))
    ingest_events(Store.open(str(tmp_path / "s")), [Event("first", i, b) for i, b in enumerate(first)], "first")
    with pytest.raises(ConcurrentWriteError, match="changed while"):
        ingest_events(stale, [Event("late", i, b) for i, b in enumerate(late)], "late")
    assert Store.open(str(tmp_path / "s")).version == 1


def test_a_store_written_before_shards_is_rederived_once_into_them(tmp_path):
    """The flat `openlineage.segments` of earlier versions (still what a store on a Hadoop URI
    gets): the next ingest on this machine re-derives everything into shards, with every refs row."""
    first = [run_event(0, "START", rid(1), "w", [dataset("s")]),
             run_event(1, "COMPLETE", rid(1), "w", [], [dataset("a")])]
    late = [run_event(5, "START", rid(2), "r", [dataset("a")]),
            run_event(6, "COMPLETE", rid(2), "r", [], [dataset("b")])]
    st_ = Store.open(str(tmp_path / "s"))
    ol_commit.rederive_all(st_, [Event("first", i, b) for i, b in enumerate(first)], "before shards")
    assert "segments" in st_.meta("openlineage")
    ingest_events(st_, [Event("late", i, b) for i, b in enumerate(late)], "late")
    meta = st_.meta("openlineage")
    assert "segments" not in meta and meta["refs"] and meta["events"] == 4
    assert rows(st_) == reference_rows(tmp_path, first + late)
    assert {r["run"] for r in table(st_, "openlineage_refs")} == {rid(1), rid(2)}


def shards_hold_their_owners(store: Store, bodies: list[dict]) -> bool:
    """Whether every row of every shard's segments belongs to an owner of that shard (the owners
    of `to_bundle` of the events)."""
    import pyarrow.parquet as pq

    meta = store.meta("openlineage")
    owner = owners(to_bundle(bodies))
    for shard, tables in meta["shard_segments"].items():
        for name, segments in tables.items():
            for f in segment_files(store.storage, segments):
                keys = pq.read_table(f, columns=[ol_commit.KEY_OF[name]]).column(0).to_pylist()
                if any(ol_commit.shard_of(owner[k], meta["shards"]) != int(shard) for k in keys):
                    return False
    return True


@pytest.mark.parametrize("batches", [(3, 3, 3), (1, 5, 3), (9,)], ids=["thirds", "uneven", "one"])
def test_more_shards_move_the_stored_rows_without_deriving_them_again(tmp_path, monkeypatch, tiny_shards, batches):
    """When the events outgrow the shards, the stored rows move to their owners' new shards as they
    are, and only what the new events change is derived (no `_everything` after the first ingest);
    the rows are the full re-derivation's, each in its owner's shard."""
    events = [e for n in range(1, 4) for e in run_events(n, {
        "start": 10 * n, "length": 2, "state": "COMPLETE", "running": True, "ins": {"a"} if n % 2 else {"b"},
        "outs": {"b", "c"} if n % 2 else {"c"}, "schema": True, "lineage": "both", "parent": n - 1,
        "named": None, "job": n % 2})]
    everything = []
    derive_all = ol_commit._everything
    monkeypatch.setattr(ol_commit, "_everything", lambda *a, **k: everything.append(1) or derive_all(*a, **k))
    st_, at = Store.open(str(tmp_path / "s")), 0
    for n in batches:
        ingest_events(st_, [Event("b", i, b) for i, b in enumerate(events[at:at + n])], f"{at}")
        at += n
    assert len(everything) == 1 and st_.meta("openlineage")["shards"] == ol_commit.shard_count(len(events)) > 1
    assert rows(st_) == reference_rows(tmp_path, events)
    assert shards_hold_their_owners(st_, events)


def _dataset_level(name: str, source: str) -> dict:
    """An output with a dataset-level column lineage entry (INDIRECT/FILTER from `source`.y) and
    no schema facet: the fields it feeds are only those the run's own facets name."""
    out = dataset(name)
    out["facets"]["columnLineage"] = facet("ColumnLineageDatasetFacet", fields={}, dataset=[
        {"namespace": NS, "name": source, "field": "y",
         "transformations": [{"type": "INDIRECT", "subtype": "FILTER"}]}])
    return out


def test_a_reader_arriving_late_gives_its_writer_no_edges(tmp_path):
    """Run 5 writes o with a dataset-level entry and no schema; run 2 (a smaller runId) later reads
    o with a schema and reads a. The reverted code gave run 5 edges to run 2's fields of o, without
    their Transformation (run 5 was only partly re-derived)."""
    writer = [run_event(0, "START", rid(5), "w", [dataset("a")]),
              run_event(1, "COMPLETE", rid(5), "w", [], [_dataset_level("o", "a")])]
    reader = [run_event(5, "START", rid(2), "r", [dataset("o", ["x", "y"]), dataset("a")]),
              run_event(6, "COMPLETE", rid(2), "r", [], [dataset("p")])]
    _ingest_in_turn(tmp_path, writer, reader)


def test_a_late_writer_moves_the_dataset_level_edges_of_a_reader(tmp_path):
    """Run 5 reads a and writes o with a dataset-level entry from a.y; run 2 reads o with a
    schema. A late writer of a moves the version run 5 read: every edge of run 5 must leave the
    new version (the reverted code re-derived run 5 without run 2 and left edges from the old)."""
    stored = [run_event(2, "START", rid(5), "w", [dataset("a")]),
              run_event(3, "COMPLETE", rid(5), "w", [], [_dataset_level("o", "a")]),
              run_event(5, "START", rid(2), "r", [dataset("o", ["x", "y"])]),
              run_event(6, "COMPLETE", rid(2), "r", [], [dataset("p")])]
    late = [run_event(0, "START", rid(7), "early"), run_event(1, "COMPLETE", rid(7), "early", [], [dataset("a")])]
    _ingest_in_turn(tmp_path, stored, late)


def _hub_store(tmp_path):
    """A dataset `hub` written once with a schema and read by 40 runs, each with its own field."""
    stored = [run_event(0, "START", rid(1), "w"), run_event(1, "COMPLETE", rid(1), "w", [], [dataset("hub", ["x"])])]
    for n in range(2, 42):
        stored += [run_event(10 + n, "START", rid(n), f"r{n % 3}", [dataset("hub", ["x", f"f{n}"])]),
                   run_event(11 + n, "COMPLETE", rid(n), f"r{n % 3}", [], [dataset(f"out{n}", ["x"])])]
    st_ = Store.open(str(tmp_path / "s"))
    ingest_events(st_, [Event("stored", i, b) for i, b in enumerate(stored)], "stored")
    return st_, stored


def _events_read(monkeypatch) -> list[int]:
    """How many stored events each ingest reads back (appended per call)."""
    reads: list[int] = []
    matching = ol_commit._Stored.matching

    def counted(self, name, column, values, select, *rest):
        rows = matching(self, name, column, values, select, *rest)
        if name == ol_commit.EVENTS_TABLE and "event" in select:
            reads.append(len(rows))
        return rows

    monkeypatch.setattr(ol_commit._Stored, "matching", counted)
    return reads


def test_a_batch_that_ends_after_the_stored_runs_reads_none_of_their_events(tmp_path, monkeypatch):
    """One more reader of `hub` with a new field, and a new writer of `hub` after every stored run:
    the store gains a field on the version read and a version 2, without the 40 readers' (or the
    first writer's) events being read back or `hub` derived again from them."""
    st_, stored = _hub_store(tmp_path)
    batch = [run_event(60, "START", rid(50), "r", [dataset("hub", ["x", "new"])]),
             run_event(61, "COMPLETE", rid(50), "r", [], [dataset("out50")]),
             run_event(70, "START", rid(51), "w"),
             run_event(71, "COMPLETE", rid(51), "w", [], [dataset("hub", ["x"])])]
    reads = _events_read(monkeypatch)
    result = ingest_events(st_, [Event("batch", i, b) for i, b in enumerate(batch)], "batch")
    assert result.whole_datasets == 0 and sum(reads) == 0
    assert rows(st_) == reference_rows(tmp_path, stored + batch)
    versions = {i: a["version"] for i, a in attrs(st_).items() if i.startswith("dataset:warehouse:hub@")
                and "#" not in i}
    assert versions == {f"dataset:warehouse:hub@{rid(1)}": "1", f"dataset:warehouse:hub@{rid(51)}": "2"}


def test_a_late_writer_of_a_busy_dataset_derives_it_again_from_every_run(tmp_path):
    """A writer of `hub` that ended before the readers started: every reader now reads its version,
    whose fields are theirs; `hub` is derived again from all of its runs."""
    st_, stored = _hub_store(tmp_path)
    late = [run_event(2, "START", rid(60), "w2"), run_event(3, "COMPLETE", rid(60), "w2", [], [dataset("hub")])]
    result = ingest_events(st_, [Event("late", i, b) for i, b in enumerate(late)], "late")
    assert result.whole_datasets == 1
    assert rows(st_) == reference_rows(tmp_path, stored + late)


def test_many_small_ingests_keep_the_event_tables_few_segments(tmp_path):
    """A server commits every few events; the events and refs tables, read whole by every
    lookup, must not gain a segment per commit (each ingest would be slower than the last)."""
    st_ = Store.open(str(tmp_path / "s"))
    events: list[dict] = []
    for n in range(1, 22):  # without merging, 21 segments each
        batch = [run_event(2 * n, "START", rid(n), "j", [dataset(f"d{n - 1}")]),
                 run_event(2 * n + 1, "COMPLETE", rid(n), "j", [], [dataset(f"d{n}")])]
        ingest_events(st_, [Event(f"b{n}", i, b) for i, b in enumerate(batch)], f"batch {n}")
        events += batch
    for name in (ol_commit.EVENTS_TABLE, ol_commit.REFS_TABLE):
        assert len(st_.manifest.tables[name].segments) <= 4, name
    assert len(table(st_, ol_commit.EVENTS_TABLE)) == len(events)
    assert len(table(st_, ol_commit.REFS_TABLE)) == len({(Event("", 0, e).key, r) for e in events
                                                         for r in ol_commit.event_refs(e)})
    assert rows(st_) == reference_rows(tmp_path, events)


# ---------------------------------------------------------------------------- the worker's kept lookups
@settings(max_examples=examples(5, 15), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(specs=st.lists(run_strategy, min_size=1, max_size=6), static=st.booleans(), data=st.data())
def test_ingests_through_kept_lookups_equal_fresh_ones(tiny_shards, specs, static, data):
    """The server's worker keeps what it read of the store's files across commits (store/kept.py):
    the same chunks through one KeptRows give the store that fresh ingests give, and the full
    re-derivation's rows, also when another writer commits some of the chunks in between."""
    events = [e for n, spec in enumerate(specs, 1) for e in run_events(n, spec)] + (STATIC if static else [])
    shuffled = data.draw(st.permutations(events))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(events) - 1)), min_size=1, max_size=4)))
    chunks = split_into(shuffled, cuts)
    other = data.draw(st.sets(st.integers(0, len(chunks) - 1), max_size=2))  # chunks another writer commits
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        kept, fresh = KeptRows(), Store.open(str(folder / "fresh"))
        worker = Store.open(str(folder / "kept"))
        for k, chunk in enumerate(chunks):
            batch = [Event("chunk", i, b) for i, b in enumerate((chunk[: len(chunk) // 2] if k else []) + chunk)]
            ingest_events(fresh, batch, f"chunk {k}")
            if k in other:
                ingest_events(Store.open(worker.root), batch, f"chunk {k}, another writer")
            else:
                worker.refresh()
                ingest_events(worker, batch, f"chunk {k}", kept=kept)
        worker.refresh()
        got = rows(worker)
        assert got == rows(fresh)
        assert got == reference_rows(folder, events)


def test_kept_lookups_read_a_file_once_and_follow_another_writers_commits(tmp_path):
    """A second ingest reads only the files the first did not; a commit by another writer (new
    segments, merged ones) is seen, and what was kept of the files it left out is dropped."""
    st_ = Store.open(str(tmp_path / "s"))
    kept = KeptRows()
    first = [run_event(1, "START", rid(1), "w"), run_event(2, "COMPLETE", rid(1), "w", [], [dataset("a", ["x"])])]
    ingest_events(st_, [Event("first", i, b) for i, b in enumerate(first)], "first", kept=kept)
    again = [Event("again", i, b) for i, b in enumerate(first)]
    assert ingest_events(st_, again, "again", kept=kept).new_events == 0
    reads = kept.reads
    assert ingest_events(st_, again, "again", kept=kept).new_events == 0
    assert kept.reads == reads  # the event keys' file was read by the ingest before
    # another writer commits 20 small batches: the event tables' segments are merged meanwhile
    events = list(first)
    for n in range(2, 22):
        batch = [run_event(2 * n, "START", rid(n), "j", [dataset("a")]),
                 run_event(2 * n + 1, "COMPLETE", rid(n), "j", [], [dataset(f"d{n}")])]
        ingest_events(Store.open(st_.root), [Event(f"b{n}", i, b) for i, b in enumerate(batch)], f"b{n}")
        events += batch
    st_.refresh()
    assert ingest_events(st_, [Event("theirs", 0, events[-1])], "theirs", kept=kept).new_events == 0
    listed = {f for entry in st_.manifest.tables.values() for f in segment_files(st_.storage, entry.segments)}
    assert set(kept._seen) <= listed  # nothing kept of files the newest version no longer lists
    late = [run_event(0, "START", rid(30), "w2"), run_event(1, "COMPLETE", rid(30), "w2", [], [dataset("a")])]
    ingest_events(st_, [Event("late", i, b) for i, b in enumerate(late)], "late", kept=kept)
    assert rows(st_) == reference_rows(tmp_path, events + late)


def test_kept_rows_read_a_file_again_when_it_changed(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"k": ["a", "b"], "v": ["1", "2"]}), path)
    kept = KeptRows()
    assert kept.matching([path], "k", ["a"], ("k", "v")) == [("a", "1")]
    pq.write_table(pa.table({"k": ["a", "b", "c"], "v": ["9", "2", "3"]}), path)
    os.utime(path, ns=(1, 1))  # another modification time, whatever the clock's resolution
    kept.retain([path])
    assert sorted(kept.matching([path], "k", ["a", "c"], ("k", "v"))) == [("a", "9"), ("c", "3")]
    kept.retain([])
    assert len(kept) == 0


def test_an_ingest_after_many_versions_derives_with_the_last_of_them_only(tmp_path, monkeypatch):
    """A dataset written by 30 runs, read between the writes: a writer and a reader after them
    give `to_bundle` only the last stored version of `a` and of the reader's output (the one the
    reader may read), not the 30 (a commit costs what the new events change, not the datasets'
    history); a late writer among them is derived as the full re-derivation does."""
    stored = []
    for n in range(1, 31):
        stored += [run_event(4 * n, "START", rid(n), "w"),
                   run_event(4 * n + 1, "COMPLETE", rid(n), "w", [], [dataset("a")]),
                   run_event(4 * n + 2, "START", rid(100 + n), "r", [dataset("a")]),
                   run_event(4 * n + 3, "COMPLETE", rid(100 + n), "r", [], [dataset(f"o{n % 3}")])]
    st_ = Store.open(str(tmp_path / "s"))
    ingest_events(st_, [Event("stored", i, b) for i, b in enumerate(stored)], "stored")
    given: list[int] = []
    bundle = ol_commit.to_bundle

    def counted(bodies, known=(), texts=None):
        known = list(known)
        given.append(len(known))
        return bundle(bodies, known, texts)

    monkeypatch.setattr(ol_commit, "to_bundle", counted)
    after = [run_event(200, "START", rid(31), "w"), run_event(201, "COMPLETE", rid(31), "w", [], [dataset("a")]),
             run_event(202, "START", rid(131), "r", [dataset("a")]),
             run_event(203, "COMPLETE", rid(131), "r", [], [dataset("o1")])]
    ingest_events(st_, [Event("after", i, b) for i, b in enumerate(after)], "after")
    assert max(given) <= 2
    assert rows(st_) == reference_rows(tmp_path / "one", stored + after)
    late = [run_event(50, "START", rid(60), "w2"), run_event(51, "COMPLETE", rid(60), "w2", [], [dataset("a")])]
    ingest_events(st_, [Event("late", i, b) for i, b in enumerate(late)], "late")
    assert rows(st_) == reference_rows(tmp_path / "two", stored + after + late)


def test_kept_rows_of_a_merged_file_are_made_from_its_sources(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    a, b, merged = (str(tmp_path / f"{n}.parquet") for n in ("a", "b", "m"))
    pq.write_table(pa.table({"k": ["x", "y"], "v": ["1", "2"]}), a)
    pq.write_table(pa.table({"k": ["y", "z"], "v": ["3", "4"]}), b)
    kept = KeptRows()
    assert kept.matching([a], "k", ["y"], ("v",)) == [("2",)]
    assert kept.keys(a, ("k",)) == {"x", "y"}
    pq.write_table(pa.concat_tables([pq.read_table(a), pq.read_table(b)]), merged)
    kept.adopt(merged, [a, b])  # b, written by the same commit, is read; the merged file is not
    reads = kept.reads
    assert sorted(kept.matching([merged], "k", ["y", "z"], ("v",))) == [("2",), ("3",), ("4",)]
    assert kept.keys(merged, ("k",)) == {"x", "y", "z"}
    assert kept.reads == reads


def test_kept_rows_of_a_written_file_come_from_its_table_until_the_retain_after_next(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "w.parquet")
    table = pa.table({"k": ["x", "y", "x"], "v": ["1", "2", "3"]})
    pq.write_table(table, path)
    kept = KeptRows()
    kept.wrote(path, table)
    kept.retain([path])  # the next commit's start: the table is still there
    assert sorted(kept.matching([path], "k", ["x"], ("v",))) == [("1",), ("3",)]
    assert kept.keys(path, ("k", "v")) == {("x", "1"), ("y", "2"), ("x", "3")}
    assert kept.num_rows(path) == 3
    kept.retain([path])
    assert kept._written == {}  # dropped; what was indexed of it stays, the rest is read from the file
    assert kept.matching([path], "k", ["y"], ("k", "v")) == [("y", "2")]
    assert kept.matching([path], "k", ["x"], ("v",)) == [("1",), ("3",)]


def test_lookups_past_the_kept_rows_budget_scan_the_files(tmp_path):
    """A KeptRows keeps at most `max_rows` rows; a lookup that would pass it scans instead, and
    the store is the same."""
    st_, kept, events = Store.open(str(tmp_path / "s")), KeptRows(max_rows=40), []
    for n in range(1, 6):
        batch = [run_event(2 * n, "START", rid(n), "j", [dataset(f"d{n - 1}")]),
                 run_event(2 * n + 1, "COMPLETE", rid(n), "j", [], [dataset(f"d{n}", ["x"])])]
        st_.refresh()
        ingest_events(st_, [Event(f"b{n}", i, b) for i, b in enumerate(batch)], f"b{n}", kept=kept)
        events += batch
        assert kept.held() <= 40
    assert len(kept) and rows(st_) == reference_rows(tmp_path, events)
