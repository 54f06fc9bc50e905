"""Key bindings of the REPL (pgcli's key_bindings.py and pgbuffer.py).

Enter submits when the statement is complete (`statement_complete`): it ends in `;`, starts
with a backslash command, is empty, or is `quit`/`exit`; otherwise Enter starts a new line.
Alt-Enter (Esc then Enter) always submits. Tab completes (common part, then a menu); Enter with a
completion selected accepts it. Ctrl-C at the prompt clears the input (prompt_toolkit raises
KeyboardInterrupt, the loop catches it); Ctrl-D on an empty line exits.
"""

from __future__ import annotations

from prompt_toolkit.application import get_app
from prompt_toolkit.filters import Condition, completion_is_selected
from prompt_toolkit.key_binding import KeyBindings

from strata.repl_complete import tokenize

QUIT_WORDS = ("quit", "exit", ":q")


def _code(text: str) -> list:
    """Tokens of `text` without comments (strings are single tokens, closed or not)."""
    return [t for t in tokenize(text) if t.kind != "comment"]


def statement_complete(text: str) -> bool:
    """True when Enter should submit `text` rather than insert a new line."""
    stripped = text.strip()
    if not stripped or stripped.startswith("\\") or stripped.lower() in QUIT_WORDS:
        return True
    toks = _code(stripped)
    return bool(toks) and toks[-1].text == ";"


def strip_statement(text: str) -> str:
    """The statement without surrounding blanks, trailing comments and its final `;`."""
    stripped = text.strip()
    if stripped.startswith("\\"):
        return stripped
    toks = _code(stripped)
    if toks and toks[-1].text == ";":
        return stripped[: toks[-1].start].rstrip()
    return stripped


def key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("tab")
    def _tab(event) -> None:
        """Tab completes the common part, then walks the menu (at the start of a line: indents)."""
        buf = event.app.current_buffer
        if buf.complete_state:
            buf.complete_next()
        elif not buf.document.current_line_before_cursor.strip():
            buf.insert_text("    ")
        else:
            buf.start_completion(insert_common_part=True)

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
