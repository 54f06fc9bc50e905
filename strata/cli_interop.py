"""`strata ingest --format openlineage|prov`, `strata export openlineage` and `strata export prov`
(docs/cli.md, docs/openlineage.md, docs/prov.md).

`ingest --format ...` in strata/cli.py hands its files here; the `export` group of
strata/cli_export.py registers the two export commands. The library does the work
(store/interop/); these functions parse options and print.
"""

from __future__ import annotations

import click

from strata.cli import App


def ingest_interop(app: App, files: tuple[str, ...], fmt: str) -> None:
    """Ingest OpenLineage events or PROV documents (one commit; nothing when nothing is new)."""
    st = app.store()
    if fmt == "openlineage":
        from store.interop.ol_commit import ingest_openlineage

        r = ingest_openlineage(st, files)
        if not r.committed:
            click.echo(f"nothing new: the store holds all {r.events} event(s) already "
                       f"(version {r.version} unchanged)", err=True)
            return
        click.echo(f"committed version {r.version}: {r.new_events} new event(s), {r.events} in all; "
                   f"{r.elements} elements, {r.edges} edges derived", err=True)
        return
    from store.interop.prov import ingest_prov

    r = ingest_prov(st, files)
    for w in r.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(f"committed version {r.version}: {r.elements} elements, {r.vertices} vertices, "
               f"{r.edges} edges from {len(files)} file(s)", err=True)
