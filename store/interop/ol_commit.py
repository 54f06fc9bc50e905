"""Ingest OpenLineage events into a store: one atomic commit per ingest, order-independent, and
costing what the new events change (docs/openlineage.md, "How an ingest works").

The store keeps every event it was given (table `openlineage_events`: key, event, source), what
each refers to (table `openlineage_refs`: key, run, parent, dataset, role; `event_refs`), and the
rows it derived from them in *shards*: every derived row belongs to an owner (a run, a dataset,
or a `Job`/`Dataset` element itself: `openlineage.owners`), an owner to the shard
`crc32(owner) % shards`, and the manifest meta `openlineage.shards` lists each shard's segments
of the core tables. An ingest with new events

1. finds the runs and datasets they change from the new events and the refs of the stored ones
   (`affected`): the new events' runs, the datasets those runs touch, every run that reads or
   writes one of those datasets, and the runs below a changed run;
2. derives the bundle of exactly the events those need (`to_bundle` of a subset: their runs, the
   parents above them, and the writers of the datasets they read) before and after the new
   events, and keeps only the rows the affected owners own;
3. in ONE transaction, rewrites each shard that holds an affected owner (its rows minus the
   affected owners' old rows, then the new rows through the store's validated bundle path) and
   appends the new events and their refs.

When the events outgrow the shards (more than EVENTS_PER_SHARD per shard), the ingest first
moves the stored rows, as they are, to the shards their owners have among the new number of
shards (`_Reshard`: an owner follows from the stored elements), then derives what the new events
change as above. A store whose OpenLineage part was written before shards or refs is re-derived
once (`to_bundle` of all events) into shards. A store that is not on this machine re-derives
everything at every ingest on Spark (the flat `openlineage.segments` of earlier versions).
Re-ingesting events the store holds commits nothing.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from store import schema as S
from store.errors import ConcurrentWriteError
from store.interop.openlineage import (
    DATASET,
    DATASET_VERSION,
    FIELD,
    JOB,
    ROLE_OUT,
    TRANSFORMATION,
    Event,
    Produced,
    dataset_id,
    event_refs,
    owners,
    parse_time,
    read_events,
    run_id,
    to_bundle,
)
from store.kept import KeptRows
from store.segments import segment_files

EVENTS_TABLE = "openlineage_events"
REFS_TABLE = "openlineage_refs"
META_KEY = "openlineage"
INDEX_META_KEY = "index"  # store/index/layout.py META_KEY (not imported: index imports Spark)
EVENTS_PER_SHARD = 8192
# segments a shard's table may gather (one per commit that adds rows to it) before a commit merges
# them into one: a commit writes only its new rows and rewrites only the segments it removes rows
# from, and reads stay a few files per shard
SEGMENTS_PER_SHARD = 8
# the events and refs tables: each segment at least this many times the rows of the next newer one
LOG_RATIO = 4
# the column of each core table that names the element (or process) its row derives from
KEY_OF = {S.ELEMENTS: S.ID, S.PARENTS: S.ID, S.ANCESTORS: S.ID, S.VERTICES: S.ID, S.COMPLEX: S.VERTEX,
          S.EDGES: S.PROCESS}


@dataclass(frozen=True)
class OLIngest:
    """What an ingest did: the version (unchanged when nothing was new) and the counts."""

    version: int
    new_events: int
    events: int
    elements: int = 0
    edges: int = 0
    committed: bool = False
    whole_datasets: int = 0  # affected datasets derived from every run that refers to them


def events_schema() -> pa.Schema:
    return pa.schema([(c, pa.string()) for c in ("key", "event", "source")])


def refs_schema() -> pa.Schema:
    return pa.schema([(c, pa.string()) for c in ("key", "run", "parent", "dataset", "role")])


def shard_count(events: int) -> int:
    """The number of shards for this many events: a power of two, at most EVENTS_PER_SHARD each."""
    n = 1
    while n * EVENTS_PER_SHARD < events:
        n *= 2
    return n


def shard_of(owner: str, shards: int) -> int:
    return zlib.crc32(owner.encode("utf-8")) % shards


# ---------------------------------------------------------------------------- reading the store
class _Stored:
    """Lookups into the committed tables of the OpenLineage part (a local store): DuckDB scans of
    their files, or the rows `kept` holds of them (store/kept.py: the server's worker)."""

    def __init__(self, st, kept: KeptRows | None = None) -> None:
        self.st = st
        self.kept = kept
        self._files: dict[str, list[str]] = {}  # the manifest at hand is read before the commit only

    @cached_property
    def con(self):
        """A DuckDB connection, opened when a lookup first scans (kept rows need none)."""
        from store.engine import duckdb_connect  # deferred: duckdb, for a store on this machine

        return duckdb_connect()

    def close(self) -> None:
        if "con" in self.__dict__:  # opened
            self.con.close()

    def files(self, name: str) -> list[str]:
        """The files of table `name` in the store's manifest (listed once: every lookup asks)."""
        files = self._files.get(name)
        if files is None:
            entry = self.st.manifest.tables.get(name)
            files = self._files[name] = segment_files(self.st.storage, entry.segments if entry else ())
        return files

    def _relation(self, name: str):
        files = self.files(name)
        return self.con.read_parquet(files) if files else None

    def matching(self, name: str, column: str, values: Iterable[str], select: Sequence[str],
                 convert: Callable[[tuple], tuple] | None = None) -> list[tuple]:
        """Rows (`select` columns) of table `name` whose `column` is one of `values` (with
        `convert`: each row converted, not to be changed: `KeptRows.matching`)."""
        values = sorted({v for v in values if v is not None})
        if not values:
            return []
        if self.kept is not None and self.kept.fits(
                self.files(name), ("key",) if name == EVENTS_TABLE and column == "key" else column, select, convert):
            if name == EVENTS_TABLE and column == "key":  # the events' keys are kept, their text read
                if tuple(select) == ("key",):
                    return [(k,) for hit in self.kept.holding(self.files(name), "key", values).values() for k in hit]
                return self._events(values, select)
            return self.kept.matching(self.files(name), column, values, select, convert)
        rel = self._relation(name)
        if rel is None:
            return []
        probe = self.con.from_arrow(pa.table({column: pa.array(values, pa.string())}))
        rows = rel.join(probe, column, how="semi").select(*select).fetchall()
        return rows if convert is None else [convert(r) for r in rows]

    def _events(self, keys: list[str], select: Sequence[str]) -> list[tuple]:
        """Rows of the stored events with these keys, read from the files that hold them."""
        import pyarrow.compute as pc  # deferred: only this path needs pyarrow's compute kernels

        out: list[tuple] = []
        for f, hit in self.kept.holding(self.files(EVENTS_TABLE), "key", keys).items():
            t = pq.read_table(f, columns=list(dict.fromkeys(("key", *select))))
            t = t.filter(pc.is_in(t.column("key"), value_set=pa.array(sorted(hit), pa.string())))
            out += zip(*(t.column(c).to_pylist() for c in select), strict=True)
        return out

    def all_rows(self, name: str, select: Sequence[str]) -> list[tuple]:
        rel = self._relation(name)
        return [] if rel is None else rel.select(*select).fetchall()


def stored_events(st) -> dict[str, str]:
    """key -> canonical event JSON of every event the store holds."""
    entry = st.manifest.tables.get(EVENTS_TABLE)
    if entry is None or not entry.segments:
        return {}
    if st.storage.on_this_machine:
        out: dict[str, str] = {}
        for f in segment_files(st.storage, entry.segments):
            t = pq.read_table(f, columns=["key", "event"])
            out.update(zip(t.column("key").to_pylist(), t.column("event").to_pylist(), strict=True))
        return out
    return {r["key"]: r["event"] for r in st.table(EVENTS_TABLE).select("key", "event").collect()}


def existing(tx, ids: list[str], table: str = S.ELEMENTS, column: str = S.GRANULARITY,
             kept: KeptRows | None = None) -> dict[str, str]:
    """id -> `column` of these ids among the rows of `table` the transaction holds (committed and
    staged): by default the granularity of the elements among them (`kept`: store/kept.py)."""
    if not ids:
        return {}
    if tx.store.storage.on_this_machine:
        from store.duckdb.ingest import TxTables  # deferred: the DuckDB wing, for a store on this machine

        return TxTables(tx, kept).lookup(table, column, ids)
    from pyspark.sql import functions as F  # deferred: only this path needs pyspark

    rows = tx.table(table).where(F.col(S.ID).isin(ids)).select(S.ID, column).collect()
    return {r[0]: r[1] for r in rows}


# ---------------------------------------------------------------------------- entry points
def ingest_openlineage(st, paths: Iterable[str | Path], message: str | None = None,
                       warn: Callable[[str], None] | None = None) -> OLIngest:
    """Validate the events of `paths` and, if any is new, derive and commit (module docstring);
    `warn` gets what validation accepted with a warning (`read_events`)."""
    paths = [str(p) for p in paths]
    return ingest_events(st, read_events(paths, warn), message or "ingest openlineage " + ", ".join(paths))


def ingest_events(st, events: Sequence[Event], message: str, kept: KeptRows | None = None) -> OLIngest:
    """Commit the new ones among these validated events in one transaction (module docstring);
    nothing when every event is already stored. The file ingest and the service both call it;
    the service's worker with `kept`, what it read of the store's files in earlier commits
    (store/kept.py): the lookups then read only the files it has not read before."""
    if not st.storage.on_this_machine:
        return rederive_all(st, events, message)
    if kept is not None:
        kept.retain(f for entry in st.manifest.tables.values() for f in segment_files(st.storage, entry.segments))
    stored = _Stored(st, kept)
    try:
        candidates: dict[str, Event] = {}
        for e in events:
            candidates.setdefault(e.key, e)
        known = {k for (k,) in stored.matching(EVENTS_TABLE, "key", candidates, ("key",))}
        new = {k: e for k, e in candidates.items() if k not in known}
        meta = dict(st.meta(META_KEY) or {})
        total = int(meta.get("events", 0)) + len(new)
        if not new:
            return OLIngest(st.version, 0, total)
        shards = shard_count(total)
        # more shards: the stored rows move to their owners' new shards as they are (`_Reshard`)
        reshard = (_Reshard.of(st, meta["shard_segments"], shards)
                   if "refs" in meta and meta.get("shards") != shards and meta.get("shard_segments") else None)
        if "refs" not in meta or (meta.get("shards") != shards and reshard is None):
            plan = _everything(stored, new, shards, with_stored_refs="refs" not in meta)
        else:
            plan = _affected(stored, new, shards)
            plan.reshard = reshard
    finally:
        stored.close()
    read_version = st.version
    with st.transaction(message) as tx:
        if tx.version != read_version + 1:  # the plan was derived from an older version
            raise ConcurrentWriteError(f"store {st.root} changed while these events were derived "
                                       f"(version {read_version}, now {tx.version - 1}); nothing was committed",
                                       hint="ingest them again")
        counts = _write(tx, meta, plan, shards, kept)
        meta.update({"events": total, "shards": shards, "refs": True})
        meta.pop("segments", None)
        tx.set_meta(META_KEY, {**meta, "shard_segments": counts.pop("shard_segments")})
        if counts["edges_changed"] and tx.meta(INDEX_META_KEY):
            tx.set_meta(INDEX_META_KEY, None)  # edges were replaced, not appended: rebuild the index
        _append_log(tx, EVENTS_TABLE, [(k, e.canonical_text, f"{e.source}#{e.index}") for k, e in new.items()],
                    events_schema(), kept)
        _append_log(tx, REFS_TABLE, plan.refs, refs_schema(), kept)
    return OLIngest(st.version, len(new), total, counts["elements"], counts["edges"], True, len(plan.whole))


# ---------------------------------------------------------------------------- what to derive
@dataclass
class _Plan:
    """What one ingest writes: the derived rows of the affected owners (`bundle`: elements and
    edges, `owner`: each element's owner, `static`: the Job and Dataset elements, added only when
    absent), the ids whose stored rows it replaces, the shards it rewrites (all: `rebuild`), and
    the refs rows of the new (and, for a store written before refs, the stored) events."""

    bundle: dict[str, Any]
    owner: dict[str, str]
    static: set[str]
    replaced: set[str]
    replaced_edges: set[tuple[str, str, str]]
    shards: set[int]
    rebuild: bool
    refs: list[tuple]
    whole: set[str] = field(default_factory=set)
    reshard: _Reshard | None = None  # the stored rows moved to more shards first


@dataclass(frozen=True)
class _Reshard:
    """The stored rows of the shards' segments, each with the shard its owner has among more
    shards than they were written for: moved there as they are, nothing derived again. The rows
    of a shard are those of its owners, and an owner follows from the stored elements as
    `openlineage.owners` gives it from a bundle (`_owner_of`)."""

    tables: dict[str, tuple[list[str], pa.Table, pa.Array]]  # name -> (its segments, their rows, new shards)

    @classmethod
    def of(cls, st, shard_segments: dict[str, dict[str, list[str]]], shards: int) -> _Reshard | None:
        """The move of these shards' rows; None when a row's owner is not among the stored
        elements (then everything is derived again)."""
        tables = {}
        for name in S.CORE_TABLES:
            segs = [seg for s in sorted(shard_segments) for seg in shard_segments[s].get(name, ())]
            files = segment_files(st.storage, segs)
            if files:
                tables[name] = (segs, pa.concat_tables([pq.read_table(f) for f in files]))
        if S.ELEMENTS not in tables:
            return None
        owner = _owner_of(tables[S.ELEMENTS][1], tables[S.PARENTS][1] if S.PARENTS in tables else None)
        moved = {}
        for name, (segs, table) in tables.items():
            keys = table.column(KEY_OF[name]).to_pylist()
            if not owner.keys() >= set(keys):
                return None
            moved[name] = (segs, table, pa.array([shard_of(owner[k], shards) for k in keys], pa.int32()))
        return cls(moved)

    def write(self, tx, kept: KeptRows | None) -> tuple[dict[str, dict[str, list[str]]], bool]:
        """Move the rows in `tx`: (the new `shard_segments`, whether edges moved)."""
        out: dict[str, dict[str, list[str]]] = {}
        for name, (segs, table, shard) in self.tables.items():
            tx.drop_segments(name, segs)
            _stage_by_shard(tx, name, table, shard, out, kept)
        return out, S.EDGES in self.tables


def _owner_of(elements: pa.Table, parents: pa.Table | None) -> dict[str, str]:
    """element id -> its owner, from stored element and parent rows: a `Transformation` or a
    `DatasetVersion` its (one) parent's, a `Field` its version's parent; any other itself."""
    first: dict[str, str] = {}
    if parents is not None:
        for i, p in sorted(zip(parents.column(S.ID).to_pylist(), parents.column(S.PARENT).to_pylist(), strict=True)):
            first.setdefault(i, p)  # the first in order, as a bundle lists an element's parents
    out: dict[str, str] = {}
    for i, g in zip(elements.column(S.ID).to_pylist(), elements.column(S.GRANULARITY).to_pylist(), strict=True):
        if g in (TRANSFORMATION, DATASET_VERSION) and i in first:
            out[i] = first[i]
        elif g == FIELD and first.get(i) in first:
            out[i] = first[first[i]]
        elif g not in (TRANSFORMATION, DATASET_VERSION, FIELD):
            out[i] = i
    return out


def _texts(events: dict[str, Event]) -> dict[int, str]:
    """id(body) -> canonical JSON of these events (to_bundle's `texts`)."""
    return {id(e.body): e.canonical_text for e in events.values()}


def _refs_rows(key: str, body: dict[str, Any]) -> list[tuple]:
    return [(key, *r) for r in event_refs(body)]


def _static(bundle: dict[str, Any]) -> set[str]:
    return {el["id"] for el in bundle["elements"] if el["granularity"] in (JOB, DATASET)}


def _everything(stored: _Stored, new: dict[str, Event], shards: int, with_stored_refs: bool) -> _Plan:
    """Re-derive the whole OpenLineage part from every event (first ingest, a store written
    before shards or refs, or more shards when a stored row's owner is not known)."""
    stored_texts = stored.all_rows(EVENTS_TABLE, ("key", "event"))
    bodies = {k: json.loads(t) for k, t in stored_texts}
    texts = {id(bodies[k]): t for k, t in stored_texts}
    bodies.update({k: e.body for k, e in new.items()})
    texts.update(_texts(new))
    bundle = to_bundle(bodies.values(), texts=texts)
    refs = [r for k, b in (bodies.items() if with_stored_refs else ((k, e.body) for k, e in new.items()))
            for r in _refs_rows(k, b)]
    return _Plan(bundle, owners(bundle), _static(bundle), set(), set(), set(range(shards)), True, refs)


def _affected(stored: _Stored, new: dict[str, Event], shards: int) -> _Plan:
    """Re-derive only what the new events change (module docstring, steps 1-2). A run's rows (its
    `Run`, `Transformation`s and edges) depend on its own events, on its ancestors' (the jobs it
    is under) and on the versions the datasets it reads have (their writers); a dataset's rows
    (its versions and fields) on the events of every run that refers to it. So of the runs the new
    events belong to (`changed`), every row is re-derived, and so are every row of the runs below
    them, of the runs that read a dataset a changed run writes (which version they read may
    move), and of the datasets the changed runs refer to: a dataset by what the loaded runs add
    to its stored rows where that is exact (`_appended`), else from every run that refers to it."""
    new_refs = [r for k, e in new.items() for r in _refs_rows(k, e.body)]
    refs = _RefIndex(stored, new_refs)
    changed = {r[1] for r in new_refs if r[1] is not None}
    datasets = refs.datasets_of(changed)
    old: dict[str, dict[str, Any]] = {}
    texts = _texts(new)  # the canonical JSON of the events, by id(body): to_bundle orders by it

    def load(runs: set[str]) -> None:
        keys = refs.keys_of(runs) - old.keys() - new.keys()
        for k, t in stored.matching(EVENTS_TABLE, "key", keys, ("key", "event")):
            body = old[k] = json.loads(t)
            texts[id(body)] = t

    writes = refs.writes_of(changed)
    candidates = refs.readers_of(writes) - changed
    load(changed)
    known = _StoredVersions(stored, writes)
    # a stored reader that names a version of what a changed run writes left a version with that
    # name in the store; when none did, the readers' start times (their `Run` rows) are enough
    if known.named(writes):
        load(candidates)
        starts = _starts(candidates, old.values())
    else:
        starts = known.starts(candidates)
    bodies = [*old.values(), *(e.body for e in new.values())]
    full = changed | refs.below(changed) | _moved_readers(candidates, changed, writes, bodies, starts)
    # the ancestors of the full runs give the jobs they are under; the stored versions of what
    # they read (`known`, their producers' events need not be loaded) which version they read
    load(full | refs.above(full))
    known.extend(refs.datasets_of(full))
    whole: set[str] = set()  # datasets derived from every run that refers to them
    while True:
        loaded = {_run_of(b) for b in old.values()} | changed
        bodies = [*old.values(), *(e.body for e in new.values())]
        given = known.produced(loaded, since=min(parse_time(b["eventTime"]) for b in bodies))
        after = to_bundle(bodies, given, texts)
        before = to_bundle(old.values(), given, texts)
        appended, failed = _appended(known, before, after, datasets - whole)
        if not failed:
            break
        whole |= failed
        load(refs.runs_of(whole))
    mine = {run_id(r) for r in full} | whole

    def derived(bundle: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]], list[dict[str, str]]]:
        owner = owners(bundle)
        return (owner, [el for el in bundle["elements"] if owner[el["id"]] in mine],
                [e for e in bundle["edges"] if owner[e["process"]] in mine])

    owner, elements, edges = derived(after)
    static = _static(after)  # Job and Dataset elements: added where the store does not hold them
    old_owner, old_elements, old_edges = derived(before)
    old_static = _static(before)
    # only the difference is written: a row derived again exactly as stored stays where it is
    was = {el["id"]: el for el in old_elements if el["id"] not in old_static}
    now = {el["id"]: el for el in elements if el["id"] not in static}
    # an element's `ancestors` rows follow its parents' parents too: one whose ancestors moved
    # (a run that learnt its parent job) is written again like one that changed
    anc_before, anc_after = _ancestry(before), _ancestry(after)
    replaced = {i for i, el in was.items() if now.get(i) != el or anc_before(i) != anc_after(i)}
    edge_keys = {(e["src"], e["process"], e["dst"]) for e in edges}
    old_edge_keys = {(e["src"], e["process"], e["dst"]) for e in old_edges}
    written = {i for i in now if i in replaced or i not in was}
    bundle = {"format": after["format"], "gsets": after["gsets"],
              "elements": [*(el for el in after["elements"] if el["id"] in static or el["id"] in written),
                           *appended],
              "edges": [e for e in edges if (e["src"], e["process"], e["dst"]) not in old_edge_keys]}
    owner = {**old_owner, **owner}
    touched = {shard_of(o, shards) for o in mine}
    return _Plan(bundle, owner, static, replaced, old_edge_keys - edge_keys, touched, False, new_refs, whole)


