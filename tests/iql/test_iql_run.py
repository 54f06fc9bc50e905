"""IQL end to end on both engines: Table 1 of the Ibis paper on examples/movies.json, and the CLI.

Every test here runs twice, once with the local engine (DuckDB in this process) and once with
Spark forced, on the same committed store.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from click.testing import CliRunner
from support.movies import TABLE1
from support.paths import ROOT

import iql
from iql.binder import WARN_NEGATED, WARN_NOT_EXISTS
from iql.errors import IqlSemanticError, IqlSyntaxError
from strata.app import App
from strata.cli import main


@pytest.fixture(scope="module")
def movies_root(spark, tmp_path_factory):
    from store import Store

    st = Store.open(str(tmp_path_factory.mktemp("iql") / "store"), spark=spark)
    st.ingest(str(ROOT / "examples" / "movies.json"))
    return st.root


@pytest.fixture(scope="module", params=["local", "spark"])
def movies(request, spark, movies_root):
    from store import Store

    return Store.open(movies_root, spark=spark, engine=request.param)


@pytest.fixture(scope="module")
def movies_local(spark, movies_root):
    """For what does not depend on the engine (errors before execution, the CLI's formatting)."""
    from store import Store

    return Store.open(movies_root, spark=spark, engine="local")


@pytest.mark.parametrize("qid, text, expected, warnings", TABLE1, ids=[t[0] for t in TABLE1])
def test_table1(movies, qid, text, expected, warnings):
    result = iql.run(movies, text)
    assert set(result.rows()) == expected
    assert result.warnings == warnings
    assert result.engine.engine is movies.engine


def test_auto_answers_small_questions_locally_without_starting_spark(movies_root):
    from store import Store

    def no_spark():
        raise AssertionError("a small question started Spark")

    st = Store.open(movies_root, spark=no_spark, engine="auto")
    result = iql.run(st, TABLE1[2][1])
    assert set(result.rows()) == TABLE1[2][2]
    assert result.engine.engine.value == "local"
    assert "within the local limit" in result.engine.reason
    assert not st.spark_started


def test_auto_takes_spark_past_the_threshold_and_for_a_cluster(movies_root, spark):
    from store import Store

    small = Store.open(movies_root, spark=spark, engine="auto", local_rows=10)
    over = iql.run(small, TABLE1[0][1])
    assert over.engine.engine.value == "spark" and "more than the local limit of 10" in over.engine.reason
    assert set(over.rows()) == TABLE1[0][2]
    cluster = Store.open(movies_root, spark=spark, engine="auto", master="spark://nowhere:7077")
    assert iql.run(cluster, "explain " + TABLE1[0][1]).rows()[0] == (
        "engine: spark (a cluster was asked for (master spark://nowhere:7077))",)


def test_table1_matches_docs_movies_md():
    """The queries here are the ones docs/movies.md lists for Table 1."""
    documented = re.findall(r"\| \d \| [^|]* \| `(select [^`]*)` \|", (ROOT / "docs" / "movies.md").read_text())
    norm = lambda s: " ".join(s.split())  # noqa: E731
    assert [norm(q) for q in documented] == [norm(t[1]) for t in TABLE1]


def test_results_have_columns_rows_and_a_dataframe(movies):
    result = iql.run(movies, "select p.id, p.license as lic, p.authScore from WebPage p order by p.authScore desc")
    assert result.columns == ("id", "lic", "authScore")
    assert result.rows() == [("ymovies_page", "yahoo", 5), ("imdb_page", "imdb", 3)]
    assert result.df.columns == ["id", "lic", "authScore"]
    assert result.df.collect() == [tuple(r) for r in result.rows()]


def test_select_is_a_bag_and_distinct_a_set(movies):
    q = "select t.id from Table t, AnyData d where t.id = 'imdb_table' and d under t"
    bag = Counter(iql.run(movies, q).rows())
    assert set(bag) == {("imdb_table",)} and bag[("imdb_table",)] > 1  # one row per d
    assert iql.run(movies, q.replace("select", "select distinct", 1)).rows() == [("imdb_table",)]


def test_influences_star_and_default_depth(movies):
    star = "select d.id from WebPage p, AnyData d where p.id = 'imdb_page' and p influences(*) d"
    one = "select d.id from WebPage p, AnyData d where p.id = 'imdb_page' and p influences d"
    reach = {r[0] for r in iql.run(movies, star).rows()}
    assert {"avatar_lead_actor_v1", "map_out_1", "imdb_worthington"} <= reach
    assert "combined_table" not in reach  # Section 5: an inference that cannot be made
    assert {r[0] for r in iql.run(movies, one).rows()} < reach


def test_aggregates_group_by_having_order_limit(movies):
    rows = iql.run(
        movies,
        "select j.wrapper, count(*) n, max(j.version) from PigJob j where j.version is not null "
        "group by j.wrapper having count(*) >= 1 order by 3 desc limit 1").rows()
    assert rows == [("ymovies_wrapper", 1, 3)]
    assert iql.run(movies, "select count(*) from WebPage p where p.license = 'none'").rows() == [(0,)]


def test_negated_predicate_and_or(movies):
    result = iql.run(
        movies,
        "select c.id from Column c, Table t where t.id = 'imdb_table' and "
        "(not c under t or c.id = 'imdb_lead_actor_col') order by 1")
    assert [r[0] for r in result.rows()] == [
        "combined_lead_actor_col", "imdb_lead_actor_col", "ymovies_lead_actor_col"]
    assert result.warnings == (WARN_NEGATED,)


def test_uncorrelated_subqueries(movies):
    rows = iql.run(movies, "select p.id from WebPage p where p.authScore = "
                        "(select max(q.authScore) from WebPage q)").rows()
    assert rows == [("ymovies_page",)]
    none = iql.run(movies, "select p.id from WebPage p where exists "
                        "(select * from Table t where t.id = 'nope')").rows()
    assert none == []


def test_explain_shows_plan_and_strategy(movies):
    result = iql.run(movies, "explain " + TABLE1[0][1])
    text = "\n".join(r[0] for r in result.rows())
    assert result.columns == ("plan",)
    assert text.startswith(f"engine: {movies.engine.value} (forced by --engine {movies.engine.value})")
    assert "ProvJoin p influences(2) v" in text
    assert "ids=['avatar_lead_actor_v1']" in text
    assert "expansion depth 2" in text and "est. rows" in text


def test_query_errors_are_positioned(movies_local):
    movies = movies_local
    with pytest.raises(IqlSemanticError) as info:
        iql.run(movies, "select p.id from WebPag p")
    assert (info.value.line, info.value.column) == (1, 18)
    with pytest.raises(IqlSyntaxError):
        iql.run(movies, "select p.id from WebPage p where")


# ------------------------------------------------------------------------------------ CLI


def test_cli_json_shape(movies_local):
    movies = movies_local
    result = CliRunner().invoke(main, ["query", TABLE1[4][1], "--format", "json"], obj=App.of(movies))
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload == {"columns": ["id"], "rows": [["avatar_lead_actor_v2"]],
                       "warnings": [WARN_NOT_EXISTS]}


def test_cli_table_and_csv(movies_local):
    movies = movies_local
    q = "select p.id, p.authScore from WebPage p order by p.id"
    table = CliRunner().invoke(main, ["query", q], obj=App.of(movies))
    assert table.exit_code == 0
    assert table.stdout.splitlines()[0].split() == ["id", "|", "authScore"]
    assert "imdb_page" in table.stdout and "(2 rows)" in table.stdout
    csv = CliRunner().invoke(main, ["query", q, "--format", "csv"], obj=App.of(movies))
    assert csv.stdout.splitlines() == ["id,authScore", "imdb_page,3", "ymovies_page,5"]


def test_cli_query_error_exits_2_with_position(movies_local):
    movies = movies_local
    result = CliRunner().invoke(main, ["query", "select p.id from WebPag p"], obj=App.of(movies))
    assert result.exit_code == 2
    assert result.stderr.startswith("iql: unknown type 'WebPag' (line 1, column 18)")
    assert "^^^^^^" in result.stderr and "did you mean 'WebPage'?" in result.stderr
    assert result.stdout == ""


def test_docs_explain_example_is_current(movies_root, spark):
    from support.iql_docs import BLOCKS

    from store import Store

    query = next(b for info, b in BLOCKS if info == "iql" and b.startswith("explain"))
    shown = next(b for info, b in BLOCKS if info == "" and b.startswith("engine:"))
    auto = Store.open(movies_root, spark=spark, engine="auto")
    assert "\n".join(r[0] for r in iql.run(auto, query).rows()) == shown


def test_cli_and_repl_tables_show_values_alike():
    """`strata query` (plain text) and the REPL (rich) print NULL, true and JSON lists the same."""
    from rich.console import Console

    from iql.result import format_table
    from strata.render import result_table

    row = [None, True, ["a", 1]]
    plain = format_table(["x", "y", "z"], [row])
    console = Console(record=True, width=80)
    console.print(result_table(["x", "y", "z"], [row]))
    rich_text = console.export_text()
    for text in (plain, rich_text):
        assert "NULL" in text and "true" in text and '["a", 1]' in text


def test_a_statement_asked_again_is_planned_again_after_a_commit(spark, tmp_path):
    """Plans are kept per store version: asked again, a statement answers from the kept plan;
    after a commit it is planned against the new catalog (a type added by the commit)."""
    from store import Store

    st = Store.open(str(tmp_path / "store"), spark=spark, engine="local")
    st.ingest({"format": "strata-bundle/1", "gsets": {"data": {"granularities": ["Page"]}},
               "types": [{"name": "Page", "granularities": ["Page"], "attributes": {"score": "int"}}],
               "elements": [{"id": "p1", "granularity": "Page", "attrs": {"score": 1}}]})
    query = "select p.id from Page p where p.score >= 1;"
    assert iql.run(st, query).rows() == [("p1",)]
    first = iql._PLANS[(st.root, st.version, query)]
    assert iql.run(st, query).rows() == [("p1",)] and iql._PLANS[(st.root, st.version, query)] is first
    with pytest.raises(iql.IqlSemanticError, match="Note"):
        iql.run(st, "select n.id from Note n;")
    st.ingest({"format": "strata-bundle/1", "gsets": {"data": {"granularities": ["Note"]}},
               "types": [{"name": "Note", "granularities": ["Note"]}],
               "elements": [{"id": "n1", "granularity": "Note"},
                            {"id": "p2", "granularity": "Page", "attrs": {"score": 7}}]})
    assert iql.run(st, "select n.id from Note n;").rows() == [("n1",)]
    assert sorted(iql.run(st, query).rows()) == [("p1",), ("p2",)]


@pytest.mark.parametrize("arrow", [True, False], ids=["through-arrow", "through-tables"])
def test_both_hand_offs_of_computed_rows_give_table1s_answers(movies_local, monkeypatch, arrow):
    """The DuckDB wing hands the rows it computed back to DuckDB through pyarrow, or, for a
    process's first question, through tables of the connection's memory (no pyarrow import):
    both give Table 1's answers, and a statement leaves none of its tables behind."""
    from iql.duckdb.executor import DuckDBExecutor

    monkeypatch.setattr(DuckDBExecutor, "hands_off_through_arrow", staticmethod(lambda tables: arrow))
    for _qid, text, expected, _warnings in TABLE1:
        assert set(iql.run(movies_local, text).rows()) == expected
    con = movies_local.local().con
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__held%'").fetchall() == [(0,)]
