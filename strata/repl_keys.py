"""Key bindings of the REPL (pgcli's key_bindings.py and pgbuffer.py).

Enter submits when the statement is complete (`statement_complete`): it ends in `;`, starts
with a backslash command, is empty, or is `quit`/`exit`; otherwise Enter starts a new line.
Alt-Enter (Esc then Enter) always submits. Tab opens the completion menu; Enter with a
completion selected accepts it. Ctrl-C at the prompt clears the input (prompt_toolkit raises
KeyboardInterrupt, the loop catches it); Ctrl-D on an empty line exits.
"""

from __future__ import annotations

import re

from prompt_toolkit.application import get_app
from prompt_toolkit.filters import Condition, completion_is_selected, has_completions
from prompt_toolkit.key_binding import KeyBindings

_TRAILING_COMMENTS = re.compile(r"(\s|--[^\n]*)*\Z")

QUIT_WORDS = ("quit", "exit", ":q")


def statement_complete(text: str) -> bool:
    """True when Enter should submit `text` rather than insert a new line."""
    stripped = text.strip()
    if not stripped or stripped.startswith("\\") or stripped.lower() in QUIT_WORDS:
        return True
    body = _strip_trailing_comments(stripped)
    return body.endswith(";") and not _open_string(body)


def _strip_trailing_comments(text: str) -> str:
    lines = text.rstrip().split("\n")
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
        lines.pop()
    return "\n".join(lines).rstrip()


def _open_string(text: str) -> bool:
    """Whether `text` ends inside a string literal (odd number of quotes outside comments)."""
    in_string = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "'":
                in_string = False
        elif ch == "'":
            in_string = True
        elif text.startswith("--", i):
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        i += 1
    return in_string


def strip_statement(text: str) -> str:
    """The statement without surrounding blanks and its final `;` (what IQL runs)."""
    body = _strip_trailing_comments(text.strip())
    return body[:-1].rstrip() if body.endswith(";") else body


def key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("tab", filter=~has_completions)
    def _tab(event) -> None:
        """Tab opens completions (or indents at the start of a line)."""
        buf = event.app.current_buffer
        before = buf.document.current_line_before_cursor
        if not before.strip():
            buf.insert_text("    ")
        else:
            buf.start_completion(select_first=False)

    @kb.add("enter", filter=completion_is_selected)
    def _accept_completion(event) -> None:
        event.current_buffer.complete_state = None

    @kb.add("escape", "enter")
    def _force_submit(event) -> None:
        event.current_buffer.validate_and_handle()

    return kb


def multiline_filter() -> Condition:
    """Enter inserts a new line while this holds (the statement is not complete yet)."""
    return Condition(lambda: not statement_complete(get_app().current_buffer.text))
