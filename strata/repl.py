"""`strata repl`: an interactive IQL shell (prompt_toolkit), in the manner of pgcli.

Statements span lines and end with `;`; backslash commands (`\\?` lists them) end at the line
end. The prompt session is built in one function (`build_prompt`); key bindings live in
strata/repl_keys.py, completion in strata/repl_complete.py, commands in strata/repl_commands.py.
Starting the REPL, `\\d`, completion and statements the local engine answers start no JVM: Spark
starts the first time a statement needs it. Each statement runs in a worker thread: Ctrl-C
interrupts its DuckDB query and, once Spark runs, cancels its Spark jobs (its own job group), and
the REPL goes on. Ctrl-C at the prompt clears the input; Ctrl-D (or `\\q`) leaves.
"""

from __future__ import annotations

import importlib
import itertools
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import click
from pygments.lexer import RegexLexer, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text

from iql.ast import AggFunc
from store.errors import StrataError, UserError
from strata import repl_commands as C
from strata.render import console

HISTORY_ENV = "STRATA_HISTORY"
_job_ids = itertools.count(1)


def history_path(env: dict[str, str] | None = None) -> Path:
    """$STRATA_HISTORY, else $XDG_CONFIG_HOME/strata/history, else ~/.config/strata/history."""
    env = os.environ if env is None else env
    if env.get(HISTORY_ENV):
        return Path(env[HISTORY_ENV])
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "strata" / "history"


