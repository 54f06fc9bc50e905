"""The one error hierarchy every user-facing Strata error belongs to.

`UserError` means the user's input was wrong (exit code 2 at the CLI); any other `StrataError`
is a failure of the system or the environment (exit code 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


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

    # Names the language of `source` in a rendered message ("iql", "tree pattern"); None: none.
    prefix: ClassVar[str | None] = None

    def render(self) -> str:
        """The message, then (when the position is known) the source line with carets under the
        offending characters, then the hint: :func:`format_error`, for every Strata error."""
        width = max(1, self.span[1] - self.span[0]) if self.span is not None else 1
        return format_error(self.message, self.source, self.line, self.column, width, self.hint,
                            self.prefix)


class UserError(StrataError):
    """The user's input is wrong (bad bundle, bad query, unknown name): CLI exit code 2."""


class BundleError(UserError):
    """A bundle (or triples file) failed validation; nothing was committed."""


class StoreError(StrataError):
    """The store cannot be read or written (I/O, corrupt manifest)."""


class ConcurrentWriteError(UserError):
    """Another writer committed first; this commit was abandoned and nothing was written."""


# ---- rendering (pure) ---------------------------------------------------------------------------
def source_line(source: str, line: int) -> str:
    """Line `line` (1-based) of `source`, or '' when out of range."""
    lines = source.splitlines() or [""]
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def caret_block(source: str, line: int, column: int, width: int = 1) -> str:
    """The offending line indented by two spaces, with carets under `width` characters.

    Tabs before the column are kept so the carets line up in a terminal.
    """
    text = source_line(source, line)
    width = max(1, min(width, max(1, len(text) - column + 1)))
    pad = "".join("\t" if ch == "\t" else " " for ch in text[: max(0, column - 1)])
    return f"  {text}\n  {pad}{'^' * width}"


def format_error(
    message: str,
    source: str | None = None,
    line: int | None = None,
    column: int | None = None,
    width: int = 1,
    hint: str | None = None,
    prefix: str | None = None,
) -> str:
    """Render like:

        iql: unknown type 'WebPag' (line 1, column 20)
          select p.id from WebPag p
                           ^^^^^^
          hint: did you mean 'WebPage'?
    """
    head = f"{prefix}: {message}" if prefix else message
    if line is not None and column is not None:
        head += f" (line {line}, column {column})"
    parts = [head]
    if source is not None and line is not None and column is not None:
        parts.append(caret_block(source, line, column, width))
    if hint:
        parts.append(f"  hint: {hint}")
    return "\n".join(parts)


def no_vertex_ids(cols) -> UserError:
    """A result given as vertex ids (export, show) with no column of them."""
    return UserError(
        f"no column of vertex ids in the result: its columns are {cols} and none holds strings",
        hint="select vertex ids, e.g. `select d.id from Row d ...`",
    )

