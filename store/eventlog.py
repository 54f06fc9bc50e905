"""A durable, append-only log of OpenLineage events in front of a store (docs/serve.md).

A server acknowledges an event once it is in this log and fsynced, not once it is committed to
the store: an acknowledgement costs a write and a shared fsync, not a Parquet commit. Events
then move from the log into store commits in batches (`Folder`), and a segment of the log is
deleted once every event in it is committed.

    <store>/_strata/serve/events-00000001.jsonl    one JSON line per event: {"key": ..., "event": {...}}

- `EventLog` appends batches of lines to the newest segment and fsyncs once per batch; `rotate`
  starts a new segment, so the older ones are closed and can be folded.
- `GroupCommit` is the one writer thread: every request's events wait in a queue; the thread
  takes everything pending, appends it, fsyncs ONCE, and resolves every waiter's future. So the
  requests that arrive together share one fsync.
- `Folder` is the one committing thread: as soon as the previous commit finished and events are
  waiting, it rotates the log, has the closed segments' events committed with `commit(paths)`
  (the caller's function, which reads them with `distinct`: the server's reads them in its
  commits' worker and commits them with `store.interop.ol_commit.ingest_events`), then deletes
  those segments.

Crash semantics: an event is acknowledged only after its fsync, so a crash loses no acknowledged
event; a torn last line (a write the crash cut short, never acknowledged) is skipped. On start
every segment left over is closed and folded first. Folding the same event twice is harmless:
the store keeps an event once (its key is the SHA-256 of its canonical JSON).

Plain Python: no Spark, no pandas, no store import beyond errors.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

LOG_DIR = "_strata/serve"
_SEGMENT_RE = re.compile(r"^events-(\d{8})\.jsonl$")

log = logging.getLogger("strata.eventlog")


@dataclass(frozen=True)
class Logged:
    """One event of the log: its key (sha256 of its canonical JSON) and its JSON body; `text`,
    when given, is the body as JSON text (its canonical JSON: written as it is, not encoded again;
    read back with the line, for the commit)."""

    key: str
    body: dict[str, Any]
    text: str | None = None

    def line(self) -> str:
        if self.text is None:
            return json.dumps({"key": self.key, "event": self.body}, separators=(",", ":"), ensure_ascii=False) + "\n"
        return f'{{"key":"{self.key}","event":{self.text}}}\n'


def segment_name(seq: int) -> str:
    return f"events-{seq:08d}.jsonl"


class EventLog:
    """The log's segments in `folder`; appends go to the newest one (see module docstring)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self._lock = threading.Lock()
        existing = self.segments()
        self._seq = (existing[-1] if existing else 0) + 1  # leftovers stay closed: folded on start
        self._file = None
        self.appended = 0  # events appended since this log was opened
        self.fsyncs = 0

    def segments(self) -> list[int]:
        """The sequence numbers of the segments on disk, oldest first."""
        return sorted(int(m.group(1)) for n in os.listdir(self.folder) if (m := _SEGMENT_RE.match(n)))

    def path(self, seq: int) -> str:
        return os.path.join(self.folder, segment_name(seq))

    def append(self, records: Sequence[Logged]) -> None:
        """Write `records` to the newest segment and fsync once; durable when this returns."""
        data = "".join(r.line() for r in records).encode("utf-8")
        with self._lock:
            if self._file is None:
                self._file = open(self.path(self._seq), "ab")  # noqa: SIM115 - held open across appends
                _fsync_dir(self.folder)  # the new segment's name is durable too
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())
            self.appended += len(records)
            self.fsyncs += 1

    def rotate(self) -> list[int]:
        """Close the newest segment (later appends start a new one); the closed segments."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
                self._seq += 1
            return [s for s in self.segments() if s < self._seq]

    def read(self, seq: int) -> list[Logged]:
        """The events of segment `seq`; a torn last line (never acknowledged) is skipped."""
        return read_segment(self.path(seq))

    def delete(self, seqs: Sequence[int]) -> None:
        for s in seqs:
            os.unlink(self.path(s))
        if seqs:
            _fsync_dir(self.folder)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def read_segment(path: str) -> list[Logged]:
    """The events of the segment at `path`; a torn last line (never acknowledged) is skipped."""
    out: list[Logged] = []
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            out.append(Logged(rec["key"], rec["event"], _event_text(line, rec["key"])))
        except (ValueError, KeyError, TypeError):
            if n < len(lines) - 1 and any(x.strip() for x in lines[n + 1:]):
                log.warning("event log %s: line %d is not an event; skipped", path, n + 1)
            # else: the torn tail of a write a crash cut short, never acknowledged
    return out


def _event_text(line: bytes, key: str) -> str | None:
    """The event's JSON text in a line `Logged.line` wrote with its canonical JSON (the server's
    appends), so that the commit need not encode it again; None for any other line. The text is
    canonical exactly when its SHA-256 is the key."""
    head = f'{{"key":"{key}","event":'.encode()
    if not (line.startswith(head) and line.endswith(b"}")):
        return None
    text = line[len(head):-1]
    return text.decode("utf-8") if hashlib.sha256(text).hexdigest() == key else None


def distinct(paths: Sequence[str]) -> tuple[list[Logged], int]:
    """The events of these segments, each key once (its first line), and how many lines they held."""
    events: dict[str, Logged] = {}
    read = 0
    for path in paths:
        for e in read_segment(path):
            events.setdefault(e.key, e)
            read += 1
    return list(events.values()), read


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class GroupCommit:
    """The log's one writer thread: batches pending appends, one fsync per batch (module
    docstring). `submit(records)` returns a future resolved once they are durable."""

    def __init__(self, log_: EventLog, on_durable: Callable[[int], None] = lambda n: None) -> None:
        self.log = log_
        self._queue: queue.SimpleQueue[tuple[Sequence[Logged], Future] | None] = queue.SimpleQueue()
        self._on_durable = on_durable
        self._thread = threading.Thread(target=self._run, name="strata-eventlog", daemon=True)
        self._thread.start()

    def submit(self, records: Sequence[Logged]) -> Future:
        fut: Future = Future()
        self._queue.put((records, fut))
        return fut

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            batch = [item]
            while True:  # everything that arrived meanwhile shares this fsync
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(b is None for b in batch)
            waiting = [b for b in batch if b is not None]
            if waiting:
                try:
                    self.log.append([r for records, _ in waiting for r in records])
                except OSError as e:
                    for _, fut in waiting:
                        fut.set_exception(e)
                else:
                    for _, fut in waiting:
                        fut.set_result(None)
                    self._on_durable(sum(len(records) for records, _ in waiting))
            if stop:
                return

    def stop(self) -> None:
        """Write what is pending, then end the thread."""
        self._queue.put(None)
        self._thread.join()


class Folder:
    """The one committing thread: moves the log's events into store commits (module docstring).

    commit(paths) commits the events of the closed segments at `paths` (each key once: `distinct`)
    and returns (distinct events, lines read); it may raise. The segments are deleted only after
    it returned, so a failed commit is retried on the next
    round (after `retry_s`) and at the next start. `after(idle)`, when given, runs in this thread
    after each round, told whether no event is waiting (the server's index upkeep),
    but not once a stop was asked for."""

    def __init__(self, log_: EventLog, commit: Callable[[list[Logged]], Any], retry_s: float = 1.0,
                 gap_s: float = 0.0, after: Callable[[bool], Any] | None = None) -> None:
        self.log = log_
        self._commit = commit
        self._after = after  # after(idle) after each round; catches its own errors
        self._retry_s = retry_s
        self._gap_s = gap_s  # least time from one commit's start to the next's: bigger batches
        self._cond = threading.Condition()
        self._pending = 0
        self._stopping = False
        self.folded = 0  # log lines this folder took into commits (duplicates and stored ones too)
        self.commits = 0
        self.last_error: str | None = None
        self._thread: threading.Thread | None = None

    def fold_all(self) -> int:
        """Fold every closed segment now, in this thread (the start's crash recovery); the
        number of distinct events committed (or found stored already)."""
        seqs = self.log.rotate()
        if not seqs:
            return 0
        events, read = self._commit([self.log.path(s) for s in seqs])
        if events:
            self.commits += 1
        self.log.delete(seqs)
        self.folded += read  # every line of the log, duplicates included (health compares it to `appended`)
        return events

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="strata-folder", daemon=True)
        self._thread.start()

    def notify(self, n: int) -> None:
        """`n` more events are durable in the log."""
        with self._cond:
            self._pending += n
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if not self._pending and self._stopping:
                    return
                self._pending = 0
            started = time.monotonic()
            try:
                self.fold_all()
                self.last_error = None
                with self._cond:
                    idle, stopping = not self._pending, self._stopping
                if self._after is not None and not stopping:  # a stop does not wait for the index
                    self._after(idle)
            except Exception as e:  # noqa: BLE001 - the thread must live on; the log keeps the events
                self.last_error = f"{type(e).__name__}: {e}"
                log.exception("folding the event log into the store failed; retrying")
                with self._cond:
                    self._pending += 1  # try again
                time.sleep(self._retry_s)
                with self._cond:
                    if self._stopping:
                        return
            until = started + self._gap_s
            with self._cond:  # events that arrive meanwhile wait for the next round; a stop cuts the gap short
                while not self._stopping and (rest := until - time.monotonic()) > 0:
                    self._cond.wait(rest)

    def stop(self) -> None:
        """Finish the commit in progress and fold what is left, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
