"""The web UI in Chromium (docs/ui.md): one `strata ui` over a store of OpenLineage events at two
versions (examples/openlineage/orders.jsonl, then a `publish` job and 40 jobs reading `events`);
every assertion is on what the page shows — the status line, the accessible list of nodes and
edges, the details panel — never on the canvas. The row level (a captured store, so Spark) is
tests/tracing/test_trace_ui.py."""

from __future__ import annotations

import shutil
import time

import httpx
import pytest
from support.paths import ROOT
from support.serve import Server, strata_cli
from support.ui import FANOUT, UiServer, focus, two_version_store

SCREENSHOT = ROOT / "build" / "ui" / "ui.png"  # the artifact docs/ui.png is taken from


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("ui")
    srv = UiServer(two_version_store(str(work / "store"), work)).start()
    yield srv
    srv.stop()


def expect():
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect


def shown(page) -> list[str]:
    """The ids of the nodes the accessible list shows."""
    return page.eval_on_selector_all("#node-list li", "els => els.map(e => e.dataset.id)")


def item(page, node_id: str):
    return page.locator(f'#node-list li[data-id="{node_id}"]')


def open_node(page, server, text: str, node_id: str) -> None:
    """Type `text` in the search box and pick the hit `node_id` with the mouse."""
    page.goto(server.url)
    expect()(page.locator("#status")).to_contain_text("store version 2")
    page.fill("#search", text)
    page.locator(f'#search-results li[data-id="{node_id}"]').click()
    expect()(item(page, node_id)).to_contain_text("start")


MART, STG, RAW = "dataset:warehouse:mart", "dataset:warehouse:stg", "dataset:warehouse:raw"


def test_search_lists_datasets_jobs_runs_and_fields(page, server):
    page.goto(server.url)
    expect()(page.locator("#status")).to_contain_text("store version 2")
    page.fill("#search", "amount")
    hits = page.locator("#search-results li")
    expect()(hits).to_have_count(2)
    assert sorted(hits.all_inner_texts()) == ["FIELD amount in raw warehouse", "FIELD amount in stg warehouse"]
    page.fill("#search", "warehouse:rep")  # a namespace and a prefix
    expect()(hits.first).to_contain_text("report")
    assert hits.first.get_attribute("data-id") == "job:warehouse:report"
    page.fill("#search", "00000000-0000-0000-0001-00000000000")
    first_run = "run 00000000-0000-0000-0001-000000000000 (load_00"
    expect()(page.locator("#search-results li").first).to_contain_text(first_run)


def test_expand_collapse_depth_direction_and_containment(page, server):
    open_node(page, server, "mart", MART)
    e = expect()
    # one level each way, a job's runs inside it
    assert set(shown(page)) == {MART, "job:warehouse:report", STG, "job:warehouse:publish",
                                "dataset:warehouse:dashboard", "run:00000000-0000-0000-0000-000000000002",
                                "run:00000000-0000-0000-0000-0000000000a1"}
    e(item(page, "run:00000000-0000-0000-0000-000000000002")).to_contain_text("in report")
    e(item(page, STG)).to_contain_text("collapsed: 1 up, 0 down hidden")
    item(page, STG).get_by_role("button", name="Expand stg").click()
    e(item(page, RAW)).to_be_visible()
    e(item(page, STG)).to_contain_text("expanded")
    e(item(page, "job:warehouse:extract")).to_contain_text("extract (3 runs)")
    item(page, STG).get_by_role("button", name="Collapse stg").click()
    e(item(page, RAW)).to_have_count(0)
    e(item(page, "job:warehouse:extract")).to_have_count(0)
    # upstream only, depth 2: the whole chain back to raw, nothing downstream
    page.select_option("#direction", "up")
    page.fill("#depth", "2")
    page.press("#depth", "Enter")
    e(item(page, RAW)).to_be_visible()
    assert "job:warehouse:publish" not in shown(page)
    e(page.locator("#status")).to_contain_text("depth 2, up")
    e(page.locator("#edge-list li")).to_have_count(4)
    assert "dataset raw → job extract (io)" in page.locator("#edge-list").inner_text()


def test_too_many_neighbours_are_summarized_and_expandable(page, server):
    open_node(page, server, "events", "dataset:warehouse:events")
    more = item(page, "more:down:dataset:warehouse:events")
    e = expect()
    e(more).to_contain_text(f"+{FANOUT - 25} more")
    assert sum(1 for i in shown(page) if i.startswith("job:")) == 25
    more.locator("button.node").click()
    e(more).to_have_count(0)
    e(page.locator('#node-list li[data-kind="job"]')).to_have_count(FANOUT)


def test_a_large_view_is_laid_out_in_columns(page, server):
    """Past 800 nodes (forced here with ?layout=columns) the page lays the graph out in columns
    by distance from the start node instead of with dagre: upstream left, downstream right."""
    page.goto(f"{server.url}/?node=dataset:warehouse:events&direction=down&limit=100&layout=columns")
    expect()(page.locator("#status")).to_contain_text(f"{3 * FANOUT + 1} nodes")
    x = page.evaluate("""() => Object.fromEntries(['dataset:warehouse:events', 'job:warehouse:load_00',
        'dataset:warehouse:table_00'].map((id) => [id, window.strataUi.cy.getElementById(id).position('x')]))""")
    assert x["dataset:warehouse:events"] < x["job:warehouse:load_00"] < x["dataset:warehouse:table_00"]