def make_lexer(keywords, functions) -> type[RegexLexer]:
    """A Pygments lexer for IQL whose keywords come from the grammar (iql.parser.keywords)."""

    class IqlLexer(RegexLexer):
        name = "IQL"
        aliases = ["iql"]
        flags = __import__("re").IGNORECASE
        tokens = {
            "root": [
                (r"\s+", Text),
                (r"--[^\n]*", Comment.Single),
                (r"\\[A-Za-z?]+", Keyword.Pseudo),
                (r"'(?:[^']|'')*'?", String.Single),
                (r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+", Number.Float),
                (r"[0-9]+", Number.Integer),
                (words(tuple(keywords), suffix=r"\b"), Keyword),
                (words(tuple(functions), suffix=r"(?=\s*\()"), Name.Function),
                (r"[A-Za-z_][A-Za-z0-9_]*", Name),
                (r"<>|!=|<=|>=|=|<|>|\*|-", Operator),
                (r"[(),.;]", Punctuation),
                (r".", Text),
            ]
        }

    return IqlLexer


def toolbar_text(store_root: str, version: Any, timing: bool, engine: str | None = None) -> str:
    which = f" · engine {engine}" if engine else ""
    return (f" store {store_root} · version {version}{which} · timing {'on' if timing else 'off'}"
            f" · end statements with ; · \\? help · Ctrl-D quits ")


def build_prompt(session: C.Session, history: Path):
    """The PromptSession: history file, IQL lexer, threaded completer, toolbar, key bindings."""
    from prompt_toolkit import PromptSession  # deferred: only this path needs prompt_toolkit
    from prompt_toolkit.completion import ThreadedCompleter  # deferred: only this path needs prompt_toolkit
    from prompt_toolkit.history import FileHistory  # deferred: only this path needs prompt_toolkit
    from prompt_toolkit.lexers import PygmentsLexer  # deferred: only this path needs prompt_toolkit

    from iql.parser import keywords  # deferred: it loads lark
    from strata.repl_complete import IqlCompleter, Vocabulary  # deferred: it loads prompt_toolkit
    from strata.repl_keys import key_bindings, multiline_filter  # deferred: it loads prompt_toolkit

    history.parent.mkdir(parents=True, exist_ok=True)
    catalog = session.store.catalog
    vocab = Vocabulary.of_catalog(catalog, keywords(), C.command_help())
    return PromptSession(
        message="iql> ",
        prompt_continuation=lambda width, line_number, wrap_count: "...> ".rjust(width),
        history=FileHistory(str(history)),
        lexer=PygmentsLexer(make_lexer(keywords(), [f.value for f in AggFunc])),
        completer=ThreadedCompleter(IqlCompleter(vocab, catalog)),
        complete_while_typing=False,
        bottom_toolbar=lambda: toolbar_text(session.store.root, session.store.version, session.timing,
                                            session.store.engine.value),
        key_bindings=key_bindings(),
        multiline=multiline_filter(),
        enable_history_search=True,
    )


class Cancelled(Exception):  # noqa: N818 - a control-flow signal
    """The user pressed Ctrl-C while a statement ran."""


def cancellable(store):
    """A runner for `Session.run`: fn runs in a worker thread; Ctrl-C (SIGINT) in the main thread
    cancels what it started and raises `Cancelled`.

    What is cancelled depends on what runs, decided per statement so no JVM starts for it: the
    local engine's DuckDB query (interrupted); and, when Spark runs, the statement's jobs. If
    Spark was already running when the statement began, the statement runs under its own job
    group and that group is cancelled; if the statement itself started Spark, every job of the
    context is (the REPL runs one statement at a time). Cancelling repeats every half second
    until the statement ends, for queries and jobs it starts after the first Ctrl-C.
    """

    def run(fn):
        spark_running = store.spark_started
        group = f"strata-repl-{os.getpid()}-{next(_job_ids)}"
        local = store.local() if store.storage.on_this_machine else None
        box: dict[str, Any] = {}
        done = threading.Event()  # not Thread.join: a join that Ctrl-C interrupts may take a live thread for ended

        def work() -> None:
            try:
                if spark_running:
                    store.spark.sparkContext.setJobGroup(group, "strata repl statement", interruptOnCancel=True)
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the main thread as is
                box["error"] = e
            finally:
                done.set()

        def cancel() -> None:
            if local is not None:
                local.con.interrupt()
            if store.spark_started:
                sc = store.spark.sparkContext
                if spark_running:
                    sc.cancelJobGroup(group)
                else:
                    sc.cancelAllJobs()

        if spark_running:
            from pyspark import InheritableThread  # deferred: only this path needs pyspark

            thread = InheritableThread(target=work, daemon=True)
        else:
            thread = threading.Thread(target=work, daemon=True)
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        cancelled = False
        try:
            thread.start()
            waited = 0
            while not done.is_set():
                try:
                    done.wait(0.1)
                    waited += 1
                    if cancelled and waited % 5 == 0:
                        cancel()  # queries and jobs the statement started after the first cancel
                except KeyboardInterrupt:
                    cancelled = True
                    cancel()
        finally:
            signal.signal(signal.SIGINT, previous)
        if cancelled:
            raise Cancelled
        if "error" in box:
            raise box["error"]
        return box.get("value")

    return run


def report_error(session: C.Session, e: BaseException, debug: bool = False) -> None:
    """Errors on stderr: user errors with their caret display, others in one line."""
    if debug:
        traceback.print_exception(e, file=sys.stderr)
    if isinstance(e, StrataError):
        print(e.render(), file=sys.stderr, flush=True)
    else:
        print(f"internal error: {type(e).__name__}: {_first_line(e)}"
              + ("" if debug else "  (start with --debug for the traceback)"), file=sys.stderr, flush=True)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else ""


def loop(session: C.Session, prompt, debug: bool = False) -> None:
    from strata.repl_keys import QUIT_WORDS, strip_statement  # deferred: it loads prompt_toolkit

    while True:
        try:
            text = prompt.prompt()
        except KeyboardInterrupt:
            continue  # Ctrl-C at the prompt: clear the input
        except EOFError:
            break  # Ctrl-D
        text = strip_statement(text)
        if not text:
            continue
        if text.lower() in QUIT_WORDS:
            break
        try:
            C.dispatch(session, text)
        except C.Quit:
            break
        except Cancelled:
            print("cancelled", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            print("cancelled", file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001 - the loop goes on after any error
            report_error(session, e, debug)


@click.command("repl")
@click.pass_obj
def repl(app) -> None:
    """Interactive IQL shell: statements end with ;, \\? lists commands, Ctrl-D quits."""
    if not sys.stdin.isatty():
        raise UserError("strata repl needs a terminal",
                        hint='to run statements from a script use strata query "..."')
    os.environ.setdefault("LESS", "-SRXF")

    store = app.store()
    session = C.Session(store, console(), console(err=True))
    session.run = cancellable(store)
    prompt = build_prompt(session, history_path())
    # While the user types the first statement, load pyarrow: the DuckDB engine hands rows back
    # through it from the second question on (iql/duckdb/executor.py), so that import is paid
    # where nobody waits for it.
    threading.Thread(target=importlib.import_module, args=("pyarrow",), daemon=True).start()
    click.echo(f"strata repl on {store.root} (version {store.version}). "
               "End statements with ;  \\? for help, Ctrl-D to quit.", err=True)
    loop(session, prompt, debug=getattr(app, "debug", False))
