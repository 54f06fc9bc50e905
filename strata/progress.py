"""The CLI's progress display: a rich progress bar on stderr for the steps store code reports
(store/progress.py), with counts and elapsed time.

Shown only when stderr is a terminal; piped or redirected output, `--format json` consumers and
scripts see nothing. A step with a total shows a bar and `done/total`; one without shows a
spinner and the count so far. Finished steps stay on screen as one line each, with their time.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator

from store import progress as P


class _Step:
    def __init__(self, bar, task) -> None:
        self._bar, self._task = bar, task

    def advance(self, n: int = 1) -> None:
        self._bar.advance(self._task, n)

    def total(self, n: int | None) -> None:
        self._bar.update(self._task, total=n)


class RichReporter:
    """Steps as rows of one rich Progress (live on stderr while the command runs)."""

    def __init__(self, console=None) -> None:
        from rich.console import Console  # deferred: only this path needs rich
        from rich.progress import (  # deferred: only this path needs rich
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = console or Console(stderr=True)
        self.bar = Progress(SpinnerColumn(finished_text="[green]✓"), TextColumn("{task.description}"),
                            BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=self.console, transient=False)

    def start(self, name: str, total: int | None) -> _Step:
        return _Step(self.bar, self.bar.add_task(name, total=total))

    def finish(self, step: _Step) -> None:
        task = next(t for t in self.bar.tasks if t.id == step._task)
        # A step that did not know its size ends as complete, at what it counted.
        self.bar.update(step._task, total=task.completed if task.total is None else task.total,
                        completed=task.completed if task.total is None else task.total)
        self.bar.stop_task(step._task)


@contextlib.contextmanager
def shown(enabled: bool | None = None) -> Iterator[None]:
    """Show store progress for the block on a terminal (`enabled` None: when stderr is a TTY)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield
        return
    reporter = RichReporter()
    with reporter.bar, P.reporting(reporter):
        yield


def around(command):
    """Decorate a click command callback so its store steps show progress on a terminal."""
    @functools.wraps(command)
    def run(*args, **kwargs):
        with shown():
            return command(*args, **kwargs)

    return run
