"""The server's state: the store it writes (under its writer lock), the event log in front of
it, and the committed versions it reads (docs/serve.md).

`Service.open(settings, url)`:
1. holds the store's writer lock (store/writer_lock.py), naming `url`;
2. folds what the event log holds from an earlier run into the store (crash recovery);
3. starts the log's writer (`GroupCommit`: one fsync per batch of requests) and the folder
   (`Folder`: the log's events into store commits through `ingest_events`, one commit at a time),
   which also keeps the component index current (`keep_index`): once no event is waiting, or
   INDEX_LAG_S after the index last caught up, it updates the index in the commits' worker.

Reads open a `Store` at one committed version and keep it (with its DuckDB relations and the
Marquez view of its events) for the next reads of that version: `snapshot(as_of)`. The newest
version's Marquez view is built in the background as the server starts (`_warm`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from store import Store
from store.errors import UserError
from store.eventlog import LOG_DIR, EventLog, Folder, GroupCommit, Logged
from store.interop.ol_commit import EVENTS_TABLE
from store.interop.openlineage import canonical, canonical_key
from store.segments import parquet_files, segment_files
from store.writer_lock import WriterLock, acquire
from strata.serve import fold
from strata.serve.marquez_model import MarquezView

log = logging.getLogger("strata.serve")

KEEP_SNAPSHOTS = 8  # committed versions kept open for reads
# least seconds from one fold's start to the next ($STRATA_SERVE_FOLD_GAP): folding back to back
# would take the CPU from acknowledging; a pause lets the next fold take a bigger batch
FOLD_GAP_S = 0.5
# most seconds the index may lag the committed events while events keep arriving ($STRATA_SERVE_INDEX_LAG)
INDEX_LAG_S = 30.0


@dataclass
class Snapshot:
    """One committed version, open for reads: the store, a lock that serializes its DuckDB
    connection's users, and the Marquez view of its events (`Service.marquez`, on first use)."""

    store: Store
    lock: threading.Lock = field(default_factory=threading.Lock)
    marquez: MarquezView | None = None
    ui: Any = None  # the web UI's view of it (strata/serve/ui_model.py), on first use
    items: Any = None  # the web UI's reader of its items (strata/serve/ui_items.py), on first use

    @property
    def version(self) -> int:
        return self.store.version


@dataclass
class _Newest:
    """The Marquez view of the newest version built so far: extended, not rebuilt, by the next."""

    version: int
    segments: tuple[str, ...]
    view: MarquezView
    owner: Snapshot


def event_segments(st: Store) -> tuple[str, ...]:
    entry = st.manifest.tables.get(EVENTS_TABLE)
    return tuple(entry.segments) if entry is not None else ()


