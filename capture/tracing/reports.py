"""Data-usage heatmap and audit report over traces (Pebble Section 7.3.5), pure Python.

* :func:`heatmap`: over a workload of traces, per input item x attribute, in how many traces the
  attribute contributed, only influenced, or was unused; :func:`heatmap_html` draws it as an HTML
  table, :func:`heatmap_png` as a PNG picture (matplotlib, the ``reports`` extra).
* :func:`audit`: per traced input item, the attributes a result exposes (contributing leaves) and
  those that only influenced it.

Attributes are leaf paths with array positions generalized to ``[pos]`` (``user_mentions.[pos].id_str``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

from capture.ids import item_hex
from capture.tracing.backtrace import Backtrace, TracedItem
from store.errors import UserError

_POSITION = re.compile(r"\[\d+\]")


def attribute(path: str) -> str:
    return _POSITION.sub("[pos]", path)


def _leaves(item: TracedItem) -> list[tuple[str, str]]:
    paths = [n.path for n in item.nodes]
    out = []
    for n in item.nodes:
        if not any(p.startswith(n.path + ".") for p in paths):
            out.append((attribute(n.path), n.role))
    return out


@dataclass(frozen=True, slots=True)
class HeatCell:
    contributed: int
    influenced: int
    unused: int


@dataclass(frozen=True, slots=True)
class Heatmap:
    dataset: str
    traces: int
    items: tuple[int, ...]
    attributes: tuple[str, ...]
    cells: dict  # (item, attribute) -> HeatCell

    def rows(self) -> list[tuple]:
        """dataset, item id, attribute, contributed, influenced, unused (one row per cell)."""
        return [(self.dataset, i, a, c.contributed, c.influenced, c.unused)
                for i in self.items for a in self.attributes for c in [self.cells[(i, a)]]]

    def totals(self) -> dict[str, HeatCell]:
        """Per attribute, summed over items."""
        out = {}
        for a in self.attributes:
            cs = [self.cells[(i, a)] for i in self.items]
            out[a] = HeatCell(sum(c.contributed for c in cs), sum(c.influenced for c in cs),
                              sum(c.unused for c in cs))
        return out


def heatmap(traces: Iterable[Backtrace], dataset: str, attributes: Iterable[str] = ()) -> Heatmap:
    """Usage counts of ``dataset``'s items over a workload of traces. ``attributes`` adds schema
    attributes no trace touched (they show as unused everywhere)."""
    traces = list(traces)
    counts: dict[tuple[int, str], list[int]] = {}
    attrs: dict[str, None] = {a: None for a in attributes}
    items: dict[int, None] = {}
    for t in traces:
        for item in t.items:
            if item.dataset != dataset:
                continue
            items.setdefault(item.item_id, None)
            roles: dict[str, str] = {}
            for a, role in _leaves(item):
                attrs.setdefault(a, None)
                if roles.get(a) != "contributing":
                    roles[a] = role
            for a, role in roles.items():
                c = counts.setdefault((item.item_id, a), [0, 0])
                c[0 if role == "contributing" else 1] += 1
    cells = {}
    for i in items:
        for a in attrs:
            con, inf = counts.get((i, a), [0, 0])
            cells[(i, a)] = HeatCell(con, inf, len(traces) - con - inf)
    return Heatmap(dataset, len(traces), tuple(sorted(items)), tuple(sorted(attrs)), cells)


def heatmap_html(hm: Heatmap) -> str:
    """A self-contained HTML table: green = contributed, yellow = influenced, grey = unused."""
    head = "".join(f"<th>{html.escape(a)}</th>" for a in hm.attributes)
    body = []
    for i in hm.items:
        cells = []
        for a in hm.attributes:
            c = hm.cells[(i, a)]
            share = (c.contributed + c.influenced) / hm.traces if hm.traces else 0
            color = (f"rgba(0,128,0,{0.15 + 0.85 * share:.2f})" if c.contributed else
                     f"rgba(230,180,0,{0.15 + 0.85 * share:.2f})" if c.influenced else "#eee")
            cells.append(f'<td style="background:{color}" title="contributed {c.contributed}, influenced '
                         f'{c.influenced}, unused {c.unused}">{c.contributed}/{c.influenced}/{c.unused}</td>')
        body.append(f"<tr><th>{item_hex(i)}</th>{''.join(cells)}</tr>")
    return (
        "<!doctype html><meta charset=utf-8><title>data usage: " + html.escape(hm.dataset) + "</title>"
        "<style>td,th{border:1px solid #ccc;padding:2px 6px;font:12px monospace}</style>"
        f"<h1>Data usage of {html.escape(hm.dataset)} over {hm.traces} traces</h1>"
        "<p>cells: contributed / influenced / unused</p>"
        f"<table><tr><th>item</th>{head}</tr>{''.join(body)}</table>"
    )


def _usage_color(c: HeatCell, traces: int) -> tuple[float, float, float]:
    """Green for contributed (darker = more often), yellow for only influenced, light grey unused."""
    share = (c.contributed + c.influenced) / traces if traces else 0.0
    alpha = 0.15 + 0.85 * share
    base = (0.0, 0.5, 0.0) if c.contributed else (0.9, 0.7, 0.0) if c.influenced else None
    if base is None:
        return (0.93, 0.93, 0.93)
    return tuple(1 - alpha * (1 - b) for b in base)


def heatmap_png(hm: Heatmap, path: str, max_items: int = 200) -> str:
    """Draw the heatmap as a PNG at ``path`` (rows: input items, columns: attributes; each cell
    says contributed/influenced/unused). Returns ``path``. Needs matplotlib."""
    try:
        import matplotlib  # deferred: only this path needs matplotlib
    except ImportError:
        raise UserError("the PNG heatmap needs matplotlib, which is not installed",
                        hint="pip install 'strata-prov[reports]' (or use heatmap_html)") from None
    matplotlib.use("Agg", force=False)
    from matplotlib import pyplot as plt  # deferred: only this path needs matplotlib

    items = hm.items[:max_items]
    attrs = hm.attributes
    grid = [[_usage_color(hm.cells[(i, a)], hm.traces) for a in attrs] for i in items]
    width = max(4.0, 1.2 + 0.9 * len(attrs))
    height = max(2.0, 1.5 + 0.3 * len(items))
    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    try:
        if items and attrs:
            ax.imshow(grid, aspect="auto", interpolation="nearest")
        ax.set_xticks(range(len(attrs)), labels=list(attrs), rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(items)), labels=[item_hex(i) for i in items],
                      fontsize=7, family="monospace")
        if len(items) * len(attrs) <= 400:
            for y, i in enumerate(items):
                for x, a in enumerate(attrs):
                    c = hm.cells[(i, a)]
                    ax.text(x, y, f"{c.contributed}/{c.influenced}/{c.unused}", ha="center", va="center", fontsize=7)
        more = f" (first {max_items} of {len(hm.items)} items)" if len(hm.items) > max_items else ""
        ax.set_title(f"Data usage of {hm.dataset} over {hm.traces} traces{more}\n"
                     "cells: contributed/influenced/unused\n"
                     "(green: contributed, yellow: only influenced, grey: unused)",
                     fontsize=8)
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return path


def audit(trace: Backtrace) -> list[tuple[str, int, tuple[str, ...], tuple[str, ...]]]:
    """Per traced input item: (dataset, item id, exposed attribute paths, influencing-only paths)."""
    out = []
    for item in trace.items:
        paths = [n.path for n in item.nodes]
        leaves = [n for n in item.nodes if not any(p.startswith(n.path + ".") for p in paths)]
        out.append((item.dataset, item.item_id,
                    tuple(n.path for n in leaves if n.contributing),
                    tuple(n.path for n in leaves if not n.contributing)))
    return out