def test_column_level_keeps_the_selection_and_draws_both_kinds(page, server):
    open_node(page, server, "stg", STG)
    e = expect()
    page.get_by_role("radio", name="Column").check()
    e(page.locator("#status")).to_contain_text("dataset stg: column level")
    e(item(page, "datasetField:warehouse:stg:amount")).to_contain_text("amount in stg")
    edges = page.locator("#edge-list")
    e(edges).to_contain_text("field amount → field amount (direct IDENTITY)")
    e(edges).to_contain_text("field status → dataset stg (indirect FILTER)")
    e(edges).to_contain_text("field amount → field total (direct AGGREGATION)")
    assert page.locator('#edge-list li[data-kind="indirect"]').count() == 1
    item(page, "datasetField:warehouse:stg:amount").locator("button.node").click()
    e(page.locator("#details")).to_contain_text("datasetField:warehouse:raw:amount DIRECT IDENTITY")
    page.evaluate("document.querySelector('aside').scrollTop = 0")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))  # docs/ui.png
    # a field selected at column level: the dataset level shows its dataset
    item(page, "datasetField:warehouse:mart:total").locator("button.node").click()
    e(page.locator("#details")).to_contain_text("field total")
    page.get_by_role("radio", name="Dataset").check()
    e(page.locator("#status")).to_contain_text("dataset mart: dataset level")
    e(item(page, MART)).to_contain_text("start")


def test_version_picker_and_diff(page, server):
    open_node(page, server, "mart", MART)
    e = expect()
    page.select_option("#version", "1")
    e(page.locator("#status")).to_contain_text("version 1")
    e(item(page, "dataset:warehouse:dashboard")).to_have_count(0)
    assert set(i for i in shown(page) if not i.startswith("run:")) == {MART, "job:warehouse:report", STG}
    page.select_option("#compare", "2")
    e(item(page, "dataset:warehouse:dashboard")).to_contain_text("added")
    e(item(page, "job:warehouse:publish")).to_contain_text("added")
    assert "added" not in item(page, STG).inner_text()
    # a dataset's own two versions (the runs that wrote it), compared by strata diff
    item(page, STG).locator("button.node").click()
    page.get_by_role("button", name="Diff", exact=True).click()
    e(page.locator("#diff-out")).to_contain_text(
        "1 (2024-01-01T00:05:00Z) → 2 (2024-01-01T00:35:00Z): 0 only in the first, 0 only in the second, 0 changed; "
        "shared: 1 upstream")


def test_path_between_two_nodes_is_highlighted(page, server):
    open_node(page, server, "mart", MART)
    e = expect()
    item(page, STG).get_by_role("button", name="Expand stg").click()
    e(item(page, RAW)).to_be_visible()
    item(page, RAW).locator("button.node").click()
    page.get_by_role("button", name="Path end").click()
    item(page, "dataset:warehouse:dashboard").locator("button.node").click()
    e(page.locator("#details")).to_contain_text("dataset dashboard")
    page.get_by_role("button", name="Path end").click()
    e(page.locator("#status")).to_contain_text("path from dataset raw to dataset dashboard: 6 steps, 7 nodes")
    on_path = page.eval_on_selector_all("#node-list li.on-path", "els => els.map(e => e.dataset.id)")
    assert set(on_path) == {RAW, "job:warehouse:extract", STG, "job:warehouse:report", MART, "job:warehouse:publish",
                            "dataset:warehouse:dashboard"}


def test_iql_of_the_view_runs_and_draws(page, server):
    open_node(page, server, "mart", MART)
    e = expect()
    e(page.locator("#view-iql")).to_contain_text("x influences(2) v and v.name = 'mart'")
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Run query").click()
    e(page.locator("#console-out")).to_contain_text("3 rows")
    page.get_by_role("button", name="Draw results").click()
    e(page.locator("#status")).to_contain_text("drew 3 nodes")
    assert {MART, STG, "job:warehouse:report"} <= set(shown(page))


def test_the_keyboard_alone_walks_search_expand_level_path_and_version(page, server):
    page.goto(server.url)
    e, kb = expect(), page.keyboard
    e(page.locator("#status")).to_contain_text("store version 2")
    kb.press("/")
    kb.type("stg")
    e(page.locator("#search-results li").first).to_contain_text("stg")
    kb.press("Enter")
    e(item(page, STG)).to_contain_text("start")

    # the chosen node's view opens with the focus in the list, on the node
    page.wait_for_function(f"document.activeElement.closest('li')?.dataset.id === '{STG}'")
    focus(page, RAW)
    kb.press("e")
    e(item(page, RAW)).to_contain_text("expanded")
    kb.press("p")
    focus(page, MART)
    kb.press("p")
    e(page.locator("#status")).to_contain_text("path from dataset raw to dataset mart: 4 steps")
    kb.press("Enter")
    e(page.locator("#details")).to_contain_text("dataset mart")
    kb.press("2")
    e(page.locator("#status")).to_contain_text("dataset mart: column level")
    e(item(page, "datasetField:warehouse:mart:total")).to_be_visible()
    kb.press("1")
    e(page.locator("#status")).to_contain_text("dataset mart: dataset level")
    page.wait_for_function(f"document.activeElement.closest('li')?.dataset.id === '{MART}'")
    kb.press("v")
    kb.press("ArrowDown")  # versions are listed newest first
    e(page.locator("#status")).to_contain_text("version 1")
    e(item(page, "dataset:warehouse:dashboard")).to_have_count(0)


