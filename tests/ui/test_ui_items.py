"""The web UI over a store of triples (docs/ui.md, "A store of triples, bundles or PROV"): no
OpenLineage events, no captured runs; its items are found by id prefix and drawn with the process
between an item and its sources, through the component index (`strata index`) or, without one,
DuckDB over the edges. Assertions are on the status line, the accessible list and the details,
as in test_ui.py."""

from __future__ import annotations

import httpx
import pytest
from support.ui import UiServer, focus, strata

SOURCES = 30  # b1's sources: more than the page draws at once (25)
B1, A00 = "element:b1", "element:a00"
MAKE_B1 = 'process:["R1_2","b1"]'


def triples_csv(path) -> None:
    """a00..a29 -> b1 (R1_2); b1 -> c1, c2 (R2_3); a00 -> c3 (R1_3)."""
    rows = [f"a{i:02d},b1,R1_2,T01,T02" for i in range(SOURCES)]
    rows += ["b1,c1,R2_3,T02,T03", "b1,c2,R2_3,T02,T03", "a00,c3,R1_3,T01,T03"]
    path.write_text("src,dst,op,src_table,dst_table\n" + "\n".join(rows) + "\n")


@pytest.fixture(scope="module", params=["indexed", "no-index"])
def server(request, tmp_path_factory):
    work = tmp_path_factory.mktemp("ui-items")
    triples_csv(work / "t.csv")
    root = str(work / "store")
    strata(root, "ingest", "--format", "triples", str(work / "t.csv"))
    if request.param == "indexed":
        strata(root, "index")
    srv = UiServer(root).start()
    yield srv
    srv.stop()


def expect():
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect


def item(page, node_id: str):
    return page.locator(f"#node-list li[data-id='{node_id}']")


def shown(page) -> list[str]:
    return page.eval_on_selector_all("#node-list li", "els => els.map(e => e.dataset.id)")


def test_search_by_prefix_open_expand_and_more(page, server):
    e = expect()
    page.goto(server.url)
    e(page.locator("#status")).to_contain_text("store version")
    page.fill("#search", "a")
    e(page.locator("#status")).to_contain_text(f"{SOURCES} matches")
    e(page.locator("#search-results li")).to_have_count(20)
    e(page.locator("#search-results li").first).to_contain_text("element a00")
    page.fill("#search", "b")
    e(page.locator("#search-results li")).to_have_count(1)
    page.locator(f"#search-results li[data-id='{B1}']").click()
    e(item(page, B1)).to_contain_text("start")
    e(page.locator("#status")).to_contain_text("element b1: item level, depth 1, both")
    # one level each way: the process that made b1 with 25 of its 30 sources, "+5 more";
    # the processes that made c1 and c2 from it, and c1, c2
    e(item(page, f"more:up:{MAKE_B1}")).to_contain_text(f"+{SOURCES - 25} more")
    assert sum(1 for i in shown(page) if i.startswith("element:a")) == 25
    assert {'process:["R2_3","c1"]', "element:c1", 'process:["R2_3","c2"]', "element:c2"} <= set(shown(page))
    e(item(page, MAKE_B1)).to_contain_text("R1_2 deriving b1")
    e(page.locator("#edge-list")).to_contain_text("element a00 → process R1_2 (io R1_2)")
    e(page.locator("#edge-list")).to_contain_text("process R1_2 → element b1 (io R1_2)")
    # a source's other consumer is hidden until it is expanded
    e(item(page, A00)).to_contain_text("collapsed: 0 up, 1 down hidden")
    item(page, A00).get_by_role("button", name="Expand a00").click()
    e(item(page, "element:c3")).to_be_visible()
    e(item(page, A00)).to_contain_text("expanded")
    e(page.locator("#status")).to_contain_text("expanded element a00")
    item(page, A00).get_by_role("button", name="Collapse a00").click()
    e(item(page, "element:c3")).to_have_count(0)
    # the rest of b1's sources
    item(page, f"more:up:{MAKE_B1}").locator("button.node").click()
    e(page.locator('#node-list li[data-kind="element"]')).to_have_count(SOURCES + 3)
    # details: table, direct sources and consumers
    item(page, B1).locator("button.node").click()
    e(page.locator("#details")).to_contain_text(f"Direct sources ({SOURCES})")
    e(page.locator("#details")).to_contain_text("Direct consumers (2)")
    e(page.locator("#details")).to_contain_text("T02")


def test_the_keyboard_alone_searches_opens_and_expands_an_item(page, server):
    e, kb = expect(), page.keyboard
    page.goto(server.url)
    e(page.locator("#status")).to_contain_text("store version")
    kb.press("/")
    kb.type("c")
    e(page.locator("#search-results li")).to_have_count(3)
    kb.press("ArrowDown")  # c1, then c2
    kb.press("Enter")
    e(item(page, "element:c2")).to_contain_text("start")
    page.wait_for_function("document.activeElement.closest('li')?.dataset.id === 'element:c2'")

    assert set(shown(page)) == {"element:c2", 'process:["R2_3","c2"]', B1}
    focus(page, B1, 10)
    kb.press("e")  # b1's own process and sources, and its other consumer
    e(item(page, B1)).to_contain_text("expanded")
    e(item(page, "element:c1")).to_be_visible()
    e(item(page, MAKE_B1)).to_be_visible()
    kb.press("Enter")
    e(page.locator("#details")).to_contain_text("element b1")
    focus(page, MAKE_B1, 10)
    kb.press("Enter")
    e(page.locator("#details")).to_contain_text(f"Sources ({SOURCES})")


def test_item_api_answers_and_says_what_is_unknown(server):
    def get(path, **params):
        return httpx.get(f"{server.url}/api/strata/v1/{path}", params=params, timeout=30)

    g = get("graph", node=MAKE_B1, direction="up", offset=25, limit=100).json()
    assert g["level"] == "item" and g["more"] == []
    assert sorted(n["name"] for n in g["nodes"] if n["kind"] == "element") == [f"a{i:02d}" for i in range(25, SOURCES)]
    r = get("graph", node="element:nope")
    assert r.status_code == 404 and "search?q=PREFIX" in r.json()["hint"]
    assert get("graph", node='process:["R9","b1"]').status_code == 404
    assert get("search", q="zz").json()["totalCount"] == 0
