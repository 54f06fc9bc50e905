"""Pure rendering of positioned error messages (no Spark, no Lark)."""

from __future__ import annotations


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
    prefix: str = "iql",
) -> str:
    """Render like:

        iql: unknown type 'WebPag' (line 1, column 20)
          select p.id from WebPag p
                           ^^^^^^
          hint: did you mean 'WebPage'?
    """
    head = f"{prefix}: {message}"
    if line is not None and column is not None:
        head += f" (line {line}, column {column})"
    parts = [head]
    if source is not None and line is not None and column is not None:
        parts.append(caret_block(source, line, column, width))
    if hint:
        parts.append(f"  hint: {hint}")
    return "\n".join(parts)
