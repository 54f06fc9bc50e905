"""`strata verify` and `strata diff` (docs/cli.md, docs/verify.md).

`verify` recomputes the hash chain of the store's commits (store/seal.py, store/verify.py) and prints what
differs; exit code 3 when anything does. `diff A B` compares two runs or a dataset at two
versions (store/diff.py).
"""

from __future__ import annotations

import json

import click

from store import Store
from store import verify as checks
from store.errors import StoreError
from store.storage import Storage
from strata.app import App, diff_sides, store_of

TAMPERED = 3  # exit code: the store was tampered with (docs/cli.md)


@click.command()
@click.argument("item", required=False)
@click.option("--forward", is_flag=True, help="With ITEM: check its descendants' rows instead of its ancestors'.")
@click.option("--expect", "expect_root", metavar="ROOT",
              help="The head root recorded elsewhere (an earlier `verify`): a truncated or replaced "
                   "chain is then detected too.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def verify(ctx, item, forward, expect_root, fmt) -> None:
    """Recompute the commits' hash chain and report tampering (exit code 3).

    With ITEM, check only the manifests and the row groups holding ITEM's lineage."""

    if item is None:
        try:
            st = store_of(ctx)
            storage, upto = st.storage, st.as_of
        except StoreError:  # the newest manifest is unreadable: verify reports it, with the rest
            storage, upto = _storage(ctx), None
        rep = checks.verify(storage, expect_root=expect_root, upto=upto)
    else:
        rep, _ = checks.verify_lineage(store_of(ctx), item, forward=forward)
        if expect_root and rep.root != expect_root:
            rep.problems.append(checks.Problem("chain", None, rep.head, None,
                                                  f"head root {rep.root} is not the expected {expect_root}"))
    if fmt == "json":
        click.echo(json.dumps(rep.to_json(), indent=2))
    else:
        _print_report(rep, item)
    if not rep.ok:
        ctx.exit(TAMPERED)


def _storage(ctx):
    """The store's files without reading its manifest (`Store.open` parses the newest one)."""

    app = ctx.find_object(App) or ctx.ensure_object(App)
    root = app._store.root if app._store is not None else Store.path_of(app.store_path)
    return Storage(root, app.spark)


def _print_report(rep, item: str | None) -> None:
    for note in rep.notes:
        click.echo(f"strata: note: {note}", err=True)
    what = f"the lineage of {item}" if item else "the store"
    checked = f"{rep.files} files, {rep.bytes:,} bytes"
    if item:
        checked += f", {rep.row_groups} row groups"
    if rep.ok:
        click.echo(f"ok: {what} is intact: {rep.versions} versions (head {rep.head}, root {rep.root}); "
                   f"checked {checked}")
        return
    click.echo(f"TAMPERED: {len(rep.problems)} problem(s) in {what} ({rep.versions} versions; checked {checked})")
    for p in rep.problems:
        where = ", ".join(x for x in (f"table {p.table}" if p.table else "",
                                      f"version {p.version}" if p.version is not None else "",
                                      p.file or "") if x)
        click.echo(f"  {p.kind:<8} {where}: {p.detail}")


@click.command()
@click.argument("a")
@click.argument("b")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def diff(ctx, a, b, fmt) -> None:
    """Compare two runs (captured run ids or OpenLineage runIds) or a dataset at two versions
    (NAME@1 NAME@2)."""
    out = diff_sides(store_of(ctx), a, b)
    if fmt == "json":
        click.echo(json.dumps(out, indent=2, default=str))
        return
    _print_diff(out)


def _print_diff(out: dict) -> None:
    from strata.render import console, result_table  # deferred: it loads rich

    for w in out["warnings"]:
        click.echo(f"strata: warning: {w}", err=True)
    rows = []
    for side, entries in (("A only", out["only_a"]), ("B only", out["only_b"]), ("changed", out["changed"])):
        for e in entries:
            rows.append((side, e["role"], e["type"], e["id"] + (f" → {e['id_b']}" if "id_b" in e else ""),
                         _explain(e)))
    c = console()
    c.print(result_table(["", "role", "type", "id", "why"], rows, title=f"diff {out['a']} → {out['b']}"))
    shared = ", ".join(f"{n} {role}s" for role, n in out["shared"].items())
    click.echo(f"{len(out['only_a'])} only in A, {len(out['only_b'])} only in B, {len(out['changed'])} changed; "
               f"shared: {shared}", err=True)


def _explain(e: dict) -> str:
    parts = []
    if "version_b" in e and e["version_b"] != e.get("version"):
        parts.append(f"version {e.get('version')} → {e['version_b']}")
    elif "version" in e and "id_b" not in e:
        parts.append(f"version {e['version']}")
    if e.get("paths"):
        parts.append("paths " + ", ".join(e["paths"]))
    if e.get("input_paths"):
        parts.append("from input paths " + ", ".join(e["input_paths"]))
    if e.get("inputs_only_a"):
        parts.append("inputs only in A: " + ", ".join(e["inputs_only_a"]))
    if e.get("inputs_only_b"):
        parts.append("inputs only in B: " + ", ".join(e["inputs_only_b"]))
    if e.get("attributes"):
        parts.append("attributes " + ", ".join(e["attributes"]))
    if "inputs" in e:
        parts.append(f"rests on {len(e['inputs'])} input(s)")
    return "; ".join(parts)
