"""A self-contained HTML picture of a `Subgraph` (inline SVG, no scripts from anywhere else).

Layout (pure, computed here so the page needs no layout library):
- containment is drawn as nesting: every node sits inside the frame of one container
  (its first UNDER target, by id); a second container (a Cell under its Row *and* Column) is
  shown as a dotted line;
- top-level frames are placed in columns by provenance order (longest path along
  FEEDS/EMITS/DERIVED), so data flows left to right;
- data nodes are blue, process nodes orange; FEEDS/EMITS are solid arrows; DERIVED is dashed
  and drawn only when its process is not in the picture.
A small inline script marks `<body data-drawn=N>` with the number of node boxes the browser
actually laid out (tests read it with headless Chromium) and highlights a node's neighbours on click.
"""

from __future__ import annotations

import html
import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from store.export.property_graph import Node, Rel, RelType, Subgraph

NODE_W, NODE_H = 190, 42
PAD, HEADER, GAP, COL_GAP = 10, 42, 10, 90
COLORS = {"data": ("#dbe9fb", "#2f6db5"), "process": ("#fde3cf", "#c25e12")}
EDGE_COLORS = {RelType.FEEDS: "#2f6db5", RelType.EMITS: "#c25e12", RelType.DERIVED: "#666666",
               RelType.UNDER: "#999999", RelType.HAS_ELEMENT: "#999999"}


@dataclass(frozen=True, slots=True)
class Box:
    id: str
    x: float
    y: float
    w: float
    h: float
    frame: bool  # a container drawn as a frame around its members


def _containers(sg: Subgraph) -> tuple[dict[str, str], list[Rel]]:
    """(node -> the container it is drawn inside, UNDER rels not shown by nesting)."""
    under = sorted((r for r in sg.rels if r.type is RelType.UNDER), key=lambda r: (r.src, r.dst))
    parent: dict[str, str] = {}
    extra: list[Rel] = []
    for r in under:
        if r.src in parent or _reaches(parent, r.dst, r.src):
            extra.append(r)
        else:
            parent[r.src] = r.dst
    return parent, extra


def _reaches(parent: dict[str, str], start: str, target: str) -> bool:
    seen, cur = set(), start
    while cur in parent and cur not in seen:
        seen.add(cur)
        cur = parent[cur]
        if cur == target:
            return True
    return start == target


def _root(parent: dict[str, str], node: str) -> str:
    while node in parent:
        node = parent[node]
    return node


def _layers(sg: Subgraph, parent: dict[str, str]) -> dict[str, int]:
    """Longest-path layer of each top-level frame along the provenance relationships."""
    roots = sorted({_root(parent, n.id) for n in sg.nodes})
    succ: dict[str, set[str]] = {r: set() for r in roots}
    for r in sg.rels:
        if r.type in (RelType.FEEDS, RelType.EMITS, RelType.DERIVED):
            a, b = _root(parent, r.src), _root(parent, r.dst)
            if a != b:
                succ[a].add(b)
    layer = {r: 0 for r in roots}
    for _ in range(len(roots)):  # Bellman-Ford style; stops early, bounded on cycles
        changed = False
        for a in roots:
            for b in succ[a]:
                if layer[b] < layer[a] + 1 <= len(roots):
                    layer[b] = layer[a] + 1
                    changed = True
        if not changed:
            break
    return layer


