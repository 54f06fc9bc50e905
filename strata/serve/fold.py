"""The server's commits, in a worker process of their own (strata/serve/service.py).

A commit reads the events of the event log's closed segments (so the server's process neither
parses them again nor sends them over) and derives the rows they change
(store/interop/ol_commit.py): up to seconds of Python for a big batch. In the server's process it
would hold the interpreter's lock from the requests being answered, so it runs here, in one
worker process started with `spawn` (it imports no server code); the server waits for its answer.
The worker commits on behalf of the server, which holds the store's writer lock.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from store import Store
from store.eventlog import distinct
from store.interop.ol_commit import ingest_events
from store.interop.openlineage import Event
from store.kept import KeptRows
from store.writer_lock import on_behalf

_STORES: dict[str, Store] = {}  # root -> the store this worker commits to, kept open across commits
# root -> what the commits read of the store's files, for the next commits (store/kept.py): the
# worker is the store's only writer while its server holds the lock, and a file never changes
_KEPT: dict[str, KeptRows] = {}


def init_worker(server: int) -> None:
    """The worker ignores SIGINT and SIGTERM: a Ctrl-C reaches the whole process group, and the
    server, which gets it too, lets the commit in progress finish before it stops the worker.
    It ends when the server (pid `server`) is gone, killed even before this worker started:
    nothing else would stop it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == server:
            time.sleep(0.2)
        os._exit(1)  # a commit cut short publishes nothing: the server's log still holds its events

    threading.Thread(target=watch, name="strata-fold-watch", daemon=True).start()


def _store(root: str, engine: str | None) -> Store:
    """The store this worker commits to on behalf of the server, kept open, at its newest version."""
    st = _STORES.get(root)
    if st is None:
        on_behalf(root)
        st = _STORES[root] = Store.open(root, engine=engine)
    st.refresh()
    return st


def commit(root: str, engine: str | None, paths: list[str]) -> tuple[int | None, int, int, int]:
    """Commit the validated events of these closed event-log segments, read here (each key once),
    the new ones among them: (version, new events, distinct events, lines read); no commit and
    version None when the segments hold no event."""
    events, read = distinct(paths)
    if not events:
        return None, 0, 0, read
    st = _store(root, engine)
    r = ingest_events(st, [Event("strata serve", i, e.body, e.text) for i, e in enumerate(events)],
                      f"strata serve: {len(events)} event(s)", kept=_KEPT.setdefault(root, KeptRows()))
    return r.version, r.new_events, len(events), read


def index(root: str, engine: str | None) -> tuple[int, str]:
    """Bring the component index up to the newest version, built in this process
    (store/indexing.py; a store too big for that is left to `strata index`): (version, mode)."""
    from store.engine import Engine  # deferred: the index build's modules
    from store.indexing import choose_builder, update_index  # deferred: the index build's modules

    st = _store(root, engine)
    choice = choose_builder(st)
    if choice.engine is not Engine.LOCAL:
        return st.version, f"left to `strata index`: {choice.reason}"
    meta = update_index(st)
    st.refresh()
    return st.version, str(meta.get("mode", "built"))