def read_events(st: Store, segments: tuple[str, ...], leave_out: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The event bodies of these segments of the store's `openlineage_events` table, but those
    whose key is in ``leave_out``."""
    out: list[dict[str, Any]] = []
    left_out = pa.array(list(leave_out), pa.string()) if leave_out else None
    for f in segment_files(st.storage, segments):
        table = pq.read_table(f, columns=["event"] if left_out is None else ["key", "event"])
        if left_out is not None:
            table = table.filter(pc.invert(pc.is_in(table.column("key"), value_set=left_out)))
        out += [json.loads(t) for t in table.column("event").to_pylist()]
    return out


def added_events(st: Store, before: tuple[str, ...], now: tuple[str, ...]) -> list[dict[str, Any]] | None:
    """The events that segments ``now`` of the events table hold and segments ``before`` (of an
    earlier version) did not, read from the segments that differ alone: the table only grows, a
    commit appending a segment and merging the newest ones into one (store/interop/ol_commit.py
    `_append_log`), their rows again. None when a segment of ``before`` cannot be read."""
    kept = set(now)
    gone = [s for s in before if s not in kept]
    had: set[str] = set()
    for seg in gone:
        files = parquet_files(st.storage.file_path(seg))
        if not files:
            return None
        for f in files:
            had.update(pq.read_table(f, columns=["key"]).column("key").to_pylist())
    known = set(before)
    return read_events(st, tuple(s for s in now if s not in known), frozenset(had))


class Service:
    """The store, its log and its snapshots (module docstring)."""

    read_only = False

    def __init__(self, root: str, url: str, engine: str | None = None, keep_index: bool = True) -> None:
        self.root = Store.path_of(root)
        if "://" in self.root:
            raise UserError(f"strata serve serves a store in a folder of this machine, not {self.root}",
                            hint="pass --store with a local folder")
        self.url = url
        self.engine = engine
        self.lock: WriterLock = acquire(self.root, url)
        self._pool: ProcessPoolExecutor | None = None  # the commits' worker, started on the first
        self.version = Store.open(self.root, engine=engine).version
        self.log = EventLog(os.path.join(self.root, LOG_DIR))
        self.keep_index = keep_index
        self.index = {"version": None, "updates": 0, "seconds": None, "error": None}  # /api/v1/health
        self._index_lag = float(os.environ.get("STRATA_SERVE_INDEX_LAG", INDEX_LAG_S))
        self._indexed_at = time.monotonic()
        self.folder = Folder(self.log, self._commit, gap_s=float(os.environ.get("STRATA_SERVE_FOLD_GAP", FOLD_GAP_S)),
                             after=self._keep_index)
        self._snapshots: OrderedDict[int, Snapshot] = OrderedDict()
        self._snap_lock = threading.Lock()
        self._view_lock = threading.Lock()
        self._newest: _Newest | None = None
        self.recovered = self.folder.fold_all()  # what a crash left in the log, before serving
        self.writer = GroupCommit(self.log, on_durable=self.folder.notify)
        self._waiting: list[tuple[list[Logged], asyncio.Future]] = []  # requests of this loop turn: append
        self.folder.start()
        self._warm()

    def _warm(self) -> None:
        """Build the Marquez view of the newest version in the background, so that the first
        lineage read after a start does not pay for reading every event (a request for it waits
        for this build instead of starting its own)."""
        def build() -> None:
            try:
                if self.version:
                    self.marquez(self.snapshot())
            except Exception:  # noqa: BLE001 - a read builds it again and reports what fails
                log.exception("building the Marquez view of version %d failed", self.version)

        threading.Thread(target=build, name="strata-warm", daemon=True).start()

    def _worker(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=fold.init_worker, initargs=(os.getpid(),))
        return self._pool

    def _keep_index(self, idle: bool) -> None:
        """Bring the component index up to the newest version in the worker (fold.index), when no
        event is waiting or the index lags by INDEX_LAG_S; a failure is logged and shown by health."""
        if not self.keep_index or self.index["version"] == self.version:
            return
        if not idle and time.monotonic() - self._indexed_at < self._index_lag:
            return
        started = time.monotonic()
        try:
            version, mode = self._worker().submit(fold.index, self.root, self.engine).result()
        except BrokenProcessPool:
            self._pool = None
            self.index["error"] = "the worker process died"
            return
        except Exception as e:  # noqa: BLE001 - the folder lives on; the index waits for the next round
            self.index["error"] = f"{type(e).__name__}: {e}"
            log.exception("updating the component index failed")
            return
        self._indexed_at = time.monotonic()
        self.version = max(self.version, version)
        self.index.update(version=version, updates=self.index["updates"] + 1,
                          seconds=round(self._indexed_at - started, 3), error=None)
        log.info("component index at version %d (%s, %.2f s)", version, mode, self._indexed_at - started)

    def _commit(self, paths: list[str]) -> tuple[int, int]:
        """Commit the events of these closed log segments in the worker process, which reads them
        (strata/serve/fold.py): (distinct events, lines read). A worker that died is replaced,
        and the segments stay in the log for the next round."""
        try:
            version, new, events, read = self._worker().submit(fold.commit, self.root, self.engine, paths).result()
        except BrokenProcessPool:
            self._pool = None
            raise
        if events:
            self.version = version
            log.info("folded %d event(s) (%d new) into version %d", events, new, version)
        return events, read

    async def append(self, bodies: list[dict[str, Any]]) -> None:
        """Append validated events to the log; returns once they are durable (fsynced)."""
        records = []
        for b in bodies:
            text = canonical(b)  # encoded once: its SHA-256 is the key, and the log stores it
            records.append(Logged(canonical_key(text), b, text))
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._submit_waiting, loop)
        self._waiting.append((records, waiter))
        await waiter

    def _submit_waiting(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand the events of the requests that reached `append` in this turn of the event loop to
        the log's writer as one submission; their waiters are resolved in the loop, all at once,
        when it is durable (one crossing between the threads each way, not one per request)."""
        batch, self._waiting = self._waiting, []
        durable = self.writer.submit([r for records, _ in batch for r in records])
        durable.add_done_callback(lambda done: loop.call_soon_threadsafe(_resolve, batch, done))

    def snapshot(self, as_of: int | None = None) -> Snapshot:
        """The committed version `as_of` (None: the newest committed), open for reads."""
        version = self.version if as_of is None else as_of
        if as_of is not None and not 0 < as_of <= self.version:
            raise UserError(f"store has no version {as_of} to read as of (versions 1..{self.version})",
                            hint="GET /api/strata/v1/versions lists them")
        with self._snap_lock:
            snap = self._snapshots.get(version)
            if snap is None:
                # version 0, the empty store, has no manifest to read as of: the newest is read
                # (a Store keeps the manifest it opened with), and the snapshot kept under its version
                st = Store.open(self.root, engine=self.engine, as_of=version or None)
                version = st.version
                snap = self._snapshots[version] = Snapshot(st)
                while len(self._snapshots) > KEEP_SNAPSHOTS:
                    self._snapshots.popitem(last=False)
            else:
                self._snapshots.move_to_end(version)
            return snap

    def marquez(self, snap: Snapshot) -> MarquezView:
        """The Marquez view of a snapshot's events. The newest view is extended with the events a
        later version added (`added_events`) when they all come after it (the usual case: events
        arrive in time order), else a view is built from every event of the version."""
        with self._view_lock:
            if snap.marquez is not None:
                return snap.marquez
            segments = event_segments(snap.store)
            newest = self._newest
            added = (added_events(snap.store, newest.segments, segments)
                     if newest is not None and newest.version < snap.version else None)
            if added is not None and newest.view.extend(added):
                newest.owner.marquez = None  # the view now holds later events: rebuilt if asked
                view = newest.view
            else:
                view = MarquezView.build(read_events(snap.store, segments))
            snap.marquez = view
            if newest is None or snap.version >= newest.version:
                self._newest = _Newest(snap.version, segments, view, snap)
            return view

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "store": self.root, "version": self.version,
                "log": {"appended": self.log.appended, "fsyncs": self.log.fsyncs,
                        "segments": len(self.log.segments())},
                "folder": {"folded": self.folder.folded, "commits": self.folder.commits,
                           "error": self.folder.last_error},
                "index": {"kept": self.keep_index, **self.index}}

    def close(self) -> None:
        """Write what is pending to the log, finish the commit in progress and fold the rest,
        then release the lock."""
        self.writer.stop()
        self.folder.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self.log.close()
        self.lock.release()


