"""A progress reporter that fails a step on purpose (store/progress.py's reporter protocol)."""

from __future__ import annotations

import os
import signal

from store import progress


class FailingReporter:
    """A progress reporter that fails (or kills this process) when a step with `name` starts."""

    def __init__(self, name: str, kill: bool = False) -> None:
        self.name, self.kill = name, kill

    def start(self, name: str, total):
        if name == self.name:
            if self.kill:
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"failed at {name}")
        return progress.SILENT

    def finish(self, step) -> None:
        pass
