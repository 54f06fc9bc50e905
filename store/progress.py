"""Progress of long store operations (ingest, index, capture commits, export), without a UI here.

Store code reports what it is doing through the reporter of the current context:

    from store import progress

    with progress.step("components", total=n_edges) as step:
        for chunk in chunks:
            ...
            step.advance(len(chunk))

`step(name, total)` opens a step (total None: unknown size); `advance(n)` counts work done in
it. Nothing is shown unless an application installs a reporter with `reporting(reporter)`:
the `strata` CLI installs a rich progress bar on a terminal and nothing otherwise
(strata/progress.py), so library users, tests and piped output see no progress at all.
A reporter must be cheap to call: steps advance per chunk of work, never per row.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Protocol


class Step(Protocol):
    def advance(self, n: int = 1) -> None: ...

    def total(self, n: int | None) -> None: ...


class Reporter(Protocol):
    def start(self, name: str, total: int | None) -> Step: ...

    def finish(self, step: Step) -> None: ...


class _Silent:
    """The reporter when none is installed: does nothing."""

    def start(self, name: str, total: int | None) -> _Silent:
        return self

    def finish(self, step: Step) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def total(self, n: int | None) -> None:
        pass


SILENT = _Silent()
_CURRENT: contextvars.ContextVar[Reporter] = contextvars.ContextVar("strata_progress", default=SILENT)


def current() -> Reporter:
    return _CURRENT.get()


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Install `reporter` for the code inside the block (and restore the previous one after)."""
    token = _CURRENT.set(reporter)
    try:
        yield reporter
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def step(name: str, total: int | None = None) -> Iterator[Step]:
    """One named step of a long operation, reported to the current reporter while it runs."""
    reporter = current()
    handle = reporter.start(name, total)
    try:
        yield handle
    finally:
        reporter.finish(handle)
