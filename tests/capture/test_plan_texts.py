"""Capture reads a plan's output names and attribute ids, and which projection items are input
attributes, from Spark's text of them (capture/tracking/paths.py: ``names_ids``,
``project_output``; a reader's options: ``scala_map``) instead of asking every attribute over
py4j. Any column name must come out as Spark's own attribute says it, whatever characters it
holds (``#``, digits, the separator, newlines, ``AS``), and the attribute items of a select must
be told apart from computed ones."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from capture.tracking.paths import analyzed, cls, contains_any, has_udf, names_ids, project_output, scala_map, seq

NAMES = st.text(st.sampled_from("ab###11L-T9ms \x1f\n AS,`."), min_size=1, max_size=8)


def _asked(attrs) -> list[tuple[str, int]]:
    """The reference: every attribute asked for its name and id."""
    return [(a.name(), a.exprId().id()) for a in seq(attrs)]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(NAMES, st.sampled_from(["long", "int", "string", "computed", "same"])),
                min_size=1, max_size=6))
def test_names_ids_and_project_output_agree_with_each_attribute(spark, columns):
    base = spark.range(2).select(F.col("id"), F.col("id").cast("int").alias("i"), F.lit("s").alias("s"))
    picked, computed = [], []
    for k, (name, kind) in enumerate(columns):
        if kind == "same":  # the input's attribute itself, under its own name
            picked.append(F.col("id"))
            computed.append(False)
            continue
        col = {"long": F.col("id"), "int": F.col("i"), "string": F.col("s"),
               "computed": F.col("id") + F.lit(k)}[kind]
        picked.append(col.alias(name))
        computed.append(True)  # an alias, even of an attribute
    plan = analyzed(base.select(*picked))
    assert cls(plan) == "Project"
    assert names_ids(plan.output()) == _asked(plan.output())
    named, by_text = project_output(plan)
    assert named == _asked(plan.output())
    items = seq(plan.projectList())
    made = [k for k, it in enumerate(items) if cls(it) != "AttributeReference"]
    assert made == [k for k, c in enumerate(computed) if c]
    if any("\x1f" in n for n, kind in columns if kind != "same"):  # texts that do not split: all computed
        assert by_text == list(range(len(items)))
    else:
        assert by_text == made


def test_tree_patterns_find_subqueries_and_udfs_where_a_walk_does(spark):
    spark.range(5).createOrReplaceTempView("plan_texts_t")
    plus = F.udf(lambda x: x + 1, "long")
    cases = {
        "select id from plan_texts_t where id > (select max(id) from plan_texts_t)": (True, False),
        "select id from plan_texts_t where id in (select id from plan_texts_t)": (True, False),
        "select id from plan_texts_t where exists (select 1 from plan_texts_t u where u.id = plan_texts_t.id)":
            (True, False),
        "select id + 1 from plan_texts_t where id > 1": (False, False),
    }
    for sql, (subquery, udf) in cases.items():
        plan = analyzed(spark.sql(sql))
        exprs = [e for node in (plan, *seq(plan.children())) for e in seq(node.expressions())]
        assert any(contains_any(e, ("PLAN_EXPRESSION",)) for e in exprs) is subquery, sql
        assert any(has_udf(e) for e in exprs) is udf, sql
        # a plan node's bits hold its subtree's: capture asks the node before its expressions
        assert contains_any(plan, ("PLAN_EXPRESSION",)) is subquery, sql
    udf_plan = analyzed(spark.range(3).select((plus(F.col("id")) * 2).alias("x")))
    assert [has_udf(e) for e in seq(udf_plan.projectList())] == [True]
    above = analyzed(spark.range(3).select(plus(F.col("id")).alias("x")).where("x > 1").select("x"))
    assert contains_any(above, ("PYTHON_UDF", "SCALA_UDF")), "the UDF two nodes below"


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(NAMES, st.text(st.sampled_from("ab1 ,=->\x1f\n"), max_size=6), max_size=5))
def test_a_scala_map_reads_as_the_dict_it_was_made_from(spark, options):
    """A reader's options (a Scala ``Map[String, String]``) come out key for key, value for value,
    separators and empty values included."""
    jmap = spark._jvm.java.util.HashMap()
    for k, v in options.items():
        jmap.put(k, v)
    converters = getattr(spark._jvm, "scala.jdk.javaapi.CollectionConverters")
    assert scala_map(converters.asScala(jmap)) == options