def layout(sg: Subgraph) -> tuple[list[Box], list[Rel], float, float]:
    """Boxes for every node, the UNDER rels drawn as lines, and the canvas size."""
    parent, extra = _containers(sg)
    children: dict[str, list[str]] = {}
    for child, p in sorted(parent.items()):
        children.setdefault(p, []).append(child)
    size: dict[str, tuple[float, float]] = {}

    def measure(nid: str) -> tuple[float, float]:
        kids = children.get(nid, [])
        if not kids:
            size[nid] = (NODE_W, NODE_H)
            return size[nid]
        dims = [measure(k) for k in kids]
        cols = max(1, math.ceil(math.sqrt(len(kids)))) if len(kids) > 6 else 1
        rows = [dims[i : i + cols] for i in range(0, len(dims), cols)]
        w = max(sum(d[0] for d in row) + GAP * (len(row) - 1) for row in rows)
        h = sum(max(d[1] for d in row) for row in rows) + GAP * (len(rows) - 1)
        size[nid] = (max(w + 2 * PAD, NODE_W), h + HEADER + PAD)
        return size[nid]

    boxes: list[Box] = []

    def place(nid: str, x: float, y: float) -> None:
        w, h = size[nid]
        kids = children.get(nid, [])
        boxes.append(Box(nid, x, y, w, h, bool(kids)))
        cols = max(1, math.ceil(math.sqrt(len(kids)))) if len(kids) > 6 else 1
        cy = y + HEADER
        for i in range(0, len(kids), cols):
            row, cx = kids[i : i + cols], x + PAD
            for k in row:
                place(k, cx, cy)
                cx += size[k][0] + GAP
            cy += max(size[k][1] for k in row) + GAP

    layers = _layers(sg, parent)
    columns: dict[int, list[str]] = {}
    for root, lay in sorted(layers.items(), key=lambda kv: (kv[1], kv[0])):
        columns.setdefault(lay, []).append(root)
    x, height = 20.0, 0.0
    for lay in sorted(columns):
        y, width = 60.0, 0.0
        for root in columns[lay]:
            w, h = measure(root)
            place(root, x, y)
            y += h + 2 * GAP
            width = max(width, w)
        height = max(height, y)
        x += width + COL_GAP
    return boxes, extra, max(x, 400.0), height + 20


def _visible(value: str) -> str:
    """Newlines as ⏎; other invisible or text-moving characters (tabs, bidi overrides) as \\uXXXX."""
    return "".join(
        "⏎" if ch == "\n" else ch if ch == " " or unicodedata.category(ch)[0] not in "CZ"
        else f"\\u{ord(ch):04x}"
        for ch in value
    )


def _text(value: str, limit: int) -> str:
    value = _visible(value)
    shown = value if len(value) <= limit else value[: limit - 1] + "…"
    return html.escape(shown, quote=True)


def _anchor(box: Box, other: Box) -> tuple[float, float]:
    """Where a line to `other` leaves `box`: its side facing `other` (header row of frames)."""
    cy = box.y + (HEADER / 2 if box.frame else box.h / 2)
    if other.x >= box.x + box.w:
        return box.x + box.w, cy
    if other.x + other.w <= box.x:
        return box.x, cy
    return box.x + box.w / 2, (box.y + box.h if other.y > box.y else box.y)


def _node_svg(n: Node, b: Box) -> str:
    fill, stroke = COLORS[n.kind]
    tip = "\n".join(f"{k}: {v}" for k, v in n.properties)
    label = ":".join(n.labels[1:])
    chars = max(4, int((b.w - 16) / 7.4))  # about 7.4 px per character at 12 px bold
    if b.frame:
        shape = (f'<rect x="{b.x}" y="{b.y}" width="{b.w}" height="{b.h}" rx="8" fill="{fill}" '
                 f'fill-opacity="0.35" stroke="{stroke}" stroke-width="1.5"/>')
        ty = b.y + 19
    else:
        shape = (f'<rect x="{b.x}" y="{b.y}" width="{b.w}" height="{b.h}" rx="6" fill="{fill}" '
                 f'stroke="{stroke}" stroke-width="1.5"/>')
        ty = b.y + 17
    return (
        f'<g class="node {n.kind}" data-id="{html.escape(n.id, quote=True)}">'
        f"<title>{html.escape(tip)}</title>{shape}"
        f'<text x="{b.x + 8}" y="{ty}" class="id">{_text(n.id, chars)}</text>'
        f'<text x="{b.x + 8}" y="{ty + 15}" class="type">{_text(label, chars + 4)}</text></g>'
    )