def _resolve(batch: list[tuple[list[Logged], asyncio.Future]], durable: Future) -> None:
    error = durable.exception()
    for _, waiter in batch:
        if waiter.done():  # its request was cancelled meanwhile
            continue
        if error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)


class ReadOnlyService(Service):
    """A store served for reading only (`strata ui`): no writer lock, no event log, no folder;
    the newest version is the one committed when it opened (docs/ui.md)."""

    read_only = True

    def __init__(self, root: str, url: str, engine: str | None = None) -> None:  # noqa: D107
        self.root = Store.path_of(root)
        if "://" in self.root:
            raise UserError(f"strata ui reads a store in a folder of this machine, not {self.root}",
                            hint="pass --store with a local folder")
        if not os.path.isdir(self.root):
            raise UserError(f"no store at {self.root}",
                            hint="pass --store with a store's folder (strata ingest or strata capture makes one)")
        self.url, self.engine = url, engine
        st = Store.open(self.root, engine=engine)
        self.version = st.version
        self._snapshots = OrderedDict()
        self._snap_lock = threading.Lock()
        self._view_lock = threading.Lock()
        self._newest = None
        self.recovered = 0
        self._warm()

    async def append(self, bodies: list[dict[str, Any]]) -> None:
        raise UserError("this server is read-only (strata ui): it takes no events",
                        hint="run strata serve on the store to receive OpenLineage events")

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "store": self.root, "version": self.version, "readOnly": True}

    def close(self) -> None:
        self._snapshots.clear()
