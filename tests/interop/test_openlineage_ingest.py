"""`strata ingest --format openlineage`: the mapping, order independence, re-ingest, errors.

Everything here runs in-process (the local ingest path, DuckDB reads): no JVM.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.ol_helpers import (
    NS,
    PlannedRun,
    attrs,
    contents,
    dataset,
    observed,
    pipeline_events,
    reference,
    rid,
    run_event,
    split_into,
    write,
)

import iql
from store import Store
from store.interop.ol_commit import ingest_openlineage
from strata.cli import main

DATASETS = ("a", "b", "c")


# ---------------------------------------------------------------------------- order independence
runs_strategy = st.lists(
    st.builds(
        lambda start, length, state, ins, outs: (start, length, state, ins, outs),
        st.integers(0, 40), st.integers(1, 15), st.sampled_from(["COMPLETE", "COMPLETE", "FAIL", None]),
        st.sets(st.sampled_from(DATASETS), max_size=2), st.sets(st.sampled_from(DATASETS), min_size=1, max_size=2)),
    min_size=1, max_size=5)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=runs_strategy, data=st.data())
def test_any_order_and_any_split_give_the_reference(runs, data):
    planned = [PlannedRun(n + 1, s, s + length, state, tuple(sorted(i)), tuple(sorted(o)))
               for n, (s, length, state, i, o) in enumerate(runs)]
    events = [e for r in planned for e in r.events()]
    shuffled = data.draw(st.permutations(events))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(events) - 1)), max_size=2)))
    chunks = split_into(shuffled, cuts)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        split = Store.open(str(folder / "split"))
        for k, chunk in enumerate(chunks):
            ingest_openlineage(split, [write(folder, f"chunk{k}", chunk, jsonl=k % 2 == 1)])
        whole = Store.open(str(folder / "whole"))
        ingest_openlineage(whole, [write(folder, "all", events, jsonl=False)])
        ref = reference(planned)
        assert observed(split) == (ref.versions, ref.edges, ref.states)
        assert contents(split) == contents(whole)


# ---------------------------------------------------------------------------- the mapping
@pytest.fixture(scope="module")
def pipeline_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ol")
    st = Store.open(str(folder / "store"))
    ingest_openlineage(st, [write(folder, "events", pipeline_events(), jsonl=True)])
    return st


def test_runs_merge_their_events(pipeline_store):
    a = attrs(pipeline_store)
    assert a[f"run:{rid(1)}"] == {"runId": rid(1), "state": "COMPLETE", "eventTime": "2024-01-01T00:00:00Z",
                                  "endTime": "2024-01-01T00:05:00Z"}
    assert a[f"run:{rid(4)}"]["state"] == "FAIL"
    assert a[f"job:{NS}:extract"] == {"namespace": NS, "name": "extract"}


def test_versions_in_order_of_production_and_point_in_time_reads(pipeline_store):
    rows = iql.run(pipeline_store, "select v.name, v.version, r.runId from DatasetVersion v, Run r "
                                   "where r emits v").rows()
    assert sorted(map(tuple, rows)) == [("mart", 1, rid(2)), ("stg", 1, rid(1)), ("stg", 2, rid(3))]
    # report started at minute 60: it read stg version 2 (run 3 ended at 35), not version 1
    read = iql.run(pipeline_store, "select v.version from DatasetVersion v, Run r "
                                   "where v feeds r and r.runId = '00000000-0000-0000-0000-000000000002' "
                                   "and v.name = 'stg'").rows()
    assert [tuple(r) for r in read] == [(2,)]


def test_field_edges_keep_direct_indirect_and_subtype(pipeline_store):
    rows = iql.run(pipeline_store, "select f.name, t.type, t.subtype, g.name from Field f, Transformation t, Field g "
                                   "where f feeds t and t emits g").rows()
    assert sorted(map(tuple, rows)) == [
        ("amount", "DIRECT", "AGGREGATION", "total"),
        ("amount", "DIRECT", "IDENTITY", "amount"),
        ("customer.id", "DIRECT", None, "customer.id"),
        ("status", "INDIRECT", "FILTER", "amount"),
    ]


def test_parent_run_facet_puts_the_run_under_the_parent_job(pipeline_store):
    rows = iql.run(pipeline_store, "select r.runId, r.parentRunId from Run r, Job j "
                                   "where r under j and j.name = 'daily'").rows()
    assert [tuple(r) for r in rows] == [(rid(2), rid(9))]


def test_reingest_changes_nothing(pipeline_store, tmp_path):
    before = pipeline_store.version
    again = ingest_openlineage(pipeline_store, [write(tmp_path, "again", pipeline_events()[::-1], jsonl=False)])
    assert not again.committed and pipeline_store.refresh().version == before


def test_a_bad_event_exits_2_and_commits_nothing(tmp_path):
    good = write(tmp_path, "good", pipeline_events()[:3], jsonl=False)
    bad_events = pipeline_events()[3:6]
    bad_events[2]["run"]["runId"] = "not-a-uuid"
    bad = write(tmp_path, "bad", bad_events, jsonl=True)
    store = tmp_path / "store"
    r = CliRunner().invoke(main, ["--store", str(store), "ingest", "--format", "openlineage", str(good), str(bad)])
    assert r.exit_code == 2, r.output
    assert f"{bad}: event 2: field 'run.runId'" in r.output and "Nothing was committed" in r.output
    assert "Traceback" not in r.output
    assert Store.open(str(store)).version == 0


def test_cli_ingest_then_nothing_new(tmp_path):
    events = write(tmp_path, "events", pipeline_events(), jsonl=False)
    store = str(tmp_path / "store")
    first = CliRunner().invoke(main, ["--store", store, "ingest", "--format", "openlineage", str(tmp_path)])
    assert first.exit_code == 0 and "committed version 1: 9 new event(s)" in first.output
    second = CliRunner().invoke(main, ["--store", store, "ingest", "--format", "openlineage", str(events)])
    assert second.exit_code == 0 and "nothing new" in second.output


def _static(kind: str) -> dict:
    base = {"eventTime": "2024-01-01T00:00:00Z", "producer": "https://example.com", "schemaURL": "https://x/y"}
    if kind == "dataset":
        return {**base, "dataset": {"namespace": NS, "name": "lookup"}}
    return {**base, "job": {"namespace": NS, "name": "nightly"}, "inputs": [{"namespace": NS, "name": "src"}]}


def test_dataset_and_job_events_give_their_elements(tmp_path):
    st = Store.open(str(tmp_path / "s"))
    ingest_openlineage(st, [write(tmp_path, "static", [_static("dataset"), _static("job")], jsonl=False)])
    a = attrs(st)
    assert a[f"dataset:{NS}:lookup"] == {"namespace": NS, "name": "lookup"}
    assert a[f"dataset:{NS}:src"]["name"] == "src" and a[f"job:{NS}:nightly"]["name"] == "nightly"


def test_a_version_facet_names_the_version_read(tmp_path):
    out = dataset("t")
    out["facets"]["version"] = {"_producer": "https://x", "_schemaURL": "https://x/v", "datasetVersion": "v7"}
    read_v7 = dataset("t")
    read_v7["facets"]["version"] = dict(out["facets"]["version"])
    events = [run_event(0, "START", rid(1), "w"), run_event(1, "COMPLETE", rid(1), "w", [dataset("s")], [out]),
              run_event(5, "START", rid(2), "w"), run_event(6, "COMPLETE", rid(2), "w", [dataset("s")], [dataset("t")]),
              run_event(9, "START", rid(3), "r", [read_v7]), run_event(9, "COMPLETE", rid(3), "r", [], [dataset("u")])]
    st = Store.open(str(tmp_path / "s"))
    ingest_openlineage(st, [write(tmp_path, "e", events, jsonl=False)])
    rows = iql.run(st, "select v.version, v.datasetVersion from DatasetVersion v, Run r where v feeds r "
                       "and v.name = 't' and r.runId = '00000000-0000-0000-0000-000000000003'").rows()
    assert [tuple(x) for x in rows] == [(1, "v7")]  # not version 2, the current one at its start


@pytest.mark.parametrize("text, message", [
    ('{"eventTime": ', "not valid JSON at line 1"),
    ('{"eventTime": "2024-01-01T00:00:00Z", "producer": "https://x", "schemaURL": "https://x", '
     '"dataset": {"namespace": "n", "name": "d"}}\n\n{"b": 2', "event 1 (line 3) is not valid JSON"),
    ('[{"producer": "x"}]', "event 0: not a RunEvent, DatasetEvent or JobEvent"),
], ids=["json", "jsonl", "kind"])
def test_unreadable_events_name_file_and_place(tmp_path, text, message):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    r = CliRunner().invoke(main, ["--store", str(tmp_path / "s"), "ingest", "--format", "openlineage", str(bad)])
    assert r.exit_code == 2 and message in r.output and str(bad) in r.output, r.output


def _mutations():
    good = pipeline_events()[2]  # a COMPLETE event with schema and column lineage facets
    yield "good", good
    for name, path, value in [
        ("uuid", ("run", "runId"), "1234"), ("uuid-caps", ("run", "runId"), "00000000-0000-0000-0000-00000000000A"),
        ("time", ("eventTime",), "2024-01-01"), ("type", ("eventType",), "DONE"),
        ("job-name", ("job", "name"), 3), ("no-producer", ("producer",), None),
        ("facet", ("outputs", 0, "facets", "schema", "_producer"), None),
        ("transformation", ("outputs", 0, "facets", "columnLineage", "fields", "amount", "inputFields", 0,
                            "transformations", 0, "type"), "SIDEWAYS"),
    ]:
        body = json.loads(json.dumps(good))
        node = body
        for step in path[:-1]:
            node = node[step]
        if value is None:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        yield name, body


@pytest.mark.parametrize("name, body", list(_mutations()), ids=[n for n, _ in _mutations()])
def test_the_compiled_check_agrees_with_jsonschema(name, body):
    from store.interop.openlineage import _fast, _validators

    fast = _fast()
    if fast is None:
        pytest.skip("fastjsonschema is not installed")
    try:
        fast["RunEvent"](body)
        fast_ok = True
    except Exception:  # noqa: BLE001 - any rejection
        fast_ok = False
    assert fast_ok == _validators()["RunEvent"].is_valid(body) == (name in ("good", "uuid-caps"))
