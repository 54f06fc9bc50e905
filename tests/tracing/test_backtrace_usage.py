"""Data-usage heatmap and audit report (capture/tracing/reports.py) over hand-built traces."""

from __future__ import annotations

from capture.operators import Manipulation as M
from capture.operators import OperatorProv, OpInput, OpType
from capture.tracing.backtrace import backtrace
from capture.tracing.reports import audit, heatmap, heatmap_html

OPS = [OperatorProv(1, OpType.SOURCE, "read.json", (), (), dataset="tweets"),
       OperatorProv(2, OpType.FILTER, "filter", (OpInput(1, ("retweet_cnt",)),), ()),
       OperatorProv(3, OpType.SELECT, "select", (OpInput(2, ("text", "user.id_str")),),
                    (M(0, "text", "text"), M(0, "user.id_str", "uid")))]


def run(matched):
    return backtrace(OPS, 3, matched, lambda oid, ids: [])


def test_audit_lists_exposed_and_influencing_attributes_per_item():
    t = run({10: ["text"], 11: ["uid"]})
    assert audit(t) == [
        ("tweets", 10, ("text",), ("retweet_cnt", "user.id_str")),
        ("tweets", 11, ("user.id_str",), ("retweet_cnt", "text")),
    ]


def test_heatmap_counts_contributed_influenced_and_unused_over_a_workload():
    workload = [run({10: ["text"]}), run({10: ["uid"], 11: ["uid"]}), run({11: ["text"]})]
    hm = heatmap(workload, "tweets", attributes=["user.name"])
    assert hm.traces == 3 and hm.items == (10, 11)
    assert hm.attributes == ("retweet_cnt", "text", "user.id_str", "user.name")
    c = hm.cells
    assert (c[(10, "text")].contributed, c[(10, "text")].influenced, c[(10, "text")].unused) == (1, 1, 1)
    assert (c[(11, "user.id_str")].contributed, c[(11, "user.id_str")].influenced) == (1, 1)
    assert c[(10, "retweet_cnt")].influenced == 2 and c[(10, "user.name")].unused == 3
    assert hm.totals()["retweet_cnt"].influenced == 4
    assert len(hm.rows()) == 8
    page = heatmap_html(hm)
    assert page.count("<tr>") == 3 and "user.name" in page and "1/1/1" in page


def test_heatmap_png_draws_one_colored_cell_per_item_and_attribute(tmp_path):
    import matplotlib.image as mpimg

    from capture.tracing.reports import _usage_color, heatmap_png

    workload = [run({10: ["text"]}), run({10: ["uid"], 11: ["uid"]}), run({11: ["text"]})]
    hm = heatmap(workload, "tweets", attributes=["user.name"])
    path = heatmap_png(hm, str(tmp_path / "usage.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    pixels = mpimg.imread(path)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 300
    # the colors the cells use: contributed = green, only influenced = yellow, unused = grey
    text, retweet, name = hm.cells[(10, "text")], hm.cells[(10, "retweet_cnt")], hm.cells[(10, "user.name")]
    green, yellow, grey = (_usage_color(c, hm.traces) for c in (text, retweet, name))
    assert green[1] > green[0] and green[1] > green[2]
    assert yellow[0] > yellow[2] and yellow[1] > yellow[2]
    assert grey[0] == grey[1] == grey[2]
    colors = {tuple(round(float(v), 2) for v in px[:3]) for row in pixels[::4] for px in row[::4]}
    assert any(abs(c[0] - round(green[0], 2)) < 0.02 and abs(c[1] - round(green[1], 2)) < 0.02 for c in colors)
    assert any(abs(c[0] - round(yellow[0], 2)) < 0.02 and abs(c[2] - round(yellow[2], 2)) < 0.02 for c in colors)
