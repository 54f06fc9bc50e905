"""`strata report usage` and `strata report audit` on a captured run of the running example.

Counts are checked by hand (Pebble Section 2's tweets) and against capture.tracing.heatmap over
the same traces run through the library.
"""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner
from support.capture_helpers import TWEETS
from support.running_example import running_example

from capture import Tracker
from capture.tracing import item_element_id, item_hex
from store import Store
from strata.cli import main

LP_HELLO_WORLD = "//id_str = 'lp' and /tweets[count(text = 'Hello World') >= 2]/text = 'Hello World'"
USERS = "/user/id_str"
HELLO_AT_LP = "/tweets/text = 'Hello @lp'"
ATTRS = ["retweet_cnt", "text", "user.id_str", "user.name", "user_mentions.[pos].id_str",
         "user_mentions.[pos].name"]


@pytest.fixture(scope="module")
def captured(spark, tmp_path_factory):
    """The running example written through a Tracker (one commit); the source items' ids by text."""
    root = tmp_path_factory.mktemp("report") / "store"
    tracker = Tracker(spark, Store.open(str(root), spark=spark), pipeline="running-example", model=False)
    tweets = tracker.read.json(TWEETS, name="tweets")
    info = tracker.write(running_example(tweets), str(root.parent / "out"), format="parquet")
    ids: dict[str, list[int]] = {}
    for r in tweets.with_item_ids("_pid").collect():
        ids.setdefault(r.text, []).append(r._pid)
    return root, info.run, ids


@pytest.fixture()
def cli(captured):
    runner = CliRunner(env={"COLUMNS": "200"})  # wide enough for the table's header on one line

    def invoke(*args: str, store: str | None = None):
        return runner.invoke(main, ["--store", store or str(captured[0]), "report", *args])

    return invoke


def counts(cell: dict) -> tuple[int, int, int]:
    return cell["contributed"], cell["influenced"], cell["unused"]


def table_rows(stdout: str) -> dict[str, list[str]]:
    """A rich table's body rows: first cell -> the other cells (header row under the key 'item')."""
    out = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│")[1:-1]]
        if cells and cells[0]:
            out[cells[0]] = cells[1:]
    return out


