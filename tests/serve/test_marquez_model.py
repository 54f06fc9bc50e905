"""strata/serve/marquez_model.py without a server: a view extended with later events equals one
built from all of them; an earlier event is refused (the service then rebuilds)."""

from __future__ import annotations

import json

from support.paths import EXAMPLES

from strata.serve.marquez_model import MarquezView, parse_node_id

EVENTS = [json.loads(line) for line in (EXAMPLES / "openlineage" / "orders.jsonl").read_text().splitlines()]


def shapes(v: MarquezView) -> dict:
    return {"lineage": v.lineage(("dataset", "warehouse", "mart")),
            "jobs": [v.job_json(k) for k in sorted(v.jobs)],
            "datasets": [v.dataset_versions_json(k) for k in sorted(v.datasets)],
            "columns": v.column_lineage(("dataset", "warehouse", "mart"), downstream=True),
            "events": v.events_page(100, 0), "search": v.search("t", None)}


def test_extended_equals_built():
    ordered = sorted(EVENTS, key=lambda e: e["eventTime"])
    for cut in range(len(ordered) + 1):
        v = MarquezView.build(ordered[:cut])
        assert v.extend(ordered[cut:])
        assert shapes(v) == shapes(MarquezView.build(EVENTS)), cut


def test_an_earlier_event_is_refused():
    ordered = sorted(EVENTS, key=lambda e: e["eventTime"])
    v = MarquezView.build(ordered[1:])
    assert not v.extend(ordered[:1])
    assert v.events_count == len(EVENTS) - 1


def test_node_ids_whose_namespace_holds_colons():
    """dbt-ol names DuckDB datasets in `duckdb:///path/file.duckdb`: given the known nodes, the
    split at the ':' that names one wins; without them (or when none does), the first ':'."""
    ns = "duckdb:///tmp/w.duckdb"
    known = {("dataset", ns, "w.main.mart"), ("job", "shop", "a:b")}
    assert parse_node_id(f"dataset:{ns}:w.main.mart", known.__contains__) == ("dataset", ns, "w.main.mart")
    assert parse_node_id(f"datasetField:{ns}:w.main.mart:revenue", known.__contains__) == \
        ("dataset", ns, "w.main.mart")
    assert parse_node_id("job:shop:a:b", known.__contains__) == ("job", "shop", "a:b")
    assert parse_node_id(f"dataset:{ns}:w.main.mart") == ("dataset", "duckdb", "///tmp/w.duckdb:w.main.mart")
    assert parse_node_id("dataset:ns:") is None and parse_node_id("job::x") is None
    assert parse_node_id("datasetField:ns:name") is None and parse_node_id("table:ns:x") is None
