"""IQL parser: the language surface (pure, no Spark) and a fuzz test."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iql import ast as A
from iql.errors import IqlError, IqlSyntaxError
from iql.parser import parse

TABLE1 = {
    "q1_pages_influencing_v1": (
        "select p.id from WebPage p, Version v where p influences(2) v and "
        "v.id = 'avatar_lead_actor_v1';"
    ),
    "q2_influencing_combined_table": (
        "select d.id from AnyData d, Table t where d influences(2) t and t.id = 'combined_table';"
    ),
    "q3_table_read_by_attempt": (
        "select t.id from MRTaskAttempt a, Table t where t feeds a and "
        "a.id = 'merge_map_task2_attempt1';"
    ),
    "q4_contaminated_tables": (
        "select t.id from PigScript p, PigJob j, AnyData d1, AnyData d2, Table t "
        "where p.id = 'extract_script' and j under p and j.version = 3 and j emits d1 "
        "and d1 influences(2) d2 and d2 under t;"
    ),
    "q5_yahoo_only_versions": (
        "select v.id from Version v, Table t where t.id = 'combined_table' and v under t and "
        "not exists (select * from WebPage source where source influences(2) v "
        "and source.license != 'yahoo');"
    ),
    "q6_most_authoritative": (
        "select v.id, source.authScore from Version v, WebPage source where source influences(2) v "
        "and source.authScore = (select max(source2.authScore) from Version v2, WebPage source2, "
        "(Row,Column) commonParent where source2 influences(2) v2 and v under commonParent and "
        "v2 under commonParent);"
    ),
}


@pytest.mark.parametrize("text", TABLE1.values(), ids=TABLE1.keys())
def test_table1_queries_parse(text):
    stmt = parse(text)
    assert isinstance(stmt.query, A.Select)
    assert not stmt.explain


def _where(text: str):
    return parse(text).query.where


@pytest.mark.parametrize(
    "predicate, kind, depth",
    [
        ("a under b", A.ProvKind.UNDER, None),
        ("a feeds b", A.ProvKind.FEEDS, None),
        ("a emits b", A.ProvKind.EMITS, None),
        ("a influences b", A.ProvKind.INFLUENCES, 1),
        ("a influences(0) b", A.ProvKind.INFLUENCES, 0),
        ("a INFLUENCES ( 7 ) b", A.ProvKind.INFLUENCES, 7),
        ("a influences(*) b", A.ProvKind.INFLUENCES, None),
    ],
    ids=["under", "feeds", "emits", "bare-influences-is-1", "k0", "spaced-upper", "star"],
)
def test_provenance_predicates(predicate, kind, depth):
    w = _where(f"select a.id from X a, Y b where {predicate}")  # noqa: S608 - IQL text, not SQL
    assert isinstance(w, A.ProvPredicate)
    assert (w.kind, w.depth) == (kind, depth)
    assert (w.left.name, w.right.name) == ("a", "b")


def test_keywords_are_case_insensitive_and_comments_ignored():
    text = "SeLeCt DISTINCT p.id -- the page\nFROM WebPage AS p WhErE p.license = 'x' -- done\n"
    q = parse(text).query
    assert q.distinct and q.from_[0].alias == "p" and q.from_[0].source.names == ("WebPage",)


def test_literals():
    w = _where("select a.id from X a where a.s in ('it''s', 1, -2, 2.5, -1e3, true, FALSE, null)")
    assert [i.value for i in w.items] == ["it's", 1, -2, 2.5, -1000.0, True, False, None]


def test_precedence_not_and_or():
    w = _where("select a.id from X a where not a.x = 1 and a.y = 2 or a.z = 3")
    assert isinstance(w, A.Or) and isinstance(w.left, A.And) and isinstance(w.left.left, A.Not)


def test_comparison_operators():
    for op, expected in [("=", "="), ("!=", "!="), ("<>", "!="), ("<", "<"), ("<=", "<="),
                         (">", ">"), (">=", ">=")]:
        assert _where(f"select a.id from X a where a.n {op} 1").op.value == expected  # noqa: S608 - IQL text, not SQL


def test_full_select_shape():
    q = parse(
        "explain select a.s as label, count(*) n, max(a.n) from X a, (B, A) c "
        "where a.n is not null and c.id not in ('x') group by a.s having count(*) > 1 "
        "order by n desc, 1 limit 5"
    )
    assert q.explain
    s = q.query
    assert [i.alias for i in s.items] == ["label", "n", None]
    assert s.from_[1].source == A.TypeRef(("B", "A"), True, s.from_[1].source.span)
    assert len(s.group_by) == 1 and s.having is not None and s.limit == 5
    assert [o.descending for o in s.order_by] == [True, False]
    assert isinstance(s.items[1].expr, A.Call) and s.items[1].expr.arg is None


def test_alias_defaults_to_type_name():
    assert parse("select WebPage.id from WebPage").query.from_[0].alias == "WebPage"


def test_subqueries():
    q = parse("select a.id from X a where exists (select * from Y b where b under a) "
              "and a.n = (select max(c.n) from X c)").query
    left, right = q.where.left, q.where.right
    assert isinstance(left, A.Exists) and left.query.items is None
    assert isinstance(right.right, A.ScalarSubquery)


def test_spans_point_at_source():
    text = "select p.id\n  from WebPage p"
    item = parse(text).query.from_[0]
    assert (item.source.span.line, item.source.span.column) == (2, 8)
    assert text[item.source.span.start:item.source.span.end] == "WebPage"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("select a.id from X a where", "query ended early"),
        ("select from X x", "unexpected 'from'"),
        ("select a.id from X a, X b where a influences 2 b", "influences(2)"),
        ("select a.id frm X a", "did you mean FROM"),
        ("select a.id from X a where a.id = \"x\"", "single quotes"),
        ("select a.id from X a where a.id = 'x", "unterminated string"),
        ("select sum(*) from X a", "only count(*)"),
        ("select median(a.n) from X a", "unknown function 'median'"),
        ("", "empty query"),
        ("select a.id from X a; select", "unexpected 'select'"),
    ],
    ids=["ended-early", "empty-select-list", "depth-parens", "misspelt-keyword", "double-quotes",
         "unterminated", "sum-star", "unknown-function", "empty", "two-statements"],
)
def test_syntax_errors(text, fragment):
    with pytest.raises(IqlSyntaxError) as info:
        parse(text)
    assert fragment in info.value.render()


_WORDS = ["select", "from", "where", "and", "or", "not", "exists", "under", "feeds", "emits",
          "influences", "(", ")", "*", ",", ".", "=", "!=", "<", "in", "is", "null", "a", "b",
          "X", "'s'", "1", "2.5", "-", "group", "by", "order", "limit", "distinct", "count",
          "max", ";", "explain", "--", "\n", "'", '"', "as", "having", "desc"]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=60), st.lists(st.sampled_from(_WORDS), max_size=25).map(" ".join)))
def test_fuzz_parse_returns_ast_or_iql_error(text):
    """Any input gives a Statement or an IqlError (never another exception)."""
    try:
        result = parse(text)
    except IqlError as e:
        rendered = e.render()
        assert rendered.startswith("iql: ")
        if e.line is not None:
            assert e.line >= 1 and e.column >= 1
        return
    assert isinstance(result, A.Statement)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["select a.id from X a where", "a under b", "and", "or", "not",
                                 "a.n = 1", "(", ")", "exists (select * from Y b where",
                                 "a influences(3) b", "b.s in ('x', 'y')"]), max_size=12)
       .map(" ".join))
def test_fuzz_near_valid_queries(text):
    try:
        assert isinstance(parse(text), A.Statement)
    except IqlError as e:
        assert e.render()