def test_usage_json_html_and_png_agree_with_the_library_and_the_hand_counts(spark, captured, cli, tmp_path):
    from capture.tracing import heatmap, parse_pattern, trace

    root, _, ids = captured
    html, png = tmp_path / "usage.html", tmp_path / "usage.png"
    r = cli("usage", LP_HELLO_WORLD, USERS, HELLO_AT_LP, "--dataset", "tweets", "--attribute", "lang",
            "--html", str(html), "--png", str(png), "--format", "json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert "trace 3/3" in r.stderr and f"wrote {png}" in r.stderr
    assert [t["matched"] for t in got["traces"]] == [1, 3, 1]  # lp's group; every user; jm's mention of lp
    assert got["dataset"] == "tweets" and got["attributes"] == sorted([*ATTRS, "lang"])
    cells = {(i["item_id"], a): counts(c) for i in got["items"] for a, c in i["cells"].items()}

    # the library over the same traces gives the same table
    store = Store.open(str(root), spark=spark)
    hm = heatmap([trace(store, None, parse_pattern(p), 100) for p in (LP_HELLO_WORLD, USERS, HELLO_AT_LP)], "tweets",
                 attributes=["lang"])
    assert cells == {(i, a): (c, inf, u) for _, i, a, c, inf, u in hm.rows()}
    assert {i["item"] for i in got["items"]} == {item_element_id("tweets", i) for i in hm.items}

    # by hand: a "Hello World" of lp contributed its text in trace 1, only influenced trace 2
    # (which asked for user ids), and was not reached by trace 3
    for hello in ids["Hello World"]:
        assert cells[(hello, "text")] == (1, 1, 1)
        assert cells[(hello, "user.id_str")] == (2, 0, 1)
        assert cells[(hello, "user.name")] == (0, 2, 1)  # grouped by (id_str, name): influenced
        assert cells[(hello, "retweet_cnt")] == (0, 2, 1)  # the upper branch's filter
        assert cells[(hello, "user_mentions.[pos].id_str")] == (0, 0, 3)
        assert cells[(hello, "lang")] == (0, 0, 3)  # asked for with --attribute, never touched
    (mention,) = ids["Hello @lp"]
    assert cells[(mention, "text")] == (1, 1, 1)
    assert cells[(mention, "user_mentions.[pos].id_str")] == (1, 1, 1)
    assert cells[(mention, "retweet_cnt")] == (0, 0, 3)  # the lower branch does not filter
    assert counts(got["totals"]["user.id_str"]) == (6, 0, 9)

    page = html.read_text()
    assert page.startswith("<!doctype html>") and page.count("<tr>") == len(hm.items) + 1
    assert item_hex(mention) in page and "user_mentions.[pos].id_str" in page and "1/1/1" in page
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_usage_table_over_a_workload_of_statements_and_patterns(captured, cli, tmp_path):
    _, run, ids = captured
    workload = tmp_path / "workload.iql"
    statement = "TRACE '{}' MATCH '{}' LIMIT 5;".format(run, LP_HELLO_WORLD.replace("'", "''"))
    workload.write_text(f"# lp's duplicates, then jm's mention of lp\n{statement}\n\n-- bare pattern\n{HELLO_AT_LP}\n")
    r = cli("usage", "--workload", str(workload))
    assert r.exit_code == 0, r.output
    rows = table_rows(r.stdout)
    assert "data usage of tweets over 2 traces" in r.stdout
    assert rows["item"] == ATTRS
    (mention,) = ids["Hello @lp"]
    hello = ids["Hello World"]
    assert set(rows) == {"item", "total", *(item_hex(i) for i in [*hello, mention])}
    for h in hello:
        assert rows[item_hex(h)] == ["0/1/1", "1/0/1", "1/0/1", "0/1/1", "0/0/2", "0/0/2"]
    assert rows[item_hex(mention)] == ["0/0/2", "1/0/1", "0/0/2", "0/0/2", "0/1/1", "0/1/1"]
    assert rows["total"] == ["0/2/4", "3/0/3", "2/0/4", "0/2/4", "0/1/5", "0/1/5"]
    assert "3 items of tweets x 6 attributes over 2 traces" in r.stderr


def test_audit_lists_exposed_and_only_influencing_attributes(captured, cli):
    _, _, ids = captured
    r = cli("audit", HELLO_AT_LP, "--format", "json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    (mention,) = ids["Hello @lp"]
    assert got["matched"] == 1 and got["pattern"] == HELLO_AT_LP
    assert got["items"] == [{"dataset": "tweets", "item": item_element_id("tweets", mention), "item_id": mention,
                             "exposes": ["text"],
                             "influenced_by": ["user_mentions.[1].id_str", "user_mentions.[1].name"]}]

    r = cli("audit", LP_HELLO_WORLD, "--limit", "1")
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stdout.splitlines() if line.startswith("│")]
    for hello in ids["Hello World"]:  # exposes text and user id; the name and the filter only influenced
        (first,) = [k for k, line in enumerate(lines) if item_hex(hello) in line]
        cells = [[c.strip() for c in line.split("│")[3:5]] for line in lines[first:first + 2]]
        assert cells == [["text", "retweet_cnt"], ["user.id_str", "user.name"]]
    assert "2 input items, 1 result item matched" in r.stderr


def test_bad_patterns_exit_2_with_the_position_and_no_spark_work(cli, tmp_path):
    r = cli("usage", USERS, "user/id_str")
    assert r.exit_code == 2
    assert "PATTERN 2" in r.stderr and "tree pattern: " in r.stderr and "expected a step" in r.stderr
    assert "(line 1, column 1)\n  user/id_str\n  ^^^^\n" in r.stderr
    assert "Traceback" not in r.output and "trace 1/" not in r.stderr

    workload = tmp_path / "w.iql"
    workload.write_text(f"{USERS}\n\nTRACE MATCH '/user[count(text) >]'\n")
    r = cli("usage", "--workload", str(workload))
    assert r.exit_code == 2 and f"{workload}, line 3: " in r.stderr and "bad tree pattern in TRACE" in r.stderr
    # the pattern's error points into the TRACE statement: at the ']' where a literal should be
    assert ("unexpected ']'; expected a boolean (true, false), a number or a string ('text') (line 1, column 33)\n"
            "  TRACE MATCH '/user[count(text) >]'\n" + " " * 34 + "^\n") in r.stderr

    r = cli("audit", "SELECT * FROM TRACE(MATCH '/user')")
    assert r.exit_code == 2 and "PATTERN: not a trace" in r.stderr
    r = cli("usage")
    assert r.exit_code == 2 and "give tree patterns or --workload FILE" in r.stderr


def test_unknown_run_dataset_and_store_exit_2(cli, tmp_path):
    r = cli("audit", "--run", "nope", "/user")
    assert r.exit_code == 2 and "'nope'" in r.stderr and "Traceback" not in r.output
    r = cli("usage", "/user/id_str = 'nobody'", "--dataset", "twets")
    assert r.exit_code == 2
    assert "no input dataset 'twets'" in r.stderr and "its input datasets: tweets" in r.stderr
    r = cli("usage", USERS, store=str(tmp_path / "none"))
    assert r.exit_code == 2 and f"no store at {tmp_path / 'none'}" in r.stderr


def test_a_workload_that_reaches_nothing_or_several_datasets(cli):
    from types import SimpleNamespace

    from store.errors import UserError
    from strata.cli_report import choose_dataset

    r = cli("usage", "/user/id_str = 'nobody'", "--format", "json")
    assert r.exit_code == 0 and "no trace matched any result item" in r.stderr
    got = json.loads(r.stdout)
    assert got["dataset"] is None and got["items"] == [] and got["traces"][0]["matched"] == 0

    def trace(*datasets):
        return SimpleNamespace(items=[SimpleNamespace(dataset=d) for d in datasets])

    with pytest.raises(UserError, match=r"reach 2 input datasets \(tweets, users\)") as err:
        choose_dataset(None, [], [trace("tweets"), trace("users", "tweets")], None)
    assert err.value.hint == "choose one with --dataset"
    assert choose_dataset(None, [], [trace("users", "tweets")], "users") == "users"


def test_png_without_matplotlib_names_the_reports_extra(cli, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    r = cli("usage", USERS, "--png", str(tmp_path / "u.png"))
    assert r.exit_code == 2 and "matplotlib" in r.stderr and "strata-prov[reports]" in r.stderr
    assert "trace 1/" not in r.stderr  # checked before any trace runs