def _vertex_row(row: tuple) -> tuple[str, str, dict[str, str]]:
    return row[0], row[1], dict(row[2] or ())


class _StoredVersions:
    """The stored `DatasetVersion` rows of some datasets (a local store): each version's number
    and producer, and the end time of a producer (its `Run` row's `endTime`) read when asked for."""

    def __init__(self, stored: _Stored, datasets: set[str]) -> None:
        self.stored = stored
        self.datasets: set[str] = set()
        self.versions: dict[str, dict[str, dict[str, str]]] = {}  # dataset id -> version id -> attrs
        self._ends: dict[str, Any] = {}  # producer's runId -> its end time (None: it has none)
        self.left_out: set[str] = set()  # stored versions `produced` left out of the bundles
        self.extend(datasets)

    def extend(self, datasets: set[str]) -> None:
        """Read the stored versions of these datasets too."""
        datasets = datasets - self.datasets
        self.datasets |= datasets
        parent = dict(self.stored.matching(S.PARENTS, S.PARENT, datasets, (S.ID, S.PARENT)))
        for i, kind, attrs in self._vertices(parent):
            if kind == DATASET_VERSION and i.startswith(parent[i] + "@"):
                self.versions.setdefault(parent[i], {})[i] = attrs

    def _vertices(self, ids: Iterable[str]) -> list[tuple[str, str, dict[str, str]]]:
        """(id, type, attrs) of these vertices; the attrs not to be changed (a worker's kept rows,
        store/kept.py, convert each row once and share it)."""
        return self.stored.matching(S.VERTICES, S.ID, ids, (S.ID, S.TYPE, S.ATTRS), _vertex_row)

    def _run_attrs(self, ids: Iterable[str]) -> dict[str, dict[str, str]]:
        return {i: a for i, _, a in self._vertices(ids)}

    def named(self, datasets: set[str]) -> bool:
        """Whether a stored version of one of these datasets has a name (a version facet's)."""
        return any(a.get("datasetVersion") is not None for d in datasets for a in self.of(d).values())

    def starts(self, runs: set[str]) -> dict[str, Any]:
        """runId -> the time of its first event (its stored `Run` row's `eventTime`)."""
        attrs = self._run_attrs(run_id(r) for r in runs)
        return {r: parse_time(attrs[run_id(r)]["eventTime"]) for r in runs
                if attrs.get(run_id(r), {}).get("eventTime")}

    def _end_times(self, runs: Iterable[str]) -> None:
        """Read the end times of these producers (runIds) that were not read yet."""
        runs = {r for r in runs if r not in self._ends}
        attrs = self._run_attrs(run_id(r) for r in runs)
        for r in runs:
            end = attrs.get(run_id(r), {}).get("endTime")
            self._ends[r] = parse_time(end) if end else None

    def produced(self, loaded: set[str], since: Any = None) -> list[Produced]:
        """The stored produced versions whose producer is not among the `loaded` runs (and has an
        end time); with `since` (no loaded run has an event before it), of a dataset none of whose
        stored versions has a name, only those that end at `since` or later and the last before
        it (`left_out` names the others). Every loaded run started at `since` or later, so the
        version it read (the last that ended before its start) is among these; the ones left out
        come before every version the loaded runs produce, in the bundle before the new events and
        after. A dataset's stored versions are numbered in the order of their ends (the stored rows
        are the full derivation's), so they are taken newest first, and the producers' end times
        read only for those taken (a few first, then the rest if these all end after `since`)."""
        out: list[Produced] = []
        self.left_out = set()
        for d in sorted(self.versions):
            made = sorted(((int(a["version"]), i, a) for i, a in self.versions[d].items()
                           if a.get("producedBy") and a["producedBy"] not in loaded), reverse=True)
            trim = since is not None and not self.named({d})
            read = 0  # end times read of made[:read]: the first few, then the rest
            for n, (_, _, a) in enumerate(made):
                if n == read:
                    read = 8 if trim and n == 0 else len(made)
                    self._end_times(m[2]["producedBy"] for m in made[n:read])
                end = self._ends[a["producedBy"]]
                if end is None:
                    continue
                out.append(Produced((a["namespace"], a["name"]), a["producedBy"], end, a.get("datasetVersion")))
                if trim and end < since:
                    self.left_out.update(m[1] for m in made[n + 1:])
                    break
        return out

    def of(self, dataset: str) -> dict[str, dict[str, str]]:
        """version id -> attrs of the dataset's stored versions."""
        return self.versions.get(dataset, {})

    def existing(self, ids: Iterable[str]) -> set[str]:
        return {i for (i,) in self.stored.matching(S.ELEMENTS, S.ID, ids, (S.ID,))}


