"""`strata export neo4j ...` and `strata show ...` (docs/cli.md): export or draw one subgraph.

Registered by `strata/cli.py` (`export` is a group with the `neo4j` subcommand; `show` a
command). The subgraph is the lineage of ITEM (the item and its ancestors, or descendants with
`--forward`), or the vertex ids an IQL statement returns (`--query`), or ids given with
`--id`, or the connected component of an item (`--component`, from the component index),
always bounded by `--max-nodes` (`store.export.selection`). The store comes from the global
options (`strata.cli.store_of`). Results go to stdout, warnings to stderr; errors are raised and
strata/cli.py turns them into messages and exit codes. Passwords are never printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from store.errors import UserError
from store.export import neo4j as N
from store.export.html import write_html
from store.export.property_graph import DEFAULT_MAX_NODES
from store.export.selection import Selection
from strata import progress
from strata.app import store_of, subgraph_for


def _selection_options(fn):
    options = [
        click.argument("item", required=False),
        click.option("--query", "-q", "query", help="the vertex ids an IQL statement returns"),
        click.option("--id", "ids", multiple=True, help="a vertex id (repeatable)"),
        click.option("--component", metavar="ITEM", default=None,
                     help="the connected component of ITEM (needs `strata index`)"),
        click.option("--depth", type=int, default=None, help="lineage depth (default: all)"),
        click.option("--forward", is_flag=True, help="descendants instead of ancestors"),
        click.option("--method", type=click.Choice(["auto", "rq", "cc", "cs"]), default="auto",
                     show_default=True, help="lineage method"),
        click.option("--max-nodes", type=click.IntRange(min=1), default=DEFAULT_MAX_NODES,
                     show_default=True, help="node budget: export at most this many nodes"),
    ]
    for option in reversed(options):  # decorators apply bottom-up; --help lists them in order
        fn = option(fn)
    return fn


def _warn(sg) -> None:
    for w in sg.warnings:
        click.echo(f"warning: {w}", err=True)


@click.group("export")
def export() -> None:
    """Export a subgraph of the store to other tools."""


@export.command("neo4j")
@_selection_options
@click.option("--to", "target", type=click.Choice(["bolt", "cypher", "csv"]), default=None,
              help="bolt: push to a running Neo4j; cypher: a script for Neo4j Browser or "
                   "cypher-shell; csv: files for neo4j-admin import (default: from --output)")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="the .cypher file, or the folder for CSV files")
@click.option("--uri", default=None, help="Bolt URI (default $STRATA_NEO4J_URI)")
@click.option("--user", default=None, help="user (default $STRATA_NEO4J_USER, else neo4j)")
@click.option("--password", default=None,
              help="password (prefer $STRATA_NEO4J_PASSWORD: arguments show up in process lists)")
@click.option("--database", default=None, help="target database (default: the server's default)")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="rows per UNWIND batch")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
@progress.around
def neo4j(ctx, item, query, ids, component, depth, forward, method, max_nodes, target, output, uri, user,
          password, database, batch_size, fmt) -> None:
    """Export the lineage of ITEM (or --query / --id / --component) to Neo4j: live, as a script, or as CSV."""

    sel = Selection(item, query, tuple(ids), depth, forward, method, component)
    to = N.Target(target) if target else N.Target.infer(output)
    creds = N.Credentials.resolve(uri, user, password) if to is N.Target.BOLT else None
    N.check_target(to, output, creds)
    sg = subgraph_for(store_of(ctx), sel, max_nodes)
    _warn(sg)
    info = N.export(sg, to, output, creds, database, batch_size)
    if fmt == "json":
        click.echo(json.dumps(info, ensure_ascii=False))
        return
    where = info.get("path") or info.get("uri")
    click.echo(f"exported {info['nodes']} nodes and {info['relationships']} relationships "
               f"({sel.describe()}) to {where}")
    click.echo(info["how"])


@click.command("show")
@_selection_options
@click.option("--output", "-o", type=click.Path(path_type=Path), default=Path("strata-lineage.html"),
              show_default=True, help="the HTML file to write")
@click.option("--title", default=None, help="title of the picture")
@click.pass_context
@progress.around
def show(ctx, item, query, ids, component, depth, forward, method, max_nodes, output, title) -> None:
    """Draw the lineage of ITEM (or --query / --id / --component) as a self-contained HTML page."""

    sel = Selection(item, query, tuple(ids), depth, forward, method, component)
    sg = subgraph_for(store_of(ctx), sel, max_nodes)
    _warn(sg)
    try:
        path = write_html(sg, output, title or f"Strata: {sel.describe()}")
    except OSError as e:
        raise UserError(f"cannot write {output}: {e.strerror}", hint="choose another --output") from None
    click.echo(f"wrote {path} ({len(sg.nodes)} nodes, {len(sg.rels)} relationships); "
               f"open it in a browser: file://{path.resolve()}")


__all__ = ["export", "show", "Selection", "subgraph_for"]


from strata.cli_interop import export_openlineage, export_prov  # noqa: E402 - registered after the group exists

export.add_command(export_openlineage)
export.add_command(export_prov)
