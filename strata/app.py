"""The application's state shared by every command: the global options and the store opened on
first use (`App`, `store_of`), the one mapping from errors to exit codes (`report`), and the
subgraph a selection names (`subgraph_for`, for export, show and the REPL)."""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, NoReturn

import click

from store.errors import StrataError, UserError


@dataclass
class App:
    """Global options, and the store opened on first use."""

    store_path: str | None = None
    master: str | None = None
    conf: tuple[str, ...] = ()
    debug: bool = False
    engine: str | None = None
    as_of: int | None = None
    job: bool = False  # `strata capture`: the store works in the captured job's own session
    _store: Any = field(default=None, repr=False)

    def spark(self):
        if self.job:
            from strata.spark import job_session  # deferred: `strata --help` starts without it

            return job_session()
        from store.spark.session import parse_conf  # deferred: `strata --help` starts without it
        from strata.spark import get_session  # deferred: `strata --help` starts without it

        return get_session(self.master, parse_conf(self.conf), quiet=not self.debug)

    @classmethod
    def of(cls, store) -> App:
        """An App around an already open store (for embedding and tests)."""
        app = cls(store_path=store.root)
        app._store = store
        return app

    def store(self):
        if self._store is None:
            from store import Store  # deferred: `strata --help` starts without the store
            from store.spark.session import parse_conf  # deferred: `strata --help` starts without it

            parse_conf(self.conf)  # a bad --conf is an error even when no step starts Spark
            self._store = Store.open(self.store_path, spark=self.spark, master=self.master,
                                     engine=self.engine, as_of=self.as_of)
        return self._store


    def writer(self):
        """The store, for a command that commits to it: refused at once (exit 2, naming the
        server) while a `strata serve` holds it, before any work (store/writer_lock.py; the
        commit itself checks again)."""
        st = self.store()
        if st.storage.on_this_machine:
            from store.writer_lock import check  # deferred: `strata --help` starts without the store

            check(st.root)
        return st


def store_of(ctx: click.Context, write: bool = False):
    """The store named by the global options, opened on first use (for every subcommand);
    `write`: for a command that commits (`App.writer`)."""
    app = ctx.find_object(App)
    if app is None:  # a command invoked on its own, outside the `strata` group
        app = ctx.ensure_object(App)
    return app.writer() if write else app.store()


def fail(message: str, code: int) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(code)


def report(e: BaseException, debug: bool) -> NoReturn:
    """The one mapping from errors to exit codes: `UserError` 2, any other `StrataError` 1,
    anything else 1 as an internal error; the traceback only with --debug."""
    if debug:
        traceback.print_exception(e)
    if isinstance(e, StrataError):
        text = e.render()  # an error in a language ("iql: ...") names it instead of the program
        fail(text if e.prefix else f"strata: {text}", 2 if isinstance(e, UserError) else 1)
    if isinstance(e, KeyboardInterrupt):
        fail("strata: interrupted", 130)
    fail(f"strata: internal error: {type(e).__name__}: {e}"
         + ("" if debug else "\n  (run with --debug for the traceback)"), 1)


def subgraph_for(st, sel, max_nodes: int):
    """The bounded subgraph of a selection (`store.export.selection.Selection`); a query selection
    runs its IQL statement here (on the engine iql chooses; a local answer's rows are used as they
    are, without Spark)."""
    import iql  # deferred: the query language loads only for a query selection
    from store.export.selection import subgraph  # deferred: `strata --help` starts without it

    return subgraph(st, sel, max_nodes, run_query=lambda text: iql.run(st, text))


def diff_sides(st, a: str, b: str) -> dict:
    """`strata diff A B`'s object (store/diff.py), a captured run's output values and attribute
    paths read by capture (for the CLI and the server)."""
    from capture.storing.runs import output_values, read_head, source_paths  # deferred: it loads numpy, pyarrow
    from store.diff import diff  # deferred: `strata --help` starts without it

    heads: dict = {}

    def paths(run: str, path: str) -> list[str]:
        if run not in heads:
            try:
                heads[run] = read_head(st, run)
            except UserError:  # not a captured run
                heads[run] = None
        return source_paths(heads[run], path) if heads[run] is not None else []

    return diff(st, a, b, values=lambda run: output_values(st, run), paths=paths)
