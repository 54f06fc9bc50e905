"""Pure rendering of results for people: rich tables, JSON and CSV text. No Spark here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from iql.result import cell_text


def console(err: bool = False) -> Console:
    return Console(stderr=err, highlight=False, soft_wrap=False)


def result_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for c in columns:
        table.add_column(Text(c))
    for r in rows:
        table.add_row(*[Text(cell_text(v)) for v in r])  # values are data, never rich markup
    return table


def info_tables(data: dict[str, Any]) -> list[Table]:
    """`strata info` as tables (pure: returns renderables)."""
    head = Table(show_header=False, box=None)
    head.add_row("store", str(data["store"]))
    head.add_row("version", str(data["version"]))
    head.add_row("commits", str(data["commits"]))
    if data.get("last_commit"):
        head.add_row("last commit", f"{data['last_commit']['created']}  {data['last_commit']['message']}")
    idx = data.get("index") or {}
    head.add_row("index", str(idx.get("state", "built")) if isinstance(idx, dict) else str(idx))
    head.add_row("edges", str(data["edges"]))
    counts = Table(title="vertices per type", title_justify="left")
    counts.add_column("kind")
    counts.add_column("type")
    counts.add_column("vertices", justify="right")
    for kind, types in data["vertices"].items():
        for name, n in sorted(types.items()):
            counts.add_row(kind, name, str(n))
    grans = Table(title="granularities", title_justify="left")
    grans.add_column("kind")
    grans.add_column("granularity")
    grans.add_column("basic elements", justify="right")
    for kind, names in data["granularities"].items():
        for g in names:
            grans.add_row(kind, g, str(data["elements"].get(g, 0)))
    out = [head, grans, counts]
    if data["types"]:
        types = Table(title="types", title_justify="left")
        types.add_column("type")
        types.add_column("granularities")
        types.add_column("attributes")
        for name, t in sorted(data["types"].items()):
            types.add_row(name, ", ".join(t["granularities"]),
                          ", ".join(f"{a}: {v}" for a, v in t["attributes"].items()))
        out.append(types)
    if data.get("versions"):
        versions = Table(title="versions", title_justify="left")
        for col in ("version", "created", "message", "hashed"):
            versions.add_column(col, justify="right" if col == "version" else "left")
        for v in data["versions"]:
            versions.add_row(str(v["version"]), v["created"], v["message"], "yes" if v.get("hashed") else "no")
        out.append(versions)
    return out


def render_info(data: dict[str, Any]) -> None:
    c = console()
    for t in info_tables(data):
        c.print(t)
