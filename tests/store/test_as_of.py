"""Point-in-time questions: `--as-of VERSION`, `AS OF VERSION n` in IQL and `\\asof` in the REPL
answer like a store that stopped at that version (docs/verify.md, "Versions").

Each example ingests in this process (no JVM): a store that goes on committing, and a reference
store that stops after the first bundle; every question to the first as of version 1 must get
the reference's answer.
"""

from __future__ import annotations

import io
import json

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from rich.console import Console
from support.strategies import bundle_pairs

import iql
from store import Store
from store import schema as S
from store.errors import UserError
from strata import repl_commands as C
from strata.cli import main


def _rows(*ids: str) -> dict:
    return {"format": "strata-bundle/1", "gsets": {"data": {"granularities": ["Row"]}},
            "elements": [{"id": i, "granularity": "Row"} for i in ids]}


def _no_spark():
    raise AssertionError("this store must not start Spark")


def tables(st: Store) -> dict:
    """Every core table's rows (sorted), read in this process, and the catalog."""
    local = st.local()
    out = {}
    for name in S.CORE_TABLES:
        rows = local.arrow(name).to_pylist()
        out[name] = sorted(json.dumps(r, sort_keys=True, default=repr) for r in rows)
    out["catalog"] = st.catalog.to_json()
    return out


def answers(root: str, *as_of: str) -> dict:
    """What the CLI says of the store: an IQL query, every item's lineage, info's counts."""
    run = CliRunner()

    def cli(*args):
        r = run.invoke(main, ["--store", root, *as_of, *args])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    rows = cli("query", "SELECT x.id FROM Any x", "--format", "json")["rows"]
    info = cli("info", "--format", "json")
    items = sorted(r[0] for r in rows)
    lineage = {i: cli("lineage", i, "--format", "json") for i in items[:3]}
    for v in lineage.values():
        v.pop("triples_read")
    keep = ("version", "commits", "elements", "vertices", "edges", "types", "granularities")
    return {"items": items, "lineage": lineage, "info": {k: info[k] for k in keep}}


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(bundle_pairs())
def test_as_of_answers_like_the_store_that_stopped_there(tmp_path_factory, pair):
    first, second = pair
    base = tmp_path_factory.mktemp("asof")
    going = Store.open(str(base / "going"), spark=_no_spark)
    going.ingest(first)
    stopped = Store.open(str(base / "stopped"), spark=_no_spark)
    stopped.ingest(first)
    going.ingest(second)
    assert going.version == 2
    assert tables(going.at(1)) == tables(stopped)
    assert answers(going.root, "--as-of", "1") == answers(stopped.root)
    q = "SELECT x.id FROM Any x"
    assert sorted(iql.run(going, "AS OF VERSION 1 " + q).rows()) == sorted(iql.run(stopped, q).rows())
    assert sorted(iql.run(going.at(1), "as of version 2 " + q).rows()) == sorted(iql.run(going, q).rows())


def test_as_of_is_read_only_and_checks_the_version(tmp_path):
    st = Store.open(str(tmp_path / "s"), spark=_no_spark)
    st.ingest(_rows("a"))
    st.ingest(_rows("b"))
    old = st.at(1)
    assert old.version == 1 and old.refresh().version == 1
    try:
        old.ingest(_rows("c"))
        raise AssertionError("an as-of store committed")
    except UserError as e:
        assert "opened as of version 1" in str(e)
    assert st.refresh().version == 2
    r = CliRunner().invoke(main, ["--store", st.root, "--as-of", "3", "info"])
    assert r.exit_code == 2 and "has no version 3" in r.stderr and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["--store", st.root, "query", "AS OF VERSON 1 SELECT x.id FROM Any x"])
    assert r.exit_code == 2 and "expected VERSION in AS OF VERSION n" in r.stderr
    info = json.loads(CliRunner().invoke(main, ["--store", st.root, "info", "--format", "json"]).stdout)
    assert [(v["version"], v["message"], v["hashed"]) for v in info["versions"]] == [
        (1, "ingest <bundle>", True), (2, "ingest <bundle>", True)]
    assert all(v["created"] for v in info["versions"])


def test_the_repl_asof_command(tmp_path):
    st = Store.open(str(tmp_path / "s"), spark=_no_spark)
    st.ingest(_rows("a"))
    st.ingest(_rows("b"))
    out = Console(file=io.StringIO(), width=200, color_system=None)
    session = C.Session(store=st, out=out, err=out)
    C.dispatch(session, "\\asof 1")
    assert session.store.version == 1 and "Reading version 1 (as of version 1, of 2)." in out.file.getvalue()
    C.dispatch(session, "SELECT x.id FROM Any x")
    assert "a" in out.file.getvalue() and "│ b" not in out.file.getvalue()
    C.dispatch(session, "\\asof latest")
    assert session.store.version == 2 and "Reading version 2 (the newest)." in out.file.getvalue()
    for bad in ("\\asof x", "\\asof 9"):
        try:
            C.dispatch(session, bad)
            raise AssertionError(bad)
        except UserError:
            pass
