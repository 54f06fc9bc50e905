"""IQL binder and planner: names, kinds, types, warnings, plan shapes (pure, no Spark)."""

from __future__ import annotations

import json

import pytest
from support.paths import ROOT

from iql import ast as A
from iql import compile_query
from iql import plan as P
from iql.binder import WARN_AGGREGATE, WARN_NEGATED, WARN_NOT_EXISTS, bind
from iql.errors import IqlSemanticError
from iql.parser import parse
from store.model import Catalog


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    bundle = json.loads((ROOT / "examples" / "movies.json").read_text())
    return Catalog.empty().merge_gsets(bundle["gsets"]).merge_types(bundle["types"])


def bound(text: str, catalog) -> A.BoundStatement:
    return bind(parse(text), catalog, text)


@pytest.mark.parametrize(
    "type_text, key, kind",
    [
        ("WebPage", "WebPage", "data"),
        ("Cell", "Column+Row", "data"),
        ("(Row, Column)", "Column+Row", "data"),
        ("(Column, Row)", "Column+Row", "data"),
        ("PigJob", "PigJob", "process"),
        ("AnyData", None, "data"),
        ("AnyProcess", None, "process"),
        ("Any", None, None),
    ],
    ids=["name", "alias", "tuple", "tuple-reordered", "process", "anydata", "anyprocess", "any"],
)
def test_from_types_resolve(catalog, type_text, key, kind):
    src = bound(f"select x.id from {type_text} x", catalog).query.sources[0]  # noqa: S608 - IQL text, not SQL
    assert (src.type_key, src.kind) == (key, kind)


def test_attribute_types_come_from_the_catalog(catalog):
    q = bound("select p.authScore, p.license, p.id from WebPage p", catalog).query
    assert [o.vtype for o in q.outputs] == [A.ValueType.INT, A.ValueType.STRING, A.ValueType.STRING]
    assert [o.name for o in q.outputs] == ["authScore", "license", "id"]


def test_output_names_disambiguate_and_alias(catalog):
    q = bound("select p.id, v.id, count(*) , max(p.authScore) best from WebPage p, Version v "
              "group by p.id, v.id", catalog).query
    assert [o.name for o in q.outputs] == ["p.id", "v.id", "count(*)", "best"]


def test_star_expands_id_and_attributes(catalog):
    q = bound("select * from WebPage p", catalog).query
    assert [o.name for o in q.outputs] == ["id", "authScore", "license"]


def test_correlation_is_detected_through_nesting(catalog):
    q = bound("select v.id from Version v where exists (select * from WebPage p where "
              "exists (select * from Table t where v under t))", catalog).query
    outer_sub = q.where.query
    inner_sub = outer_sub.where.query
    assert [s.alias for s in inner_sub.correlated] == ["v"]
    assert [s.alias for s in outer_sub.correlated] == ["v"]  # propagated upward
    assert q.correlated == ()


def test_inner_alias_shadows_outer(catalog):
    q = bound("select v.id from Version v where exists (select * from Table v where v.id = 'x')",
              catalog).query
    assert q.where.query.correlated == ()


@pytest.mark.parametrize(
    "text, warnings",
    [
        ("select v.id from Version v where not exists (select * from WebPage p where p influences(2) v)",
         [WARN_NOT_EXISTS]),
        ("select v.id from Version v, Table t where not v under t", [WARN_NEGATED]),
        ("select v.id from Version v, Table t where v.id = 'a' or not (v under t and t.id = 'b')",
         [WARN_NEGATED]),
        ("select count(*) from Version v, Table t where v under t", [WARN_AGGREGATE]),
        ("select max(p.authScore) from WebPage p", []),
        ("select v.id from Version v, Table t where v under t and not v.id = 'x'", []),
        ("select v.id from Version v where exists (select * from WebPage p where p influences v)", []),
    ],
    ids=["not-exists", "not-under", "negated-inside-or", "count-over-under", "plain-aggregate",
         "negated-plain-comparison", "positive-exists"],
)
def test_open_world_warnings(catalog, text, warnings):
    assert list(bound(text, catalog).warnings) == warnings


def test_double_negation_is_not_negated(catalog):
    st = bound("select v.id from Version v, Table t where not not v under t", catalog)
    assert st.warnings == ()


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("select x.id from Foo x", "unknown type 'Foo'"),
        ("select t.license from Table t", "type Table has no attribute 'license'"),
        ("select d.n from Any d", "wildcard Any"),
        ("select a.id from MRTaskAttempt a, Table t where a feeds t", "feeds needs data"),
        ("select a.id from Version a, Table t where a.id in ('x', 1)", "cannot compare"),
        ("select p.id from WebPage p having count(*) > 1 and p.id = 'x'", "GROUP BY"),
    ],
    ids=["type", "attribute", "wildcard", "feeds-kinds", "in-list-types", "having-ungrouped"],
)
def test_semantic_errors_have_positions(catalog, text, fragment):
    with pytest.raises(IqlSemanticError) as info:
        bound(text, catalog)
    assert fragment in info.value.message + (info.value.hint or "")
    assert info.value.line == 1 and info.value.column >= 1


# ------------------------------------------------------------------------------------ planner


def _nodes(rel):
    yield rel
    for attr in ("input", "left", "right", "new"):
        child = getattr(rel, attr, None)
        if child is not None:
            yield from _nodes(child)


