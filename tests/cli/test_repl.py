"""The REPL's pure parts: when Enter submits, completion, backslash commands, output, lexer."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pygments.token import Keyword as KwToken
from pygments.token import Name, String
from rich.console import Console

from iql.parser import keywords
from store.errors import UserError
from strata import repl_commands as C
from strata.repl import history_path, make_lexer, toolbar_text
from strata.repl_complete import (
    Alias,
    Attribute,
    Command,
    Function,
    Keyword,
    TypeName,
    aliases,
    complete,
    suggest,
)
from strata.repl_keys import statement_complete, strip_statement


@pytest.fixture()
def catalog(movies_catalog):
    return movies_catalog


@pytest.fixture()
def vocab(movies_vocab):
    return movies_vocab


# ------------------------------------------------------------------ Enter: submit or new line

@pytest.mark.parametrize("text, complete_", [
    ("", True),
    ("   ", True),
    ("select p.id from WebPage p", False),
    ("select p.id\nfrom WebPage p;", True),
    ("select p.id from WebPage p;  ", True),
    ("select p.id from WebPage p; -- the pages", True),
    ("select p.id from WebPage p where p.id = 'a;", False),  # the ; is inside a string
    ("select p.id from WebPage p where p.id = 'it''s;'", False),
    ("select p.id from WebPage p where p.id = 'it''s';", True),
    ("select p.id -- comment;\nfrom WebPage p", False),  # the ; is inside a comment
    ("\\d WebPage", True),
    ("\\q", True),
    ("quit", True),
])
def test_enter_submits_only_complete_statements(text, complete_):
    assert statement_complete(text) is complete_


_words = st.sampled_from(["select", "p.id", "from", "WebPage", "p", "where", "'x'", "=", ",", "\n", "-- c\n"])


@given(st.lists(_words, min_size=1, max_size=12))
def test_statement_needs_a_final_semicolon(parts):
    text = " ".join(parts)
    assert statement_complete(text + ";")
    assert strip_statement(text + " ;\n") == text.strip()
    if text.strip():
        assert not statement_complete(text)


# ------------------------------------------------------------------ completion: classification

@pytest.mark.parametrize("before, expected", [
    ("", (Keyword(),)),
    ("sel", (Keyword(),)),
    ("select ", (Alias(), Function(), Keyword())),
    ("select p.", (Attribute("p"),)),
    ("select p.au", (Attribute("p"),)),
    ("select p.id from ", (TypeName(),)),
    ("select p.id from Web", (TypeName(),)),
    ("select p.id from WebPage ", ()),  # an alias is being named
    ("select p.id from WebPage as ", ()),
    ("select p.id from WebPage p, ", (TypeName(),)),
    ("select p.id from WebPage p, (Row, ", (TypeName(),)),
    ("select p.id from WebPage p ", (Keyword(),)),
    ("select p.id from WebPage p where ", (Alias(), Function(), Keyword())),
    ("select p.id from WebPage p where p.id = 'imdb", ()),  # inside a string
    ("select p.id from WebPage p where p.id = 'imdb' ", (Keyword(),)),
    ("select p.id -- what", ()),  # inside a comment
    ("select p.id from WebPage p limit ", ()),
    ("\\", (Command(),)),
    ("\\ti", (Command(),)),
    ("\\d ", (TypeName(),)),
    ("\\lineage ", ()),
])
def test_context_is_classified(before, expected):
    assert suggest(before) == expected


def test_aliases_in_scope_include_tuples_and_subqueries():
    text = ("select v.id from Version v, (Row, Column) as c where not exists "
            "(select * from WebPage src where src influences(2) v)")
    assert aliases(text) == {"v": ("Version",), "c": ("Row", "Column"), "src": ("WebPage",)}


# ------------------------------------------------------------------ completion: matching

def _texts(cands):
    return [c.text for c in cands]


def test_completes_type_names_from_the_catalog(vocab, catalog):
    got = _texts(complete("select p.id from W", "select p.id from W", vocab, catalog))
    assert got == ["WebPage"]
    every = _texts(complete("select x from ", "select x from ", vocab, catalog))
    assert {"Cell", "PigJob", "Row", "Table", "AnyData", "AnyProcess"} <= set(every)


def test_completes_attributes_of_an_alias(vocab, catalog):
    text = "select p. from WebPage p"
    got = complete("select p.", text, vocab, catalog)
    assert _texts(got) == ["id", "license", "authScore"] or set(_texts(got)) == {"id", "license", "authScore"}
    assert got[0].meta == "attribute of WebPage"
    assert _texts(complete("select j.ver", "select j.ver from PigJob j", vocab, catalog)) == ["version"]
    assert _texts(complete("select c.", "select c. from (Row, Column) c", vocab, catalog)) == ["id"]
    assert complete("select zz.", "select zz. from WebPage p", vocab, catalog) == []


def test_completes_aliases_functions_and_keywords_in_where(vocab, catalog):
    text = "select p.id from WebPage p, Version v where "
    got = complete(text, text, vocab, catalog)
    assert {"p", "v", "count", "max", "INFLUENCES", "EXISTS"} <= set(_texts(got))
    low = complete("select p.id from WebPage p where p inf", "", vocab, catalog)
    assert _texts(low) == ["influences"]  # lower-case word, lower-case keyword


def test_keywords_come_from_the_grammar(vocab):
    assert set(vocab.keywords) == set(keywords())
    assert {"SELECT", "UNDER", "FEEDS", "EMITS", "INFLUENCES"} <= set(vocab.keywords)


def test_completes_backslash_commands_and_types_after_d(vocab, catalog):
    assert _texts(complete("\\ti", "\\ti", vocab, catalog)) == ["\\timing"]
    assert _texts(complete("\\d Pig", "\\d Pig", vocab, catalog)) == ["PigJob", "PigScript"]


# ------------------------------------------------------------------ backslash commands

def test_command_table_lists_every_command_with_syntax_and_help():
    names = {n for c in C.COMMANDS for n in (c.name, *c.aliases)}
    assert {"\\?", "\\help", "\\q", "\\timing", "\\explain", "\\d", "\\lineage", "\\export"} <= names
    assert all(c.syntax.startswith(c.name) or c.name in c.syntax for c in C.COMMANDS)
    assert all(c.help for c in C.COMMANDS)


def test_parse_command_words_and_raw_rest():
    inv = C.parse_command("\\export out.cypher --query \"select p.id from WebPage p where p.id = 'x'\";")
    assert inv.command.name == "\\export"
    assert inv.args == ("out.cypher", "--query", "select p.id from WebPage p where p.id = 'x'")
    inv = C.parse_command("\\explain select p.id from WebPage p")
    assert inv.rest == "select p.id from WebPage p"
    assert C.parse_command("\\HELP").command.name == "\\?"


def test_unknown_command_suggests_a_close_one():
    with pytest.raises(UserError) as e:
        C.parse_command("\\timng on")
    assert "unknown command \\timng" in e.value.render()
    assert "did you mean \\timing?" in e.value.render()
    with pytest.raises(UserError, match="No closing quotation"):
        C.parse_command("\\lineage 'abc")


def test_parse_options():
    spec = {"--forward": None, "--depth": int, "--method": ("auto", "rq")}
    assert C.parse_options(["x", "--depth", "2", "--forward"], spec, "s") == (["x"], {"--depth": 2, "--forward": True})
    assert C.parse_options(["--depth=3", "x"], spec, "s") == (["x"], {"--depth": 3})
    for bad, msg in [(["--depth", "two"], "whole number"), (["--depth"], "needs a value"),
                     (["--method", "xx"], "one of auto, rq"), (["--forwrd"], "did you mean --forward"),
                     (["--depth", "-1"], "negative")]:
        with pytest.raises(UserError) as e:
            C.parse_options(bad, spec, "\\lineage ID")
        assert msg in e.value.render() and "usage: \\lineage ID" in e.value.render()


def test_export_selection_defaults_to_the_last_query():
    syntax = "\\export FILE"
    path, sel, n = C.export_selection(["a.cypher"], "select p.id from WebPage p", syntax)
    assert (path, sel.query, n > 0) == ("a.cypher", "select p.id from WebPage p", True)
    path, sel, _ = C.export_selection(["dir", "imdb_page", "--forward", "--depth", "2"], None, syntax)
    assert (path, sel.item, sel.forward, sel.depth, sel.query) == ("dir", "imdb_page", True, 2, None)
    _, sel, _ = C.export_selection(["x.cypher", "--component", "imdb_page"], "q", syntax)
    assert (sel.component, sel.query) == ("imdb_page", None)
    with pytest.raises(UserError, match="no previous query"):
        C.export_selection(["a.cypher"], None, syntax)
    with pytest.raises(UserError, match="say where to write"):
        C.export_selection([], "q", syntax)


def test_timing_toggles():
    out = Console(file=io.StringIO(), width=80)
    session = C.Session(store=None, out=out, err=out)
    C.dispatch(session, "\\timing")
    assert session.timing
    C.dispatch(session, "\\timing off")
    assert not session.timing
    assert "Timing is on." in out.file.getvalue() and "Timing is off." in out.file.getvalue()
    with pytest.raises(C.Quit):
        C.dispatch(session, "\\q")
    with pytest.raises(UserError, match="on or off"):
        C.dispatch(session, "\\timing maybe")


# ------------------------------------------------------------------ output

def _render(renderable, width=80) -> str:
    out = Console(file=io.StringIO(), width=width, color_system=None)
    out.print(renderable)
    return out.file.getvalue()


def test_result_table_shows_columns_rows_nulls_and_count():
    text = _render(C.result_renderable(["id", "authScore"], [("ymovies_page", 5), ("imdb_page", None)]))
    assert "id" in text and "authScore" in text
    assert "ymovies_page" in text and "NULL" in text
    assert "(2 rows)" in text
    assert "(1 row)" in _render(C.result_renderable(["id"], [("a",)]))


def test_pager_only_for_long_results_on_a_terminal():
    assert C.needs_pager(100, 40, True, True)
    assert not C.needs_pager(10, 40, True, True)
    assert not C.needs_pager(100, 40, False, True)
    assert not C.needs_pager(100, 40, True, False)


def test_describe_type_and_store(catalog):
    text = _render(C.describe_type(catalog.type_by_name("WebPage"), 2, catalog), 100)
    for part in ("type WebPage", "data", "Version", "authScore: int", "license: string", "declared", "2"):
        assert part in text
    text = _render(C.describe_store(catalog, {"WebPage": 2, "PigJob": 3}), 160)
    assert "PigJob" in text and "process" in text and "Cell" in text


# ------------------------------------------------------------------ lexer, history, toolbar

def test_lexer_highlights_grammar_keywords_strings_and_names():
    lexer = make_lexer(keywords(), ["count"])()
    toks = [(t, v) for t, v in lexer.get_tokens("select p.id from WebPage p where p.id = 'x' and p influences(2) p")
            if v.strip()]
    kinds = dict((v, t) for t, v in toks)
    assert kinds["select"] in KwToken and kinds["influences"] in KwToken and kinds["where"] in KwToken
    assert kinds["WebPage"] in Name
    assert kinds["'x'"] in String


def test_history_path(tmp_path):
    assert history_path({"STRATA_HISTORY": str(tmp_path / "h")}) == tmp_path / "h"
    assert history_path({"XDG_CONFIG_HOME": "/cfg"}) == Path("/cfg/strata/history")
    assert history_path({}) == Path.home() / ".config" / "strata" / "history"


def test_toolbar_names_store_and_version():
    text = toolbar_text("/data/store", 3, True)
    assert "/data/store" in text and "version 3" in text and "timing on" in text
    assert "engine local" in toolbar_text("/data/store", 3, False, "local")


# ------------------------------------------------------------------ commands against a store (Spark)

@pytest.fixture()
def live(movies_store):
    def session():
        out = Console(file=io.StringIO(), width=160, color_system=None)
        err = Console(file=io.StringIO(), width=160, color_system=None)
        return C.Session(movies_store, out, err)

    return session


def test_commands_against_the_movies_store(live, tmp_path):
    s = live()
    C.dispatch(s, "select v.id from Version v order by v.id")
    text = s.out.file.getvalue()
    assert "avatar_lead_actor_v1" in text and "avatar_lead_actor_v2" in text and "(2 rows)" in text
    assert s.last_query == "select v.id from Version v order by v.id"

    C.dispatch(s, "\\explain select p.id from WebPage p")
    assert "WebPage" in s.out.file.getvalue().split("(2 rows)")[1]
    assert s.last_query == "select v.id from Version v order by v.id"  # EXPLAIN is not a result

    C.dispatch(s, "\\lineage avatar_lead_actor_v2")
    text = s.out.file.getvalue()
    assert "lineage of avatar_lead_actor_v2 (backward)" in text and "merge_script" in text

    C.dispatch(s, f"\\export {tmp_path / 'csv'}")
    assert "exported 2 nodes" in s.out.file.getvalue()
    assert any(p.suffix == ".csv" for p in (tmp_path / "csv").iterdir())

    C.dispatch(s, f"\\show {tmp_path / 'v.html'} avatar_lead_actor_v2")
    assert (tmp_path / "v.html").read_text().count("avatar_lead_actor_v2") >= 1

    C.dispatch(s, "\\d")
    text = s.out.file.getvalue()
    assert "PigJob" in text and "version: int" in text


def test_command_errors_are_user_errors(live):
    s = live()
    with pytest.raises(UserError) as e:
        C.dispatch(s, "\\d Webpage")
    assert "no type named 'Webpage'" in e.value.render() and "WebPage" in e.value.render()
    with pytest.raises(UserError, match="exactly one item"):
        C.dispatch(s, "\\lineage")
    with pytest.raises(UserError, match="no previous query"):
        C.dispatch(s, "\\export x.cypher")
    from iql.errors import IqlSyntaxError

    with pytest.raises(IqlSyntaxError) as e:
        C.dispatch(s, "select from WebPage p")
    assert "^" in e.value.render()


def test_values_are_not_read_as_rich_markup():
    text = _render(C.result_renderable(["[b]col"], [("[bold]x[/bold]",), ("a[red]",)]))
    assert "[b]col" in text and "[bold]x[/bold]" in text and "a[red]" in text


# ------------------------------------------------------------------ engines: \engine, Ctrl-C, no JVM

def _fake_store(on_this_machine=True):
    from types import SimpleNamespace

    from store.engine import Engine

    return SimpleNamespace(engine=Engine.AUTO, local_rows=1000,
                           storage=SimpleNamespace(on_this_machine=on_this_machine))


def test_engine_command_shows_and_sets_the_setting():
    from store.engine import Engine

    out = Console(file=io.StringIO(), width=200, color_system=None)
    session = C.Session(store=_fake_store(), out=out, err=out)
    C.dispatch(session, "\\engine")
    assert "Engine is auto (per statement: local when it reads at most 1,000 rows" in out.file.getvalue()
    C.dispatch(session, "\\engine spark")
    assert session.store.engine is Engine.SPARK and "Engine is spark (Spark)." in out.file.getvalue()
    C.dispatch(session, "\\engine LOCAL")
    assert session.store.engine is Engine.LOCAL and "Engine is local (DuckDB in this process)." in out.file.getvalue()
    with pytest.raises(UserError, match="auto, local or spark"):
        C.dispatch(session, "\\engine duck")
    with pytest.raises(UserError, match="auto, local or spark"):
        C.dispatch(session, "\\engine local spark")
    assert session.store.engine is Engine.LOCAL
    remote = C.Session(store=_fake_store(on_this_machine=False), out=out, err=out)
    with pytest.raises(UserError, match="this machine's file system only"):
        C.dispatch(remote, "\\engine local")
    assert remote.store.engine is Engine.AUTO
    assert "\\engine" in C.command_help()


def test_ctrl_c_interrupts_a_local_statement_and_starts_no_spark():
    """The runner of a statement on a store whose Spark has not started: Ctrl-C interrupts the
    DuckDB connection (the fake statement waits for that) and never touches Spark."""
    import os
    import signal
    import threading
    from types import SimpleNamespace

    from strata.repl import Cancelled, cancellable

    interrupted = threading.Event()
    con = SimpleNamespace(interrupt=interrupted.set)

    class Store:
        storage = SimpleNamespace(on_this_machine=True)
        spark_started = False

        def local(self):
            return SimpleNamespace(con=con)

        @property
        def spark(self):
            raise AssertionError("the runner started Spark")

    run = cancellable(Store())
    assert run(lambda: 42) == 42
    with pytest.raises(ValueError, match="boom"):
        run(lambda: (_ for _ in ()).throw(ValueError("boom")))

    def statement():
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        if not interrupted.wait(30):
            raise AssertionError("Ctrl-C did not interrupt the query")
        raise RuntimeError("INTERRUPT Error: Interrupted!")

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Cancelled):
        run(statement)
    assert signal.getsignal(signal.SIGINT) is before


def test_repl_start_describe_and_completion_start_no_jvm(movies_store, tmp_path):
    """What the REPL does before a statement needs Spark -- the prompt, `\\d`, `\\d TYPE`, Tab
    completion, a small query, EXPLAIN -- on a store whose Spark would fail to start."""
    from prompt_toolkit.document import Document

    from store import Store
    from strata.repl import build_prompt, cancellable

    def no_spark():
        raise AssertionError("the REPL started Spark")

    st = Store.open(movies_store.root, spark=no_spark)
    out = Console(file=io.StringIO(), width=160, color_system=None)
    session = C.Session(st, out, out)
    session.run = cancellable(st)
    prompt = build_prompt(session, tmp_path / "history")
    got = [c.text for c in prompt.completer.completer.get_completions(
        Document("select p.auth from WebPage p", len("select p.auth")), None)]
    assert "authScore" in got
    for text in ("\\timing on", "\\d", "\\d WebPage", "select v.id from Version v order by v.id",
                 "\\explain select p.id from WebPage p", "\\engine"):
        C.dispatch(session, text)
    text = out.file.getvalue()
    assert "avatar_lead_actor_v2" in text and "(local engine)" in text and "engine: local" in text
    assert "authScore: int" in text and not st.spark_started


def test_engine_spark_answers_the_next_statement_on_spark(live):
    s = live()
    C.dispatch(s, "\\timing on")
    C.dispatch(s, "select v.id from Version v order by v.id")
    assert "(local engine)" in s.out.file.getvalue()
    before = s.store.engine
    try:
        C.dispatch(s, "\\engine spark")
        C.dispatch(s, "select v.id from Version v order by v.id")
        text = s.out.file.getvalue()
        assert "(spark engine)" in text and text.count("avatar_lead_actor_v2") == 2
    finally:
        s.store.engine = before
