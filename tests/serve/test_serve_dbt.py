"""dbt-ol (openlineage-dbt) against a real `strata serve`: a tiny dbt-duckdb project (a source
table in a DuckDB file -> staging model -> mart model) run once with `dbt-ol run`, its events
posted to the server with an API key; the mart's lineage read back over the HTTP API and with
`strata query` on the store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from support.serve import Server, strata_cli

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("dbt.adapters.duckdb", reason="dbt-duckdb is not installed (pyproject.toml's dev extra)")
pytest.importorskip("openlineage.common.provider.dbt", reason="openlineage-dbt is not installed (dev extra)")

KEY = "dbt-s3cret"
BIN = Path(sys.executable).parent
DBT_OL = shutil.which("dbt-ol", path=str(BIN)) or shutil.which("dbt-ol")

PROJECT = {
    "dbt_project.yml": "name: shop\nversion: '1.0'\nconfig-version: 2\nprofile: shop\n"
                       "model-paths: ['models']\n",
    "models/sources.yml": "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n"
                          "      - name: orders\n",
    "models/stg_orders.sql": "select id, amount from {{ source('raw', 'orders') }} where amount > 0\n",
    "models/mart_revenue.sql": "select count(*) as orders, sum(amount) as revenue from {{ ref('stg_orders') }}\n",
}


def _project(root: Path) -> Path:
    db = root / "warehouse.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema raw; "
                "create table raw.orders as select * from (values (1, 10), (2, -1), (3, 5)) t(id, amount)")
    con.close()
    project = root / "shop"
    for name, text in PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    (project / "profiles.yml").write_text(
        f"shop:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      path: '{db}'\n      threads: 1\n")
    return project


@pytest.mark.skipif(DBT_OL is None, reason="dbt-ol (openlineage-dbt) is not on PATH")
def test_dbt_ol_run_lineage_reaches_the_mart(tmp_path):
    project = _project(tmp_path)
    srv = Server(str(tmp_path / "store"), env={"STRATA_API_KEY": KEY}).start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENLINEAGE_", "DBT_"))}
        env.update(OPENLINEAGE_URL=srv.url, OPENLINEAGE_API_KEY=KEY, OPENLINEAGE_NAMESPACE="shop",
                   DBT_PROFILES_DIR=str(project), DBT_SEND_ANONYMOUS_USAGE_STATS="false", DO_NOT_TRACK="1",
                   PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
        r = subprocess.run([DBT_OL, "run", "--project-dir", str(project)], cwd=project, env=env,
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        srv.settle()
        h = srv.headers()
        events = httpx.get(f"{srv.url}/api/v1/events/lineage", params={"limit": 100}, headers=h,
                           timeout=10).json()["events"]
        # dbt-ol names a DuckDB relation `<database>.<schema>.<relation>` in the namespace
        # `duckdb://<path of the DuckDB file>`, and a model's job `<database>.<schema>.<project>.<model>`
        # in OPENLINEAGE_NAMESPACE; the run's parent is the job `dbt-run-<project>`.
        ns = f"duckdb://{tmp_path / 'warehouse.duckdb'}"
        names = {(d["namespace"], d["name"]) for e in events for d in e.get("outputs", [])}
        assert {(ns, "warehouse.main.stg_orders"), (ns, "warehouse.main.mart_revenue")} <= names, names
        graph = httpx.get(f"{srv.url}/api/v1/lineage", headers=h, timeout=10,
                          params={"nodeId": f"dataset:{ns}:warehouse.main.mart_revenue", "depth": 5}).json()["graph"]
        nodes = {n["id"]: n for n in graph}

        def upstream(node_id: str) -> set[str]:
            return {e["origin"] for e in nodes[node_id]["inEdges"]}

        mart, stg, raw = (f"dataset:{ns}:warehouse.{t}" for t in ("main.mart_revenue", "main.stg_orders", "raw.orders"))
        mart_job, stg_job = "job:shop:warehouse.main.shop.mart_revenue", "job:shop:warehouse.main.shop.stg_orders"
        assert upstream(mart) == {mart_job}, nodes.keys()
        assert upstream(mart_job) == {stg}
        assert upstream(stg) == {stg_job}
        assert upstream(stg_job) == {raw}
        # dbt-ol's column lineage facet: the mart's revenue comes from the staging model's amount
        cols = httpx.get(f"{srv.url}/api/v1/column-lineage", headers=h, timeout=10,
                         params={"nodeId": f"datasetField:{ns}:warehouse.main.mart_revenue:revenue"}).json()
        assert f"datasetField:{ns}:warehouse.main.stg_orders:amount" in {n["id"] for n in cols["graph"]}, cols
    finally:
        assert srv.stop() == 0, srv.log()
    # the store the server wrote answers IQL too: the source and the staging model influence the mart
    # (dataset states, through the two model runs), and the staging model feeds the mart's job
    q = strata_cli(srv.root, "query", "--format", "csv",
                   "select distinct u.name from DatasetVersion u, DatasetVersion m "
                   "where u influences(*) m and m.name = 'warehouse.main.mart_revenue'")
    assert q.returncode == 0, q.stderr
    assert sorted(q.stdout.split()[1:]) == ["warehouse.main.mart_revenue", "warehouse.main.stg_orders",
                                            "warehouse.raw.orders"]
    q = strata_cli(srv.root, "query", "--format", "csv", "select distinct j.id from DatasetVersion u, Job j "
                   "where u feeds j and u.name = 'warehouse.main.stg_orders'")
    assert q.returncode == 0, q.stderr
    assert "job:shop:warehouse.main.shop.mart_revenue" in q.stdout.split()