def _edge_svg(r: Rel, a: Box, b: Box, dotted: bool = False) -> str:
    (x1, y1), (x2, y2) = _anchor(a, b), _anchor(b, a)
    dx = max(abs(x2 - x1) / 2, 30)
    color = EDGE_COLORS[r.type]
    dash = ' stroke-dasharray="2 3"' if dotted else (' stroke-dasharray="6 4"' if r.type is RelType.DERIVED else "")
    marker = "" if dotted else f' marker-end="url(#arrow-{r.type.value})"'
    via = f" via {r.props['via']}" if r.type is RelType.DERIVED else ""
    path = f"M{x1:.1f},{y1:.1f} C{x1 + dx:.1f},{y1:.1f} {x2 - dx:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    if abs(x2 - x1) < 1:
        path = f"M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}"
    return (
        f'<path class="rel {r.type.value}" data-src="{html.escape(r.src, quote=True)}" '
        f'data-dst="{html.escape(r.dst, quote=True)}" d="{path}" fill="none" stroke="{color}" '
        f'stroke-width="1.6"{dash}{marker}><title>{html.escape(r.type.value + via)}</title></path>'
    )


_SCRIPT = """
document.body.setAttribute('data-drawn', String(Array.from(document.querySelectorAll('g.node'))
  .filter(function (g) { var b = g.getBBox(); return b.width > 0 && b.height > 0; }).length));
document.querySelectorAll('g.node').forEach(function (g) {
  g.addEventListener('click', function () {
    var id = g.getAttribute('data-id');
    document.querySelectorAll('path.rel').forEach(function (p) {
      var on = p.getAttribute('data-src') === id || p.getAttribute('data-dst') === id;
      p.classList.toggle('hot', on);
    });
  });
});
"""

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 16px; background: #fff; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; } p.meta { margin: 0 0 12px; color: #555; font-size: 13px; }
ul.warn { color: #8a4b00; font-size: 13px; }
text.id { font-size: 12px; font-weight: 600; } text.type { font-size: 10.5px; fill: #555; }
g.node { cursor: pointer; } path.rel.hot { stroke-width: 3.5; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px;
            vertical-align: -2px; border: 1.5px solid; }
"""


def render(sg: Subgraph, title: str = "Strata provenance") -> str:
    """The whole HTML page as a string."""
    boxes, extra, width, height = layout(sg)
    by_id = {b.id: b for b in boxes}
    nodes = {n.id: n for n in sg.nodes}
    shown = {n.id for n in sg.nodes}
    edges: list[str] = []
    for r in sg.rels:
        if r.type in (RelType.FEEDS, RelType.EMITS):
            edges.append(_edge_svg(r, by_id[r.src], by_id[r.dst]))
        elif r.type is RelType.DERIVED and r.props.get("via") not in shown:
            edges.append(_edge_svg(r, by_id[r.src], by_id[r.dst]))
        elif r.type is RelType.HAS_ELEMENT:
            edges.append(_edge_svg(r, by_id[r.src], by_id[r.dst], dotted=True))
    edges += [_edge_svg(r, by_id[r.src], by_id[r.dst], dotted=True) for r in extra]
    markers = "".join(
        f'<marker id="arrow-{t.value}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
        for t, c in EDGE_COLORS.items()
    )
    # frames first (outermost first, as placed), so members and lines are drawn on top
    frames = [_node_svg(nodes[b.id], b) for b in boxes if b.frame]
    leaves = [_node_svg(nodes[b.id], b) for b in boxes if not b.frame]
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in sg.warnings)
    legend = (
        '<div class="legend">'
        f'<span><i style="background:{COLORS["data"][0]};border-color:{COLORS["data"][1]}"></i>data</span>'
        f'<span><i style="background:{COLORS["process"][0]};border-color:{COLORS["process"][1]}"></i>process</span>'
        "<span>frames: containment (UNDER)</span><span>→ FEEDS / EMITS</span>"
        "<span>- - → DERIVED (process not shown)</span><span>···· other containment</span></div>"
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class=\"meta\">{len(sg.nodes)} nodes, {len(sg.rels)} "
        "relationships. Hover a box for its attributes; click it to highlight its relationships.</p>"
        f"{legend}" + (f'<ul class="warn">{warn}</ul>' if warn else "")
        + f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}"><defs>{markers}</defs>'
        + "".join(frames) + "".join(edges) + "".join(leaves)
        + f"</svg><script>{_SCRIPT}</script></body></html>\n"
    )


def write_html(sg: Subgraph, path, title: str = "Strata provenance"):
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(sg, title), encoding="utf-8")
    return out
