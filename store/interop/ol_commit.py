"""Ingest OpenLineage events into a store: one atomic commit per ingest, order-independent.

The store keeps every event it was given (table `openlineage_events`: key, event, source) and
the segments of the core tables that hold what it derived from them (manifest meta
`openlineage.segments`). An ingest with new events

1. validates every event of every file (nothing is committed if one is bad);
2. re-derives the whole OpenLineage part of the model from all events, stored and new
   (`openlineage.to_bundle`: a function of the set of events, so the order in which events
   arrived, and how they were split between ingests, does not matter);
3. in ONE transaction, leaves the previously derived segments out of the core tables, ingests
   the new bundle through the store's validated bundle path (in-process when small) and appends
   the new events.

Elements the store already holds outside the OpenLineage part (a captured run's source
`dataset:<path>`, shared with namespace `file`) are not added again. Re-ingesting events the
store holds commits nothing. Because derived rows are replaced, the component index is marked
for a full rebuild (`strata index`) when they were replaced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from store import schema as S
from store.interop.openlineage import Event, canonical, read_events, to_bundle
from store.segments import parquet_files

EVENTS_TABLE = "openlineage_events"
META_KEY = "openlineage"
INDEX_META_KEY = "index"  # store/index/layout.py META_KEY (not imported: index imports Spark)


@dataclass(frozen=True)
class OLIngest:
    """What an ingest did: the version (unchanged when nothing was new) and the counts."""

    version: int
    new_events: int
    events: int
    elements: int = 0
    edges: int = 0
    committed: bool = False


def events_schema() -> pa.Schema:
    return pa.schema([(c, pa.string()) for c in ("key", "event", "source")])


def stored_events(st) -> dict[str, str]:
    """key -> canonical event JSON of every event the store holds."""
    entry = st.manifest.tables.get(EVENTS_TABLE)
    if entry is None or not entry.segments:
        return {}
    if st.storage.on_this_machine:


        out: dict[str, str] = {}
        for seg in entry.segments:
            for f in parquet_files(st.storage.file_path(seg)):
                t = pq.read_table(f, columns=["key", "event"])
                out.update(zip(t.column("key").to_pylist(), t.column("event").to_pylist(), strict=True))
        return out
    return {r["key"]: r["event"] for r in st.table(EVENTS_TABLE).select("key", "event").collect()}


def existing(tx, ids: list[str], table: str = S.ELEMENTS, column: str = S.GRANULARITY) -> dict[str, str]:
    """id -> `column` of these ids among the rows of `table` the transaction holds (committed and
    staged): by default the granularity of the elements among them."""
    if not ids:
        return {}
    if tx.store.storage.on_this_machine:
        from store.duckdb.ingest import TxTables  # deferred: the DuckDB wing, for a store on this machine

        return TxTables(tx).lookup(table, column, ids)
    from pyspark.sql import functions as F  # deferred: only this path needs pyspark

    rows = tx.table(table).where(F.col(S.ID).isin(ids)).select(S.ID, column).collect()
    return {r[0]: r[1] for r in rows}


def ingest_openlineage(st, paths: Iterable[str | Path], message: str | None = None,
                       warn: Callable[[str], None] | None = None) -> OLIngest:
    """Validate the events of `paths` and, if any is new, re-derive and commit (module docstring);
    `warn` gets what validation accepted with a warning (`read_events`)."""
    paths = [str(p) for p in paths]
    return ingest_events(st, read_events(paths, warn), message or "ingest openlineage " + ", ".join(paths))


def ingest_events(st, events: Sequence[Event], message: str) -> OLIngest:
    """Commit the new ones among these validated events in one transaction (module docstring);
    nothing when every event is already stored. The file ingest and the service both call it."""
    stored = stored_events(st)
    new: dict[str, Any] = {}
    for e in events:
        if e.key not in stored and e.key not in new:
            new[e.key] = e
    if not new:
        return OLIngest(st.version, 0, len(stored))

    bodies = [json.loads(t) for t in stored.values()] + [e.body for e in new.values()]
    bundle = to_bundle(bodies)
    with st.transaction(message) as tx:
        meta = dict(tx.meta(META_KEY) or {})
        old = meta.get("segments") or {}
        for name, segs in old.items():
            tx.drop_segments(name, segs)
        if old.get(S.EDGES) and tx.meta(INDEX_META_KEY):
            tx.set_meta(INDEX_META_KEY, None)  # edges were replaced, not appended: rebuild the index
        have = existing(tx, [el["id"] for el in bundle["elements"]])
        bundle["elements"] = [el for el in bundle["elements"] if have.get(el["id"]) != el["granularity"]]
        before = {name: set(tx.segments(name)) for name in S.CORE_TABLES}
        counts = tx.ingest(bundle)
        meta["segments"] = {name: [s for s in tx.segments(name) if s not in before[name]]
                            for name in S.CORE_TABLES}
        meta["events"] = len(bodies)
        tx.set_meta(META_KEY, meta)
        tx.append_rows(EVENTS_TABLE, [(k, canonical(e.body), f"{e.source}#{e.index}") for k, e in new.items()],
                       events_schema())
    return OLIngest(st.version, len(new), len(bodies), counts.elements, counts.edges, True)
