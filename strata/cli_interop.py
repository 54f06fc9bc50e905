"""`strata ingest --format openlineage|prov`, `strata export openlineage` and `strata export prov`
(docs/cli.md, docs/openlineage.md, docs/prov.md).

`ingest --format ...` in strata/cli.py hands its files here; the `export` group of
strata/cli_export.py registers the two export commands. The library does the work
(store/interop/); these functions parse options and print.
"""

from __future__ import annotations

import json

import click

from store.errors import UserError
from store.export.property_graph import DEFAULT_MAX_NODES, RelType
from store.export.selection import Selection
from strata.app import App, store_of, subgraph_for


def ingest_interop(app: App, files: tuple[str, ...], fmt: str) -> None:
    """Ingest OpenLineage events or PROV documents (one commit; nothing when nothing is new)."""
    st = app.writer()
    if fmt == "openlineage":
        from store.interop.ol_commit import ingest_openlineage  # deferred: it loads numpy, pyarrow

        r = ingest_openlineage(st, files, warn=lambda w: click.echo(f"strata: warning: {w}", err=True))
        if not r.committed:
            click.echo(f"nothing new: the store holds all {r.events} event(s) already "
                       f"(version {r.version} unchanged)", err=True)
            return
        click.echo(f"committed version {r.version}: {r.new_events} new event(s), {r.events} in all; "
                   f"{r.elements} elements, {r.edges} edges derived", err=True)
        return
    from store.interop.prov import ingest_prov  # deferred: it loads numpy, pyarrow

    r = ingest_prov(st, files)
    for w in r.warnings:
        click.echo(f"warning: {w}", err=True)
    if not r.committed:
        click.echo(f"nothing new (version {r.version} unchanged)", err=True)
        return
    click.echo(f"committed version {r.version}: {r.elements} elements, {r.vertices} vertices, "
               f"{r.edges} edges from {len(files)} file(s)", err=True)


def openlineage_events(st, runs: tuple[str, ...]) -> list[dict]:
    """The events of the named runs (captured run ids, OpenLineage runIds or `run:<runId>`), or
    of every captured and ingested run; UserError for a name that is neither."""
    from capture.storing.to_openlineage import captured_events  # deferred: it loads numpy, pyarrow
    from store.interop.ol_export import check_events, ingested_runs, run_key  # deferred: it loads numpy, pyarrow

    ingested = ingested_runs(st)
    captured = captured_events(st, None if not runs else [r for r in runs if run_key(r) not in ingested])
    if not runs:
        return check_events([e for r in sorted(ingested) for e in ingested[r]]
                            + [e for r in sorted(captured) for e in captured[r]])
    out = []
    for ref in runs:
        if run_key(ref) in ingested:
            out += ingested[run_key(ref)]
        elif ref in captured:
            out += captured[ref]
        else:
            raise UserError(f"no run {ref!r} in the store (neither a captured run nor an OpenLineage runId)",
                            hint="`strata query \"select r.id, r.runId from Run r\"` lists the runs")
    return check_events(out)


@click.command("openlineage")
@click.argument("runs", nargs=-1)
@click.option("--out", "out", type=click.Path(dir_okay=False), help="write JSON Lines here (default: stdout)")
@click.option("--url", help="POST each event to this OpenLineage endpoint (e.g. Marquez: http://host:5000)")
@click.option("--endpoint", default="api/v1/lineage", show_default=True, help="path under --url")
@click.option("--api-key", envvar="OPENLINEAGE_API_KEY", help="bearer token for --url [$OPENLINEAGE_API_KEY]")
@click.pass_context
def export_openlineage(ctx: click.Context, runs: tuple[str, ...], out: str | None, url: str | None,
                       endpoint: str, api_key: str | None) -> None:
    """Captured (and ingested) runs as OpenLineage RunEvents (JSON Lines), or sent to --url."""

    events = openlineage_events(store_of(ctx), runs)
    if url:
        from store.interop.ol_export import post  # deferred: it loads numpy, pyarrow

        n = post(events, url, endpoint, api_key)
        click.echo(f"sent {n} event(s) to {url.rstrip('/')}/{endpoint}", err=True)
    text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in events)
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        click.echo(f"wrote {len(events)} event(s) to {out}", err=True)
    elif not url:
        click.echo(text, nl=False)


def prov_document(st, lineage: str | None, query: str | None, ids: tuple[str, ...] = (),
                  max_nodes: int | None = None):
    """The PROV document of a lineage, a query's vertices or given ids (store.interop.prov)."""
    from store.interop.prov import stored_documents, to_document  # deferred: it loads numpy, pyarrow

    budget = max_nodes or DEFAULT_MAX_NODES
    if lineage is None and query is None and not ids:
        ids = whole_store_ids(st, budget)
        if not ids:  # an empty store: a document with only what was ingested as PROV (nothing)
            return to_document([], [], stored_documents(st))
    sg = subgraph_for(st, Selection(item=lineage, query=query, ids=ids), budget)
    for w in sg.warnings:
        click.echo(f"warning: {w}", err=True)
    nodes = [(n.id, n.kind, {k: v for k, v in n.properties if k not in ("id", "kind", "n_ce", "type")})
             for n in sg.nodes]
    edges = [(r.src, r.props["via"], r.dst) for r in sg.rels if r.type is RelType.DERIVED]
    return to_document(nodes, edges, stored_documents(st))


def whole_store_ids(st, budget: int) -> tuple[str, ...]:
    """Every vertex id of the store (data and processes), for `strata export prov` with no
    selection; more than `budget` of them is a UserError (exit 2) rather than a silent cut."""
    import iql  # deferred: the query language loads only when the whole store is exported

    ids = tuple(sorted({str(r[0]) for r in iql.run(st, "select x.id from Any x").rows() if r[0] is not None}))
    if len(ids) > budget:
        raise UserError(
            f"the store has {len(ids)} vertices, more than the node budget of {budget}: "
            "exporting the whole store would cut it",
            hint=f"raise the budget with --max-nodes {len(ids)}, or select a part: "
                 "--lineage ITEM or --query \"IQL\"",
        )
    return ids


@click.command("prov")
@click.option("--query", "-q", "query", help="the vertices an IQL statement returns")
@click.option("--lineage", metavar="ITEM", help="the lineage of ITEM (it and its ancestors)")
@click.option("--format", "fmt", type=click.Choice(["json", "provn", "xml"]), default="json", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), help="write here (default: stdout)")
@click.option("--max-nodes", type=click.IntRange(min=1), default=None, help="node budget")
@click.pass_context
def export_prov(ctx: click.Context, query: str | None, lineage: str | None, fmt: str, out: str | None,
                max_nodes: int | None) -> None:
    """A subgraph as a W3C PROV document (PROV-JSON, PROV-N or PROV-XML); with neither --query
    nor --lineage, the whole store (at most --max-nodes vertices, else exit 2)."""
    from prov.serializers import DoNotExist  # deferred: only this path needs prov


    doc = prov_document(store_of(ctx), lineage, query, max_nodes=max_nodes)
    try:
        text = doc.serialize(format=fmt, **({"indent": 2} if fmt == "json" else {}))
    except DoNotExist as e:
        raise UserError(f"cannot write PROV-{fmt.upper()}: {e}", hint="pip install 'strata-prov[interop]'") from e
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        click.echo(f"wrote {len(list(doc.get_records()))} PROV record(s) to {out}", err=True)
    else:
        click.echo(text)
