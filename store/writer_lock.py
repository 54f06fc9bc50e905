"""One writer per store: the lock a server (`strata serve`) holds on the store it writes.

The lock is the file `<store>/_strata/serve.lock`, `fcntl.flock`ed by the server for as long as
it runs; its text names the server (`{"url": ..., "pid": ...}`). `check(root)` is what every
commit of another process runs first (`Store.transaction`): while a live server holds the lock,
the commit fails with a UserError naming the server's URL. A lock file nobody holds (its server
died, or stopped without removing it) does not block: the kernel drops a dead process's flock.

The check costs one `stat` when no lock file exists and one open and flock attempt when one does;
only commits run it, never reads. Stores on a Hadoop URI have no lock (a server serves a folder
on this machine).
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass

from store.errors import UserError

LOCK_FILE = "_strata/serve.lock"

_HELD: dict[str, WriterLock] = {}  # store root -> the lock this process holds on it


@dataclass
class WriterLock:
    """A held writer lock; `release()` (or the process's end) frees it."""

    root: str
    path: str
    fd: int

    def release(self) -> None:
        if _HELD.get(self.root) is self and self.fd >= 0:
            del _HELD[self.root]
            try:
                os.unlink(self.path)  # a clean stop leaves no file behind (a crash leaves a stale one)
            except FileNotFoundError:
                pass
            os.close(self.fd)


def on_behalf(root: str) -> None:
    """This process commits for the process that holds the lock of the store at `root` (a
    server's folding worker, its child): its commits are not refused."""
    _HELD.setdefault(root, WriterLock(root, lock_path(root), -1))


def lock_path(root: str) -> str:
    return os.path.join(root, LOCK_FILE)


def acquire(root: str, url: str) -> WriterLock:
    """Hold the writer lock of the store at `root` (a folder) for this process, naming `url`.
    UserError when another live process holds it."""
    path = lock_path(root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UserError(f"store {root} is already served by {holder(path)}",
                        hint="stop that server, or serve another store") from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"url": url, "pid": os.getpid()}).encode("utf-8"))
    os.fsync(fd)
    lock = WriterLock(root, path, fd)
    _HELD[root] = lock
    return lock


def holder(path: str) -> str:
    """The server a lock file names (its URL and pid), as text."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return f"the server at {data['url']} (pid {data['pid']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "a server (its lock file is unreadable)"


def served_by(root: str) -> str | None:
    """The URL of the live server holding the store at `root`, or None (no lock, a stale one,
    or this process holds it)."""
    if root in _HELD:
        return None
    path = lock_path(root)
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            with open(path, encoding="utf-8") as fh:
                return str(json.load(fh).get("url") or "a server")
        except (OSError, ValueError, AttributeError):
            return "a server"
    finally:
        os.close(fd)
    return None


def check(root: str) -> None:
    """Refuse a commit to a store a live server (of another process) writes."""
    url = served_by(root)
    if url is not None:
        raise UserError(f"store {root} is served by {url}: the server is its only writer",
                        hint=f"send events to {url.rstrip('/')}/api/v1/lineage or stop the server")
