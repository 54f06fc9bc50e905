"""What the REPL does with one submitted text: an IQL statement or a backslash command.

Backslash commands live in one table (`COMMANDS`) with their syntax and help; `\\?` lists it.
`parse_command` and `parse_options` are pure; handlers get a `Session` (the store, the two
consoles, settings) and run their work through `session.run`, which the REPL sets to a runner
that Ctrl-C can cancel (the local engine's DuckDB query, or the statement's Spark jobs). Errors a
user can cause are `UserError`s; the loop prints them.
"""

from __future__ import annotations

import difflib
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

import iql
from iql.result import trace_tree
from store.engine import Engine
from store.errors import UserError
from store.export import neo4j as N
from store.export.html import write_html
from store.export.property_graph import DEFAULT_MAX_NODES
from store.export.selection import Selection
from store.lineage import Method, lineage
from strata.render import result_table

PAGER_MARGIN = 4  # lines kept free below a paged result's height check


class Quit(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by `\\q`: leave the REPL."""


@dataclass
class Session:
    """The REPL's state, shared by the loop and the commands (mutable on purpose)."""

    store: Any
    out: Console
    err: Console
    timing: bool = False
    pager: bool = True
    last_query: str | None = None
    run: Callable[[Callable[[], Any]], Any] = field(default=lambda fn: fn())


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    syntax: str
    help: str
    handler: Callable[[Session, Invocation], None]
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Invocation:
    """A parsed backslash line: the command, its shell-like words, and the raw rest."""

    command: Command
    args: tuple[str, ...]
    rest: str


# ------------------------------------------------------------------------------ parsing


def parse_command(line: str) -> Invocation:
    """`\\name args...` -> Invocation; unknown names and bad quoting are UserErrors."""
    text = line.strip()
    if text.endswith(";"):
        text = text[:-1].rstrip()
    name, _, rest = text.partition(" ")
    name = name.lower()
    command = lookup(name)
    if command is None:
        close = difflib.get_close_matches(name, list(_BY_NAME), n=1)
        raise UserError(f"unknown command {name}",
                        hint=(f"did you mean {close[0]}? " if close else "") + "\\? lists the commands")
    rest = rest.strip()
    try:
        args = tuple(shlex.split(rest)) if rest else ()
    except ValueError as e:
        raise UserError(f"{command.name}: {e}", hint=f"usage: {command.syntax}") from None
    return Invocation(command, args, rest)


def parse_options(args: Sequence[str], spec: Mapping[str, type | tuple[str, ...] | None],
                  syntax: str) -> tuple[list[str], dict[str, Any]]:
    """Split words into positionals and `--options`.

    `spec` maps an option to None (a flag), `int`, `str`, or a tuple of allowed words.
    """
    positionals: list[str] = []
    options: dict[str, Any] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word.partition("=")
            if name not in spec:
                close = difflib.get_close_matches(name, list(spec), n=1)
                raise UserError(f"unknown option {name}",
                                hint=(f"did you mean {close[0]}? " if close else "") + f"usage: {syntax}")
            kind = spec[name]
            if kind is None:
                if eq:
                    raise UserError(f"{name} takes no value", hint=f"usage: {syntax}")
                options[name] = True
                i += 1
                continue
            if not eq:
                if i + 1 >= len(args):
                    raise UserError(f"{name} needs a value", hint=f"usage: {syntax}")
                value = args[i + 1]
                i += 1
            if kind is int:
                try:
                    value = int(value)
                except ValueError:
                    raise UserError(f"{name} needs a whole number, not '{value}'",
                                    hint=f"usage: {syntax}") from None
                if value < 0:
                    raise UserError(f"{name} cannot be negative", hint=f"usage: {syntax}")
            elif isinstance(kind, tuple) and value not in kind:
                raise UserError(f"{name} must be one of {', '.join(kind)}, not '{value}'",
                                hint=f"usage: {syntax}")
            options[name] = value
        else:
            positionals.append(word)
        i += 1
    return positionals, options


# ------------------------------------------------------------------------------ output


def result_renderable(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None,
                      footer: str | None = None) -> Group:
    """A query result as a rich table followed by the row count (or `footer`)."""
    return Group(result_table(columns, rows, title),
                 Text(footer or f"({len(rows)} row{'s' if len(rows) != 1 else ''})"))


def needs_pager(lines: int, height: int, is_terminal: bool, enabled: bool) -> bool:
    return enabled and is_terminal and lines > max(1, height - PAGER_MARGIN)


def emit(session: Session, renderable) -> None:
    """Print on stdout, through the pager when it would not fit on the screen."""
    out = session.out
    with out.capture() as cap:
        out.print(renderable)
    lines = cap.get().count("\n")
    if needs_pager(lines, out.size.height, out.is_terminal, session.pager):
        with out.pager(styles=True):
            out.print(renderable)
    else:
        out.print(renderable)


def _timed(session: Session, started: float, engine=None) -> None:
    """The timing line (with `\\timing on`); `engine`: the Choice that answered, if one did."""
    if session.timing:
        which = f" ({engine.engine.value} engine)" if engine is not None else ""
        session.out.print(Text(f"Time: {time.perf_counter() - started:.3f} s{which}", style="dim"))


def run_query(session: Session, text: str) -> None:
    """Run one IQL statement and show its rows (or its plan, for EXPLAIN)."""

    started = time.perf_counter()

    def work():
        result = iql.run(session.store, text)
        return result, result.rows()

    result, rows = session.run(work)
    if result.explain:
        emit(session, Text("\n".join(str(r[0]) for r in rows)))
    elif result.form is iql.Form.TRACE:  # a TRACE statement's rows read best as indented trees
        emit(session, Group(Text(trace_tree(rows)), Text(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")))
        session.last_query = text
    else:
        emit(session, result_renderable(result.columns, rows))
        session.last_query = text
    for w in result.warnings:
        session.err.print(Text(f"warning: {w}", style="yellow"))
    _timed(session, started, result.engine)


# ------------------------------------------------------------------------------ commands


def _help(session: Session, inv: Invocation) -> None:
    table = Table(title="commands (IQL statements end with ;)", title_justify="left", box=None)
    table.add_column("command", style="bold")
    table.add_column("also")
    table.add_column("does")
    for c in COMMANDS:
        table.add_row(Text(c.syntax), Text(", ".join(c.aliases)), Text(c.help))  # no rich markup
    session.out.print(table)


def _quit(session: Session, inv: Invocation) -> None:
    raise Quit


def _timing(session: Session, inv: Invocation) -> None:
    if inv.args and inv.args[0].lower() not in ("on", "off"):
        raise UserError(f"\\timing takes on or off, not '{inv.args[0]}'", hint="usage: \\timing [on|off]")
    session.timing = (inv.args[0].lower() == "on") if inv.args else not session.timing
    session.out.print(f"Timing is {'on' if session.timing else 'off'}.")


def _engine(session: Session, inv: Invocation) -> None:
    """`\\engine`: show the store's engine setting; `\\engine auto|local|spark`: set it."""

    st = session.store
    if len(inv.args) > 1 or (inv.args and inv.args[0].lower() not in ("auto", "local", "spark")):
        raise UserError(f"\\engine takes auto, local or spark, not '{' '.join(inv.args)}'",
                        hint="usage: \\engine [auto|local|spark]")
    if inv.args:
        engine = Engine.parse(inv.args[0])
        if engine is Engine.LOCAL and not st.storage.on_this_machine:
            raise UserError("the local engine reads stores on this machine's file system only",
                            hint="use \\engine spark (or auto) for a store on a Hadoop URI")
        st.engine = engine
    why = {Engine.AUTO: f"per statement: local when it reads at most {st.local_rows:,} rows of a store on this "
                        "machine, else Spark",
           Engine.LOCAL: "DuckDB in this process", Engine.SPARK: "Spark"}[st.engine]
    session.out.print(Text(f"Engine is {st.engine.value} ({why})."))


def _explain(session: Session, inv: Invocation) -> None:
    if not inv.rest:
        raise UserError("\\explain needs a query", hint="e.g. \\explain select p.id from WebPage p")
    run_query(session, "explain " + inv.rest)


def _describe(session: Session, inv: Invocation) -> None:
    catalog = session.store.catalog
    if len(inv.args) > 1:
        raise UserError("\\d takes at most one type name", hint="usage: \\d [TYPE]")
    started = time.perf_counter()
    data = session.run(session.store.info)
    counts: dict[str, int] = {}
    for per_kind in data["vertices"].values():
        counts.update(per_kind)
    if inv.args:
        name = inv.args[0]
        info = catalog.type_by_name(name)
        if info is None:
            close = difflib.get_close_matches(name, catalog.type_names(), n=3)
            raise UserError(f"no type named '{name}'",
                            hint=(f"did you mean {', '.join(close)}? " if close else "")
                            + "\\d lists the types; names are case-sensitive")
        emit(session, describe_type(info, counts.get(info.name, 0), catalog))
    else:
        emit(session, describe_store(catalog, counts))
    _timed(session, started)


def describe_type(info, count: int, catalog) -> Table:
    """`\\d TYPE`: kind, granularities, what contains it, attribute schema, element count."""
    table = Table(title=f"type {info.name}", title_justify="left", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("kind", info.kind)
    table.add_row("granularities", ", ".join(info.granularities))
    parents = sorted({p for g in info.granularities for c, p in catalog.pairs if c == g})
    children = sorted({c for g in info.granularities for c, p in catalog.pairs if p == g})
    if parents:
        table.add_row("under", ", ".join(parents))
    if children:
        table.add_row("contains", ", ".join(children))
    table.add_row("attributes", "id: string" + "".join(f", {a}: {t.value}" for a, t in info.attributes))
    table.add_row("schema", "declared" if info.declared else "inferred from data")
    table.add_row("elements", str(count))
    return table


def describe_store(catalog, counts: Mapping[str, int]) -> Table:
    """`\\d`: every type with kind, granularities, attributes and element count."""
    table = Table(title="types", title_justify="left")
    for col in ("type", "kind", "granularities", "attributes"):
        table.add_column(col)
    table.add_column("elements", justify="right")
    for info in sorted(catalog.types.values(), key=lambda t: (t.kind, t.name)):
        attrs = ", ".join(f"{a}: {t.value}" for a, t in info.attributes)
        table.add_row(info.name, info.kind, ", ".join(info.granularities), attrs,
                      str(counts.get(info.name, 0)))
    return table


_LINEAGE_SPEC = {"--forward": None, "--depth": int, "--method": ("auto", "rq", "cc", "cs")}


def _lineage(session: Session, inv: Invocation) -> None:

    syntax = _BY_NAME["\\lineage"].syntax
    pos, opts = parse_options(inv.args, _LINEAGE_SPEC, syntax)
    if len(pos) != 1:
        raise UserError("\\lineage needs exactly one item id", hint=f"usage: {syntax}")
    started = time.perf_counter()
    result = session.run(lambda: lineage(session.store, pos[0], opts.get("--depth"),
                                         bool(opts.get("--forward")),
                                         Method(opts.get("--method", "auto"))))
    key = "descendant" if opts.get("--forward") else "ancestor"
    key += "" if len(result.nodes) == 1 else "s"
    footer = (f"{len(result.nodes)} {key}, {len(result.edges)} triples; "
              f"method {result.method.value}, {result.triples_read} triples read")
    emit(session, result_renderable(["src", "op", "dst"], [(s, o, d) for s, d, o in result.edges],
                                    title=f"lineage of {pos[0]} ({result.direction.value})", footer=footer))
    for w in result.warnings:
        session.err.print(Text(f"warning: {w}", style="yellow"))
    _timed(session, started)


_EXPORT_SPEC = {"--query": str, "--last": None, "--component": str, "--forward": None,
                "--depth": int, "--method": ("auto", "rq", "cc", "cs"), "--max-nodes": int}


def export_selection(args: Sequence[str], last_query: str | None, syntax: str):
    """(path, Selection, max_nodes) of an `\\export`/`\\show` line (pure)."""

    pos, opts = parse_options(args, _EXPORT_SPEC, syntax)
    if not pos:
        raise UserError("say where to write", hint=f"usage: {syntax}")
    if len(pos) > 2:
        raise UserError(f"too many words: {' '.join(pos[2:])}",
                        hint="quote a query: --query \"select ...\"; usage: " + syntax)
    path, item = pos[0], (pos[1] if len(pos) > 1 else None)
    query = opts.get("--query")
    if opts.get("--last") or (item is None and query is None and "--component" not in opts):
        if last_query is None:
            raise UserError("there is no previous query result to export",
                            hint="run a query first, or give an ITEM, --query or --component")
        query = last_query
    max_nodes = opts.get("--max-nodes", DEFAULT_MAX_NODES)
    if max_nodes < 1:
        raise UserError("--max-nodes must be at least 1", hint=f"usage: {syntax}")
    sel = Selection(item=item, query=query, depth=opts.get("--depth"),
                    forward=bool(opts.get("--forward")), method=opts.get("--method", "auto"),
                    component=opts.get("--component"))
    return path, sel, max_nodes


def _export(session: Session, inv: Invocation) -> None:
    from strata.app import subgraph_for  # deferred: it loads click

    path, sel, max_nodes = export_selection(inv.args, session.last_query, _BY_NAME["\\export"].syntax)
    target = N.Target.infer(path)
    started = time.perf_counter()
    sg = session.run(lambda: subgraph_for(session.store, sel, max_nodes))
    for w in sg.warnings:
        session.err.print(Text(f"warning: {w}", style="yellow"))
    try:
        info = N.export(sg, target, path)
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}", hint="choose another path") from None
    session.out.print(Text(f"exported {info['nodes']} nodes and {info['relationships']} relationships "
                      f"({' '.join(sel.describe().split())}) to {info['path']}"))
    session.out.print(Text(info["how"]))
    _timed(session, started)


def _show(session: Session, inv: Invocation) -> None:
    from strata.app import subgraph_for  # deferred: it loads click

    path, sel, max_nodes = export_selection(inv.args, session.last_query, _BY_NAME["\\show"].syntax)
    sg = session.run(lambda: subgraph_for(session.store, sel, max_nodes))
    for w in sg.warnings:
        session.err.print(Text(f"warning: {w}", style="yellow"))
    try:
        written = write_html(sg, Path(path), f"Strata: {sel.describe()}")
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}", hint="choose another path") from None
    session.out.print(Text(f"wrote {written} ({len(sg.nodes)} nodes); open file://{Path(written).resolve()}"))


def _asof(session: Session, inv: Invocation) -> None:
    """`\\asof`: show the version statements read; `\\asof N`: read committed version N from now
    on; `\\asof latest`: the newest version again."""
    st = session.store
    if len(inv.args) > 1 or (inv.args and inv.args[0].lower() != "latest" and not inv.args[0].isdigit()):
        raise UserError(f"\\asof takes a version number or latest, not '{' '.join(inv.args)}'",
                        hint="usage: \\asof [N|latest]; `strata info` lists the versions")
    if inv.args:
        st = session.store = st.at(None if inv.args[0].lower() == "latest" else int(inv.args[0]))
    newest = st.storage.versions()[-1] if st.storage.versions() else 0
    which = "the newest" if st.as_of is None else f"as of version {st.as_of}, of {newest}"
    session.out.print(Text(f"Reading version {st.version} ({which})."))


_SELECT_HELP = ("ITEM: its lineage (--forward: descendants, --depth K); --query \"IQL\"; "
                "--component ITEM; nothing or --last: the last query's result")

COMMANDS: tuple[Command, ...] = (
    Command("\\?", "\\?", "list these commands", _help, ("\\help", "\\h")),
    Command("\\q", "\\q", "quit (or Ctrl-D)", _quit, ("\\quit",)),
    Command("\\timing", "\\timing [on|off]", "show how long each statement took", _timing),
    Command("\\engine", "\\engine [auto|local|spark]",
            "show or set who answers what follows: DuckDB in this process (local), Spark, or per statement (auto)",
            _engine),
    Command("\\asof", "\\asof [N|latest]",
            "show or set the committed version what follows reads (like AS OF VERSION n)", _asof),
    Command("\\explain", "\\explain QUERY", "show the plan and strategy of an IQL query", _explain),
    Command("\\d", "\\d [TYPE]", "list types with granularities, attributes and counts, or describe one",
            _describe, ("\\describe",)),
    Command("\\lineage", "\\lineage ID [--forward] [--depth K] [--method auto|rq|cc|cs]",
            "the lineage (ancestors, or descendants with --forward) of one item", _lineage),
    Command("\\export", "\\export FILE.cypher|FOLDER [ITEM] [--query IQL] [--component ITEM] [--last] "
            "[--forward] [--depth K] [--max-nodes N]",
            "export a subgraph for Neo4j: a .cypher script or a folder of CSV files. " + _SELECT_HELP,
            _export),
    Command("\\show", "\\show FILE.html [ITEM] [--query IQL] [--component ITEM] [--forward] "
            "[--depth K] [--max-nodes N]", "draw a subgraph as a self-contained HTML page", _show),
)

_BY_NAME: dict[str, Command] = {n: c for c in COMMANDS for n in (c.name, *c.aliases)}


def lookup(name: str) -> Command | None:
    return _BY_NAME.get(name.lower())


def command_help() -> dict[str, str]:
    """Every command name and alias -> its help line (for completion)."""
    return {n: c.help for n, c in _BY_NAME.items()}


def dispatch(session: Session, text: str) -> None:
    """Run one submitted text: a backslash command or an IQL statement (without its `;`)."""
    if text.startswith("\\"):
        inv = parse_command(text)
        inv.command.handler(session, inv)
    else:
        run_query(session, text)
