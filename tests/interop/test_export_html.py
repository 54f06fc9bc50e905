"""The HTML picture: layout invariants (pure) and a real render in headless Chromium."""

from __future__ import annotations

import html as html_lib
import re
import shutil
import subprocess

import pytest
from support.export_helpers import NASTY

from store.export import RelType, build
from store.export.html import layout, render

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def _v(i, kind, type_, n_ce=1, attrs=None):
    return {"id": i, "kind": kind, "type": type_, "n_ce": n_ce, "attrs": attrs or {}}


def sample():
    """The awkward-id scenario as collected rows: a cell of a table, a job deriving two outputs."""
    vertices = [
        _v(NASTY["table"], "data", "Table"), _v(NASTY["row"], "data", "Row"),
        _v(NASTY["col"], "data", "Column"), _v(NASTY["cell"], "data", "Column+Row"),
        _v("out_table", "data", "Table"), _v("out_row", "data", "Row"),
        _v("script", "process", "Script"), _v(NASTY["job"], "process", "Job", attrs={"note": "<b>&amp;</b>"}),
        _v("lonely", "data", "Table"),
    ]
    edges = [
        {"src": NASTY["cell"], "process": NASTY["job"], "dst": "out_row"},
        {"src": NASTY["table"], "process": NASTY["job"], "dst": "out_table"},
    ]
    ancestors = [(NASTY["row"], NASTY["table"]), (NASTY["col"], NASTY["table"]),
                 ("out_row", "out_table"), (NASTY["job"], "script")]
    members = [{"vertex": NASTY["cell"], "ce": 0, "granularity": g, "elem": NASTY[k]}
               for g, k in (("Row", "row"), ("Column", "col"))]
    return build(vertices, edges, ancestors, members)


def inside(a, b):
    return b.x <= a.x and b.y <= a.y and a.x + a.w <= b.x + b.w and a.y + a.h <= b.y + b.h


def overlap(a, b):
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def test_layout_nests_containment_and_flows_left_to_right():
    sg = sample()
    boxes, extra, _, _ = layout(sg)
    box = {b.id: b for b in boxes}
    assert set(box) == {n.id for n in sg.nodes}
    assert inside(box[NASTY["row"]], box[NASTY["table"]])
    # the cell is drawn inside one of its containers (the first by id), the other is a dotted line
    first, other = sorted([NASTY["row"], NASTY["col"]])
    assert inside(box[NASTY["cell"]], box[first]) and box[first].frame
    assert [(r.src, r.dst) for r in extra] == [(NASTY["cell"], other)]
    assert inside(box[NASTY["job"]], box["script"]) and box["script"].frame
    # provenance flows left to right: input table, then the job's script, then the outputs
    assert box[NASTY["table"]].x < box["script"].x < box["out_table"].x
    # boxes that are not nested do not overlap
    for a in boxes:
        for b in boxes:
            if a is not b and not inside(a, b) and not inside(b, a):
                assert not overlap(a, b), (a.id, b.id)


def test_page_is_self_contained_and_escapes_everything():
    page = render(sample(), title="<lineage> & 'more'")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # no CDN, no fetches
    assert "<b>&amp;</b>" not in page and "&lt;b&gt;&amp;amp;&lt;/b&gt;" in page
    ids = {html_lib.unescape(m) for m in re.findall(r'<g class="node \w+" data-id="([^"]*)"', page)}
    assert ids == {n.id for n in sample().nodes}
    # labels show invisible characters instead of obeying them (a bidi override would flip text)
    labels = re.findall(r'<text [^>]*class="id">([^<]*)</text>', page)
    assert "Zürich ✓ 北京 🚀 — \\u202ertl" in labels
    assert not any("\u202e" in label or "\x07" in label for label in labels)


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium): cannot render the picture")
    return path


def test_chromium_draws_every_node(tmp_path):
    browser = chromium()
    sg = sample()
    page = tmp_path / "lineage.html"
    page.write_text(render(sg), encoding="utf-8")
    proc = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=2000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, encoding="utf-8", timeout=120,
    )
    dom = proc.stdout
    # the inline script counted node boxes with a non-empty layout box in the real browser
    assert re.search(r'data-drawn="(\d+)"', dom), proc.stderr[-2000:]
    assert int(re.search(r'data-drawn="(\d+)"', dom).group(1)) == len(sg.nodes)
    drawn = {html_lib.unescape(m) for m in re.findall(r'data-id="([^"]*)"', dom)}
    assert set(NASTY.values()) <= drawn  # awkward ids survive the browser's parser
    assert dom.count('class="rel FEEDS"') == 2 and dom.count('class="rel EMITS"') == 2
    shot = tmp_path / "shot.png"
    subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile2'}",
         "--window-size=1400,900", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )
    assert shot.stat().st_size > 10_000  # a real picture, not a blank page


def test_under_and_has_element_rels_exist_in_sample():
    types = {r.type for r in sample().rels}
    assert {RelType.UNDER, RelType.FEEDS, RelType.EMITS, RelType.DERIVED} <= types