def _appended(known: _StoredVersions, before: dict[str, Any], after: dict[str, Any],
              datasets: set[str]) -> tuple[list[dict[str, Any]], set[str]]:
    """The rows to add to each dataset's stored versions and fields, from bundles of a subset of
    the events (before and after the new ones) that holds every run whose contribution changes,
    and the datasets for which that is not exact (`failed`: derive them from every run).

    A dataset's rows are the union of what each run that refers to it contributes (a produced
    version, a read `@initial`/`@version:<v>` state, the fields of a schema facet or a column
    lineage source on the version read), numbered by time. The subset's runs contributed `B`
    (in `before`) to the stored rows and contribute `A` now; the others contribute as before.
    When `B` is within `A` the new rows are the stored ones plus `A`; the numbers stay when the
    stored versions keep their order and every new version comes after them (the subset holds
    every producer; an observed version's time there is never earlier than its true time, so an
    order that looks kept is kept, and the stored `@initial`, at the epoch, is first)."""
    def rows(bundle: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
        owner = owners(bundle)
        out: dict[str, dict[str, list[dict[str, Any]]]] = {d: {"versions": [], "fields": []} for d in datasets}
        for el in bundle["elements"]:
            d = owner[el["id"]]
            if d in out and el["granularity"] in (DATASET_VERSION, FIELD):
                out[d]["versions" if el["granularity"] == DATASET_VERSION else "fields"].append(el)
        return out

    was, now = rows(before), rows(after)
    added: list[dict[str, Any]] = []
    failed: set[str] = set()
    candidates: list[dict[str, Any]] = []
    for d in sorted(datasets):
        b_ids = {el["id"] for kind in ("versions", "fields") for el in was[d][kind]}
        a_ids = {el["id"] for kind in ("versions", "fields") for el in now[d][kind]}
        if not b_ids <= a_ids:
            failed.add(d)
            continue
        stored = known.of(d)
        order = sorted(now[d]["versions"], key=lambda el: int(el["attrs"]["version"]))
        kept = [int(stored[el["id"]]["version"]) for el in order if el["id"] in stored]
        fresh = [el for el in order if el["id"] not in stored]
        if (kept != sorted(kept)
                or any(i not in a_ids and i != d + "@initial" and i not in known.left_out for i in stored)
                or (fresh and any(el["id"] in stored for el in order[order.index(fresh[0]):]))):
            failed.add(d)
            continue
        for n, el in enumerate(fresh, len(stored) + 1):
            added.append({**el, "attrs": {**el["attrs"], "version": n}})
        candidates += now[d]["fields"]
    have = known.existing(el["id"] for el in candidates)
    added += [el for el in candidates if el["id"] not in have]
    return added, failed


def _ancestry(bundle: dict[str, Any]) -> Callable[[str], frozenset[str]]:
    """id -> the ids above it in the bundle (its parents, theirs, ...), memoized."""
    parents = {el["id"]: el["parents"] for el in bundle["elements"]}
    memo: dict[str, frozenset[str]] = {}

    def above(ident: str) -> frozenset[str]:
        if ident not in memo:
            memo[ident] = frozenset()  # a cycle (never in to_bundle's output) ends here
            ps = parents.get(ident, ())
            memo[ident] = frozenset(ps).union(*(above(p) for p in ps))
        return memo[ident]

    return above


def _starts(runs: set[str], bodies: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """runId -> the time of its first event, of these runs among the events."""
    start: dict[str, Any] = {}
    for b in bodies:
        run = _run_of(b)
        if run in runs:
            when = parse_time(b["eventTime"])
            start[run] = min(start.get(run, when), when)
    return start


def _moved_readers(candidates: set[str], changed: set[str], writes: set[str],
                   bodies: list[dict[str, Any]], starts: dict[str, Any]) -> set[str]:
    """The candidates (runs that read a dataset a changed run writes) whose read may move: those
    that started after the first event of any changed run (a version a changed run produces, or
    produced, has the time of its end, after that event: a run that started no later reads
    none of them; `starts`: each candidate's first event; one without is counted in), and those
    among `bodies` that name a version of such a dataset (a version facet)."""
    first = min((parse_time(b["eventTime"]) for b in bodies if _run_of(b) in changed), default=None)
    named = {_run_of(b) for b in bodies if _run_of(b) in candidates and any(
        "version" in (ds.get("facets") or {}) and dataset_id(ds["namespace"], ds["name"]) in writes
        for ds in b.get("inputs") or ())}
    return named | {run for run in candidates if first is None or starts.get(run) is None or starts[run] > first}


def _run_of(body: dict[str, Any]) -> str | None:
    return (body.get("run") or {}).get("runId")


class _RefIndex:
    """The refs of the stored events (looked up on demand) and of the new ones (in memory)."""

    def __init__(self, stored: _Stored, new_refs: list[tuple]) -> None:
        self.stored = stored
        self.new = new_refs

    def _rows(self, column: int, values: set[str]) -> list[tuple]:
        names = ("key", "run", "parent", "dataset", "role")
        rows = self.stored.matching(REFS_TABLE, names[column], values, names)
        return rows + [r for r in self.new if r[column] in values]

    def datasets_of(self, runs: set[str]) -> set[str]:
        return {r[3] for r in self._rows(1, runs) if r[3] is not None}

    def runs_of(self, datasets: set[str]) -> set[str]:
        return {r[1] for r in self._rows(3, datasets) if r[1] is not None}

    def writes_of(self, runs: set[str]) -> set[str]:
        """The datasets these runs output (in any of their events)."""
        return {r[3] for r in self._rows(1, runs) if r[3] is not None and r[4] == ROLE_OUT}

    def readers_of(self, datasets: set[str]) -> set[str]:
        """The runs that read one of these datasets (an input or a column lineage source)."""
        return {r[1] for r in self._rows(3, datasets) if r[1] is not None and r[4] != ROLE_OUT}

    def writers_of(self, datasets: set[str]) -> set[str]:
        return {r[1] for r in self._rows(3, datasets) if r[1] is not None and r[4] == ROLE_OUT}

    def keys_of(self, runs: set[str]) -> set[str]:
        return {r[0] for r in self._rows(1, runs)}

    def below(self, runs: set[str]) -> set[str]:
        """Runs whose parent chain passes through one of `runs`."""
        out, todo = set(), set(runs)
        while todo:
            todo = {r[1] for r in self._rows(2, todo)} - out - runs
            out |= todo
        return out

    def above(self, runs: set[str]) -> set[str]:
        """The parent runs of `runs`, their parents, and so on."""
        out, todo = set(), set(runs)
        while todo:
            todo = {r[2] for r in self._rows(1, todo) if r[2] is not None} - out - runs
            out |= todo
        return out


# ---------------------------------------------------------------------------- writing
def _write(tx, meta: dict, plan: _Plan, shards: int, kept: KeptRows | None = None) -> dict:
    """Write the plan inside `tx`: in each shard it touches, every segment holding a row the plan
    replaces is rewritten without those rows (the others stay), the new rows are validated as one
    bundle and staged shard by shard, and a shard's table that has gathered more than
    SEGMENTS_PER_SHARD segments is merged into one. Returns counts and the new `shard_segments`."""
    from store.duckdb.bundle import from_dict  # deferred: the DuckDB wing, for a store on this machine
    from store.duckdb.ingest import TxTables, table_rows  # deferred: the DuckDB wing
    from store.duckdb.validate import validate  # deferred: the DuckDB wing

    old_shards: dict[str, dict[str, list[str]]] = meta.get("shard_segments") or {}
    edges_changed = plan.rebuild or bool(plan.replaced_edges)
    if plan.reshard is not None:
        old_shards, moved = plan.reshard.write(tx, kept)
        edges_changed |= moved
    out: dict[str, dict[str, list[str]]] = {s: {name: list(rel) for name, rel in segs.items()}
                                             for s, segs in old_shards.items() if not plan.rebuild}
    if plan.rebuild:
        for name, segs in (meta.get("segments") or {}).items():  # a store written before shards
            tx.drop_segments(name, segs)
        for segs in old_shards.values():
            for name, rel in segs.items():
                tx.drop_segments(name, rel)
    else:
        for s in sorted(str(s) for s in plan.shards if str(s) in out):
            for name, rel in out[s].items():
                out[s][name] = [seg for old in rel for seg in _without(tx, name, old, plan, kept)]
    # Job and Dataset elements the store already holds (from OpenLineage or elsewhere) stay as they are
    bundle = plan.bundle
    have = existing(tx, [el["id"] for el in bundle["elements"] if el["id"] in plan.static], kept=kept)
    bundle = {**bundle, "elements": [el for el in bundle["elements"]
                                     if not (el["id"] in plan.static and el["id"] in have)]}
    local = from_dict(bundle, "<openlineage>")
    tables = TxTables(tx, kept)
    resolved = validate(local, tx.catalog.merge_gsets(local.gsets).merge_types(local.types), tables.existing())
    rows = table_rows(local, resolved, tables)
    for name in S.CORE_TABLES:
        table = rows[name]
        if not table.num_rows:
            continue
        key = table.column(KEY_OF[name]).to_pylist()
        _stage_by_shard(tx, name, table, pa.array([shard_of(plan.owner[k], shards) for k in key], pa.int32()),
                        out, kept)
    for s in sorted(out):
        for name, rel in out[s].items():
            if len(rel) > SEGMENTS_PER_SHARD:
                out[s][name] = _merged(tx, name, rel, kept)
                edges_changed |= name == S.EDGES
    tx.set_catalog(resolved.catalog)
    return {"elements": rows[S.ELEMENTS].num_rows, "edges": rows[S.EDGES].num_rows,
            "edges_changed": edges_changed, "shard_segments": out}


def _stage_by_shard(tx, name: str, table: pa.Table, shard: pa.Array, out: dict[str, dict[str, list[str]]],
                    kept: KeptRows | None) -> None:
    """Stage the rows of `table` (of core table `name`) as one new segment per shard, `shard`
    naming each row's; the segments are added to `out` (shard -> table -> segments)."""
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow's compute kernels

    from store.duckdb.ingest import stored_schema  # deferred: the DuckDB wing

    for s in sorted(set(shard.to_pylist())):
        part = table.filter(pc.equal(shard, s))
        tx.append_arrow(name, part, stored_schema(name))
        _wrote(tx, kept, name, part)
        out.setdefault(str(s), {}).setdefault(name, []).append(tx.segments(name)[-1])


def _append_log(tx, name: str, rows: list[tuple], schema: pa.Schema, kept: KeptRows | None = None) -> None:
    """Append rows to one of the tables that only grow (events, refs) as a new segment, then merge
    the newest segments into one while the newest holds at least a LOG_RATIO-th of the rows of the
    one before: segments shrink by LOG_RATIO from the oldest to the newest, so a table of n rows
    keeps about log(n)/log(LOG_RATIO) segments however many commits wrote it, and a row is
    rewritten about as many times. (Lookups read every segment: one per commit would make each
    ingest slower than the last.)"""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    written = pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)
    tx.append_arrow(name, written, S.schema_json(schema))
    _wrote(tx, kept, name, written)
    segments = list(tx.segments(name))
    total, first = _rows_of(tx, segments[-1], kept), len(segments) - 1
    while first > 0:
        before = _rows_of(tx, segments[first - 1], kept)
        if total * LOG_RATIO < before:
            break
        total += before
        first -= 1
    if first < len(segments) - 1:
        files = segment_files(tx.store.storage, segments[first:])
        table = pa.concat_tables([pq.read_table(f) for f in files]).cast(schema)
        tx.drop_segments(name, segments[first:])
        tx.append_arrow(name, table, S.schema_json(schema))
        _adopt(tx, kept, name, files)


def _adopt(tx, kept: KeptRows | None, name: str, sources: list[str]) -> None:
    """The newest segment of table `name` was written with the rows of these files, one after
    another: what `kept` holds of them, it holds of that segment's file."""
    merged = _newest_file(tx, name) if kept is not None else None
    if merged is not None:
        kept.adopt(merged, sources)


def _wrote(tx, kept: KeptRows | None, name: str, table: pa.Table) -> None:
    """The newest segment of table `name` was written with this table's rows: `kept` indexes
    them from it for the next commit's lookups, without reading the file back."""
    written = _newest_file(tx, name) if kept is not None else None
    if written is not None:
        kept.wrote(written, table)


def _newest_file(tx, name: str) -> str | None:
    """The file of the newest segment of table `name`, when it is one file."""
    files = segment_files(tx.store.storage, [tx.segments(name)[-1]])
    return files[0] if len(files) == 1 else None


def _rows_of(tx, segment: str, kept: KeptRows | None = None) -> int:
    files = segment_files(tx.store.storage, [segment])
    return sum(kept.num_rows(f) if kept is not None else pq.ParquetFile(f).metadata.num_rows for f in files)


def _without(tx, name: str, segment: str, plan: _Plan, kept: KeptRows | None = None) -> list[str]:
    """The segments that replace `segment` of table `name` in the plan's commit: itself when it
    holds no row the plan replaces (only its key columns are read to tell), else a new segment of
    its other rows (none when every row goes)."""
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow's compute kernels

    from store.duckdb.ingest import stored_schema  # deferred: the DuckDB wing

    if name == S.EDGES:
        columns, gone = [S.SRC, S.PROCESS, S.DST], ["\x00".join(e) for e in plan.replaced_edges]
    else:
        columns, gone = [KEY_OF[name]], list(plan.replaced)
    if not gone:
        return [segment]
    value_set = pa.array(sorted(gone), pa.string())

    def key(table: pa.Table):
        if name == S.EDGES:
            return pc.binary_join_element_wise(*(table.column(c) for c in columns), "\x00")
        return table.column(columns[0])

    files = segment_files(tx.store.storage, [segment])
    if kept is not None and kept.fits(files, tuple(columns)):
        wanted = set(plan.replaced_edges) if name == S.EDGES else set(gone)
        if not any(kept.keys(f, columns) & wanted for f in files):
            return [segment]
    elif not any(pc.any(pc.is_in(key(pq.read_table(f, columns=columns)), value_set=value_set)).as_py()
                 for f in files):
        return [segment]
    table = pa.concat_tables([pq.read_table(f) for f in files])
    rest = table.filter(pc.invert(pc.is_in(key(table), value_set=value_set)))
    tx.drop_segments(name, [segment])
    if not rest.num_rows:
        return []
    tx.append_arrow(name, rest, stored_schema(name))
    _wrote(tx, kept, name, rest)
    return [tx.segments(name)[-1]]


def _merged(tx, name: str, segments: Sequence[str], kept: KeptRows | None = None) -> list[str]:
    """These segments of table `name` merged into one (in this transaction)."""
    from store.duckdb.ingest import stored_schema  # deferred: the DuckDB wing

    files = segment_files(tx.store.storage, segments)
    table = pa.concat_tables([pq.read_table(f) for f in files])
    tx.drop_segments(name, segments)
    tx.append_arrow(name, table, stored_schema(name))
    _adopt(tx, kept, name, files)
    return [tx.segments(name)[-1]]


# ---------------------------------------------------------------------------- a store elsewhere
def rederive_all(st, events: Sequence[Event], message: str) -> OLIngest:
    """Re-derive the whole OpenLineage part from every event, in flat `openlineage.segments`: what
    a store on a Hadoop URI gets at every ingest (through Spark), and what every store got before
    shards."""
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
        tx.append_rows(EVENTS_TABLE, [(k, e.canonical_text, f"{e.source}#{e.index}") for k, e in new.items()],
                       events_schema())
    return OLIngest(st.version, len(new), len(bodies), counts.elements, counts.edges, True)
