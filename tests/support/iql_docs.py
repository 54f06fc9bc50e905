"""The fenced code blocks of docs/iql.md (its examples, checked by tests/iql)."""

from __future__ import annotations

from support.paths import ROOT


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of each fenced code block of a Markdown text."""
    blocks, info, body = [], None, []
    for line in text.splitlines():
        if info is None and line.startswith("```"):
            info, body = line[3:].strip(), []
        elif info is not None and line.strip() == "```":
            blocks.append((info, "\n".join(body)))
            info = None
        elif info is not None:
            body.append(line)
    return blocks


BLOCKS = fenced_blocks((ROOT / "docs" / "iql.md").read_text(encoding="utf-8"))
