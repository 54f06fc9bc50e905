"""The events a later version of a store added, read from the segments that differ alone
(strata/serve/service.py `added_events`): what extends the server's Marquez view, commit after
commit, instead of building it again from every event. The events table only grows, but a commit
merges its newest segments into one (store/interop/ol_commit.py `_append_log`), so the later
version need not list the earlier one's segments first; the reference is every event of each
version, read whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.ol_helpers import dataset, rid, run_event

from store import Store
from store.interop.ol_commit import ingest_events
from store.interop.openlineage import Event, event_key
from strata.serve.marquez_model import MarquezView
from strata.serve.service import added_events, event_segments, read_events


def _events(n: int) -> list[dict]:
    return [run_event(minute=i, etype="COMPLETE", rid=rid(i), job=f"job{i % 3}",
                      inputs=[dataset(f"in{i % 4}")], outputs=[dataset(f"out{i % 5}")]) for i in range(n)]


def _keys(bodies: list[dict]) -> list[str]:
    return sorted(event_key(b) for b in bodies)


@settings(max_examples=examples(5, 15), deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=7))
def test_added_events_are_what_the_later_version_holds_beyond_the_earlier(tmp_path_factory, sizes):
    root = tmp_path_factory.mktemp("added")
    events = _events(sum(sizes))
    store = Store.open(str(root), engine="local")
    versions, start = [(event_segments(store), [])], 0
    for n in sizes:
        batch = events[start:start + n]
        start += n
        ingest_events(store, [Event("b", i, b) for i, b in enumerate(batch)], "batch")
        store = Store.open(str(root), engine="local")
        versions.append((event_segments(store), events[:start]))
    view = MarquezView.build([])
    for (before, held), (now, holds) in zip(versions, versions[1:], strict=False):
        added = added_events(store, before, now)
        assert _keys(added) == _keys(holds[len(held):])
        assert _keys(read_events(store, now)) == _keys(holds)
        assert view.extend(added)
    whole = MarquezView.build(events)
    assert (view.datasets, view.jobs, view.runs) == (whole.datasets, whole.jobs, whole.runs)


def test_a_commit_that_merges_segments_still_gives_only_its_own_events(tmp_path):
    store = Store.open(str(tmp_path), engine="local")
    events, merged = _events(40), 0
    before = event_segments(store)
    for k in range(0, 40, 5):
        ingest_events(store, [Event("b", i, b) for i, b in enumerate(events[k:k + 5])], "batch")
        store = Store.open(str(tmp_path), engine="local")
        now = event_segments(store)
        merged += now[:len(before)] != before
        assert _keys(added_events(store, before, now)) == _keys(events[k:k + 5])
        before = now
    assert merged  # the case the segments' prefix alone would miss