def test_id_literal_is_pushed_into_the_scan_and_starts_the_plan(catalog):
    _, plan = compile_query("select p.id from WebPage p, Version v where p influences(2) v "
                            "and v.id = 'avatar_lead_actor_v1'", catalog)
    join = next(n for n in _nodes(plan.root) if isinstance(n, P.ProvJoin))
    assert isinstance(join.input, P.Scan) and join.input.ids == ("avatar_lead_actor_v1",)
    # influences is expanded from the pinned side only; the join filters the other end
    assert join.new.source.alias == "p" and not join.bound_left and join.bound_right
    assert not any(isinstance(n, P.Filter) for n in _nodes(plan.root))


def test_wildcard_side_stays_unbound(catalog):
    _, plan = compile_query("select d.id from AnyData d, Table t where d influences(2) t "
                            "and t.id = 'combined_table'", catalog)
    join = next(n for n in _nodes(plan.root) if isinstance(n, P.ProvJoin))
    assert (join.bound_left, join.bound_right) == (False, True)


def test_attribute_filters_are_pushed_down(catalog):
    _, plan = compile_query("select j.id from PigJob j, PigScript p where j under p and j.version = 3",
                            catalog)
    scans = {n.source.alias: n for n in _nodes(plan.root) if isinstance(n, P.Scan)}
    assert len(scans["j"].filters) == 1 and scans["j"].attributes == ("version",)
    assert scans["p"].filters == ()


def test_predicate_on_two_joined_sides_becomes_a_semi_join(catalog):
    _, plan = compile_query("select a.id from Version a, Version b, Table t where a under t and "
                            "b under t and a influences(1) b", catalog)
    joins = [n for n in _nodes(plan.root) if isinstance(n, P.ProvJoin)]
    assert len(joins) == 3 and sum(j.new is None for j in joins) == 1


def test_or_and_subqueries_stay_residual_filters(catalog):
    _, plan = compile_query("select v.id from Version v, Table t where v under t and "
                            "(v.id = 'a' or not exists (select * from WebPage p where p influences v))",
                            catalog)
    filters = [n for n in _nodes(plan.root) if isinstance(n, P.Filter)]
    assert len(filters) == 1
    assert any(isinstance(n, P.SubqueryExists) for n in A.walk(filters[0].predicate))


# ------------------------------------------------------------------------------------ TRACE


def test_trace_is_a_from_source_with_fixed_columns(catalog):
    st = bound("select * from TRACE('r1' MATCH '/user/id_str' LIMIT 3) t where t.role = 'influencing'",
               catalog)
    (src,) = st.query.sources
    assert src.trace is not None and (src.trace.run, src.trace.limit) == ("r1", 3)
    assert src.kind is None and not src.is_element
    assert [o.name for o in st.query.outputs] == [name for name, _ in A.TRACE_COLUMNS]
    assert st.form is A.Form.SELECT


def test_a_trace_statement_is_select_star_from_trace(catalog):
    trace = bound("TRACE MATCH '/user' LIMIT 2", catalog)
    select = bound("SELECT * FROM TRACE(MATCH '/user' LIMIT 2)", catalog)
    assert trace.form is A.Form.TRACE and select.form is A.Form.SELECT
    assert [o.name for o in trace.query.outputs] == [o.name for o in select.query.outputs]
    _, plan = compile_query("TRACE MATCH '/user' LIMIT 2", catalog)
    scan = next(n for n in _nodes(plan.root) if isinstance(n, P.TraceScan))
    assert scan.trace.limit == 2 and scan.filters == ()


def test_trace_rows_join_store_elements_through_ordinary_expressions(catalog):
    _, plan = compile_query("select p.id, t.path from TRACE(MATCH '/user') t, WebPage p "
                            "where t.item = p.id and t.role = 'contributing'", catalog)
    nodes = list(_nodes(plan.root))
    (scan,) = [n for n in nodes if isinstance(n, P.TraceScan)]
    assert len(scan.filters) == 1  # the single-alias filter is pushed into the trace scan
    assert any(isinstance(n, P.CrossJoin) for n in nodes)
    assert any(isinstance(n, P.Filter) for n in nodes)  # t.item = p.id over the pair


@pytest.mark.parametrize(
    "text, fragment, at",
    [
        ("select t.id from TRACE(MATCH '/a') t", "trace rows have no column 'id'", "t.id"),
        ("select colour from TRACE(MATCH '/a')", "trace rows have no column 'colour'", "colour"),
        ("select t from TRACE(MATCH '/a') t", "'t' names the trace rows, not a value", "t from"),
        ("select p.id from TRACE(MATCH '/a') t, WebPage p where t influences p",
         "ranges over trace rows, not store elements", "t influences"),
        ("select p.id from WebPage p, TRACE(MATCH '/a') t where exists "
         "(select * from Version v where v.id = t.item)", "cannot read the trace rows", "t.item"),
        ("select sum(t.accessed_by) from TRACE(MATCH '/a') t", "sum() needs a number", "t.accessed_by"),
    ],
    ids=["no-id", "bare-unknown", "alias-as-value", "provenance", "correlated", "array-sum"],
)
def test_trace_mistakes_point_at_the_query(catalog, text, fragment, at):
    with pytest.raises(IqlSemanticError) as info:
        bound(text, catalog)
    err = info.value
    assert fragment in err.message and err.column == text.index(at) + 1 and err.hint


def test_a_bad_tree_pattern_points_into_the_query(catalog):
    from iql.errors import IqlSyntaxError

    text = "select * from TRACE(MATCH '/user[' ) t"
    with pytest.raises(IqlSyntaxError) as info:
        bound(text, catalog)
    err = info.value
    assert err.message.startswith("bad tree pattern in TRACE:") and "\n" not in err.message
    assert text.index("'/user[") < err.span[0] <= len(text)  # inside the pattern's literal
    assert "^" in err.render().splitlines()[2]
