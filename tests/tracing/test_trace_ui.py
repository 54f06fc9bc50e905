"""The row level of the web UI (docs/ui.md): a dataset written by a captured run, its output
items, one of them traced to the input records behind it, each with its source (file:line) and
its values, as `strata trace` gives them. Capturing needs Spark (this module's fixture); the
server and the trace do not (`strata ui` runs with JAVA_HOME pointing nowhere). The rest of the
UI's tests, which need no JVM, are tests/ui/."""

from __future__ import annotations

import pytest
from support.paths import ROOT
from support.ui import UiServer, browser, page  # noqa: F401 - fixtures

TWEETS = str(ROOT / "examples" / "capture" / "tweets.json")


@pytest.fixture(scope="module")
def server(spark, tmp_path_factory):
    from pyspark.sql import functions as F

    from capture import Tracker
    from store import Store

    base = tmp_path_factory.mktemp("ui-rows")
    root = str(base / "store")
    tracker = Tracker(spark, Store.open(root, spark=spark), pipeline="tweets_by_user", model=False)
    tweets = tracker.read.json(TWEETS, name="tweets")
    by_user = (tweets.filter(F.col("retweet_cnt") == 0)
               .groupBy(F.col("user.id_str").alias("user")).agg(F.collect_list("text").alias("texts")))
    tracker.write(by_user, str(base / "by_user"), format="parquet")
    srv = UiServer(root).start()
    yield srv
    srv.stop()


def test_a_row_traced_to_its_input_records(page, server):  # noqa: F811 - the imported fixture
    from playwright.sync_api import expect

    page.goto(server.url)
    expect(page.locator("#status")).to_contain_text("store version")
    page.fill("#search", "by_user")
    expect(page.locator("#search-results li").first).to_contain_text("by_user")
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text("dataset level")
    page.get_by_role("radio", name="Row").check()
    expect(page.locator("#status")).to_contain_text("row level: 2 output items of captured run tweets_by_user/")
    page.get_by_role("button", name='trace output item user: "lp", texts: ["Hello World","Bonjour"]').click()
    check_trace(page)
    # back to the dataset level: the selection (the output item) keeps its dataset
    page.keyboard.press("1")
    expect(page.locator("#status")).to_contain_text("by_user: dataset level")


def test_the_keyboard_alone_traces_a_row(page, server):  # noqa: F811 - the imported fixture
    from playwright.sync_api import expect

    page.goto(server.url)
    kb = page.keyboard
    expect(page.locator("#status")).to_contain_text("store version")
    kb.press("/")
    kb.type("by_user")
    expect(page.locator("#search-results li").first).to_contain_text("by_user")
    kb.press("Enter")
    expect(page.locator("#status")).to_contain_text("dataset level")
    page.wait_for_function("document.activeElement.closest('#node-list') !== null")  # the focus in the list
    kb.press("3")
    expect(page.locator("#status")).to_contain_text("row level: 2 output items")
    page.wait_for_function("document.activeElement.closest('#rows') !== null")  # the focus on the first item
    for _ in range(3):
        if '"lp"' in page.evaluate("document.activeElement.textContent"):
            break
        kb.press("ArrowDown")
    kb.press("Enter")
    check_trace(page)


def check_trace(pg) -> None:
    """What the page shows of the trace of the output item user = 'lp'."""
    from playwright.sync_api import expect

    expect(pg.locator("#status")).to_contain_text('traced output item user="lp"')
    expect(pg.locator("#status")).to_contain_text("to 2 input records")
    inputs = pg.locator('#node-list li[data-kind="item"]')
    expect(inputs).to_have_count(3)  # the output item and its two input records
    texts = " ".join(inputs.all_inner_texts())
    assert "tweets.json:1" in texts and "tweets.json:3" in texts
    details = pg.locator("#details")
    expect(details).to_contain_text(f"{TWEETS}:1")
    expect(details.get_by_role("row", name='text influencing "Hello World"')).to_be_visible()
    expect(details.get_by_role("row", name='user.id_str contributing "lp"')).to_be_visible()
    assert pg.locator('#edge-list li[data-kind="contributing"]').count() == 2
    expect(pg.locator("#view-iql")).to_contain_text("MATCH '/user = ''lp''' LIMIT 1")
