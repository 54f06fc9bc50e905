"""Data-usage heatmap and audit report over traces (Pebble Section 7.3.5), pure Python.

* :func:`heatmap`: over a workload of traces, per input item x attribute, in how many traces the
  attribute contributed, only influenced, or was unused; :func:`heatmap_html` draws it.
* :func:`audit`: per traced input item, the attributes a result exposes (contributing leaves) and
  those that only influenced it.

Attributes are leaf paths with array positions generalized to ``[pos]`` (``user_mentions.[pos].id_str``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

from capture.backtrace import Trace, TracedItem

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


def heatmap(traces: Iterable[Trace], dataset: str, attributes: Iterable[str] = ()) -> Heatmap:
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
        body.append(f"<tr><th>{i & 0xFFFFFFFFFFFFFFFF:016x}</th>{''.join(cells)}</tr>")
    return (
        "<!doctype html><meta charset=utf-8><title>data usage: " + html.escape(hm.dataset) + "</title>"
        "<style>td,th{border:1px solid #ccc;padding:2px 6px;font:12px monospace}</style>"
        f"<h1>Data usage of {html.escape(hm.dataset)} over {hm.traces} traces</h1>"
        "<p>cells: contributed / influenced / unused</p>"
        f"<table><tr><th>item</th>{head}</tr>{''.join(body)}</table>"
    )


def audit(trace: Trace) -> list[tuple[str, int, tuple[str, ...], tuple[str, ...]]]:
    """Per traced input item: (dataset, item id, exposed attribute paths, influencing-only paths)."""
    out = []
    for item in trace.items:
        paths = [n.path for n in item.nodes]
        leaves = [n for n in item.nodes if not any(p.startswith(n.path + ".") for p in paths)]
        out.append((item.dataset, item.item_id,
                    tuple(n.path for n in leaves if n.contributing),
                    tuple(n.path for n in leaves if not n.contributing)))
    return out