def test_ui_is_read_only_and_takes_no_writer_lock(server):
    r = httpx.post(f"{server.url}/api/v1/lineage", json={}, timeout=10)
    assert r.status_code == 405
    assert r.json() == {"error": "this server is read-only (strata ui): it takes no events",
                        "hint": "run strata serve on the store to receive OpenLineage events"}
    assert httpx.get(f"{server.url}/api/v1/health", timeout=10).json()["readOnly"] is True
    from store.writer_lock import served_by

    assert served_by(server.root) is None  # a CLI write to the store goes ahead meanwhile


def test_ui_command_errors_exit_2_with_a_message(tmp_path):
    r = strata_cli(str(tmp_path / "nothing-here"), "ui", "--no-browser")
    assert r.returncode == 2 and f"no store at {tmp_path / 'nothing-here'}" in r.stderr and "Traceback" not in r.stderr
    r = strata_cli(str(tmp_path), "--as-of", "1", "ui", "--no-browser")
    assert r.returncode == 2 and "drop --as-of" in r.stderr


def test_graph_api_pages_past_the_limit_and_says_what_is_wrong(server):
    def get(path, **params):
        return httpx.get(f"{server.url}/api/strata/v1/{path}", params=params, timeout=30)

    g = get("graph", node="dataset:warehouse:events", direction="down").json()
    jobs = {n["id"] for n in g["nodes"] if n["kind"] == "job"}
    assert len(jobs) == 25 and g["more"] == [{"node": "dataset:warehouse:events", "direction": "down",
                                              "count": FANOUT - 25, "offset": 25}]
    rest = get("graph", node="dataset:warehouse:events", direction="down", offset=25, limit=100).json()
    more = {n["id"] for n in rest["nodes"] if n["kind"] == "job"}
    assert len(more) == FANOUT - 25 and not more & jobs and rest["more"] == []
    v1 = get("graph", node=MART, as_of=1).json()
    assert v1["version"] == 1 and "job:warehouse:publish" not in {n["id"] for n in v1["nodes"]}
    col = get("graph", node="datasetField:warehouse:mart:total", level="column", direction="up").json()
    assert [(e["source"], e["kind"], e["label"]) for e in col["edges"]] == [
        ("datasetField:warehouse:stg:amount", "direct", "AGGREGATION")]
    r = get("graph", node="dataset:warehouse:nothing")
    assert r.status_code == 404 and r.json()["hint"] == "GET /api/strata/v1/search?q=NAME finds node ids"
    r = get("rows", run="no-such-run")
    assert r.status_code == 400 and "no captured run" in r.json()["error"]


def test_sigterm_stops_the_ui_at_once_while_a_browser_holds_it_open(page, server):
    """Ctrl-C or SIGTERM ends `strata ui` within seconds, not after uvicorn's 30-second grace,
    although the page still holds its keep-alive connections."""
    other = UiServer(server.root).start()
    try:
        page.goto(other.url)
        expect()(page.locator("#status")).to_contain_text("store version 2")
        page.fill("#search", "amount")
        expect()(page.locator("#search-results li")).to_have_count(2)
    finally:
        began = time.monotonic()
        code = other.stop(timeout=60)
        took = time.monotonic() - began
    assert code == 0, other.log()
    assert took < 5, f"strata ui took {took:.1f} s to stop"
    assert '"stopped"' in other.log()


def test_served_with_an_api_key_the_page_asks_for_it_once_per_tab(page, server, tmp_path):
    """`strata serve --api-key`: the page loads without the key, asks for it at its first API call
    (again after a wrong one), and keeps it for the tab: a reload asks nothing."""
    store = tmp_path / "served"
    shutil.copytree(server.root, store)
    served = Server(str(store), env={"STRATA_API_KEY": "s3cret"}).start()
    asked: list[str] = []

    def answer(dialog):
        asked.append(dialog.message)
        dialog.accept("wrong" if len(asked) == 1 else "s3cret")

    page.on("dialog", answer)
    try:
        page.goto(served.url)
        expect()(page.locator("#status")).to_contain_text("store version 2")
        assert asked == ["This server needs its API key:"] * 2
        page.fill("#search", "amount")
        expect()(page.locator("#search-results li")).to_have_count(2)
        page.reload()
        expect()(page.locator("#status")).to_contain_text("store version 2")
        assert len(asked) == 2
        assert httpx.get(f"{served.url}/api/v1/namespaces", timeout=10).status_code == 401
    finally:
        assert served.stop() == 0, served.log()
