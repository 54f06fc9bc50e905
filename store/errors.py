"""The one error hierarchy every user-facing Strata error belongs to.

`UserError` means the user's input was wrong (exit code 2 at the CLI); any other `StrataError`
is a failure of the system or the environment (exit code 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class StrataError(Exception):
    """Base of all Strata errors: a message plus optional position and hint."""

    message: str
    hint: str | None = None
    line: int | None = None
    column: int | None = None
    span: tuple[int, int] | None = None
    source: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        text = self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class UserError(StrataError):
    """The user's input is wrong (bad bundle, bad query, unknown name): CLI exit code 2."""


class BundleError(UserError):
    """A bundle (or triples file) failed validation; nothing was committed."""


class StoreError(StrataError):
    """The store cannot be read or written (I/O, corrupt manifest)."""


class ConcurrentWriteError(UserError):
    """Another writer committed first; this commit was abandoned and nothing was written."""


class StoreNotFoundError(UserError):
    """Reading a store that does not exist yet."""
