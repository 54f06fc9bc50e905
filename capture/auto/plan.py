"""Translate a DataFrame's analyzed logical plan into a tracked DataFrame (zero-change capture).

:func:`translate` walks Spark's analyzed plan of the DataFrame a program writes, bottom up (one
``visit_<Kind>`` method per plan node class, the visitor idiom of iql/visit.py), and
rebuilds it operator by operator with the tracked operators of ``capture.tracking``: every
operator gets Pebble's provenance and the hidden id columns ride along, whatever built the plan
(DataFrame calls, ``spark.sql``, temp views, catalog tables, CTEs).

The rebuilt plan keeps Spark's own expressions: each node's expressions (already resolved, with
their attribute ids) are wrapped back into Columns (``column_of``) or the node itself is re-planted
over the annotated child (``_replant``), so the visible columns are computed by exactly the
expressions of the program. After each node the visible output is re-bound to the node's own
attribute ids (``_rebind``: a Project of aliases, no operator), so the expressions of the nodes
above resolve against it unchanged.

A node this module does not know is refused (:class:`~capture.errors.UnsupportedOperation`)
before any job runs, naming the operator. docs/capture.md lists every operator and what it records.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from pyspark.serializers import CloudPickleSerializer
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from capture import jvm
from capture.auto import window
from capture.errors import UnsupportedOperation
from capture.ids import is_hidden
from capture.locator import Locator
from capture.operators import OperatorProv, OpInput, OpType, column_paths
from capture.tracking import binary, grouping
from capture.tracking.frame import TrackedDataFrame
from capture.tracking.paths import (
    analyzed,
    attr_map,
    cls,
    contains_any,
    frame_of,
    maximal_paths,
    names_ids,
    names_ids_texts,
    out_pairs,
    output_paths,
    scala_map,
    seq,
    texts,
    to_seq,
    visible_names_ids,
)
from capture.tracking.project import apply as project_apply
from capture.tracking.project import column_of, map_in_arrow, map_in_pandas
from capture.tracking.sources import (
    file_line_ids,
    file_row_ids,
    hive_locator,
    hive_split_ids,
    item_ids,
    layout_key,
    locator,
    program_locator,
)
from capture.tracking.tracker import line_delimited
from store.storage import spark_conf

_JOINS = {
    "INNER": "inner", "CROSS": "cross", "LEFT OUTER": "left", "RIGHT OUTER": "right",
    "FULL OUTER": "full", "LEFT SEMI": "semi", "LEFT ANTI": "anti",
}
_FORMATS = {
    "ParquetFileFormat": "parquet", "JsonFileFormat": "json", "CSVFileFormat": "csv",
    "TextFileFormat": "text", "OrcFileFormat": "orc",
}
_SUBQUERY = frozenset({"Exists", "InSubquery", "ScalarSubquery", "ListQuery", "LateralSubquery"})
_PREDICATE = frozenset({"Exists", "InSubquery", "ListQuery"})  # a Filter's: rewritten as semi/anti joins


def refuse(node, reason: str) -> UnsupportedOperation:
    return UnsupportedOperation.plan_operator(cls(node), reason)


@dataclass
class _Walk:
    tracker: object
    spark: object
    ctes: dict[int, object] = field(default_factory=dict)
    # each CTE's definition translated once, the first time it is referenced
    cte_frames: dict[int, TrackedDataFrame] = field(default_factory=dict)
    # the attribute ids of the values of a Filter's uncorrelated scalar subqueries, each joined
    # by a join that records no right item (binary.compared_scalar)
    compared: set[int] = field(default_factory=set)
    # an expand's input, its projections' items after the passed-through columns and their count
    # (:func:`_expand_parts`), by the expand's operator id (:meth:`_by_groups`)
    expand_inputs: dict[int, tuple[TrackedDataFrame, list[list], int]] = field(default_factory=dict)

    # ---- JVM plumbing -------------------------------------------------------------------------
    @property
    def jvm(self):
        """The JVM view; classes are looked up by their full name (``getattr(jvm, "a.b.C")``: one
        round trip, where ``jvm.a.b.C`` asks the JVM about every package on the way)."""
        return self.spark._jvm

    def seq_of(self, items: list):
        return to_seq(self.jvm, items)

    def frame(self, plan) -> DataFrame:
        """The DataFrame of an (analyzed) logical plan."""
        return frame_of(self.spark, plan)

    def replant(self, node, *children: DataFrame) -> DataFrame:
        """``node`` with its children replaced by the given (annotated) DataFrames' plans."""
        return self.frame(node.withNewChildren(self.seq_of([analyzed(c) for c in children])))

    def alias(self, child, name: str, expr_id):
        empty = self.seq_of([])
        none = getattr(getattr(self.jvm, "scala.None$"), "MODULE$")
        alias = getattr(self.jvm, "org.apache.spark.sql.catalyst.expressions.Alias")
        return alias(child, name, expr_id, empty, none, empty)

    # ---- the walk ----------------------------------------------------------------------------
    def rebind(self, tdf: TrackedDataFrame, node) -> TrackedDataFrame:
        """``tdf`` with its visible columns carrying ``node``'s output names and attribute ids
        (by position); hidden columns kept. No operator: a Project of aliases."""
        want = names_ids(node.output())
        visible = visible_names_ids(analyzed(tdf.raw))
        if len(visible) != len(want):
            raise refuse(node, f"capture rebuilt {len(visible)} columns where Spark's plan has {len(want)}")
        if visible == want:
            return tdf
        plan = analyzed(tdf.annotated)
        have = names_ids(plan.output())
        wanted = iter(zip(seq(node.output()), want, strict=True))
        items = [a if is_hidden(named[0]) else self._as(a, named, *next(wanted))
                 for a, named in zip(seq(plan.output()), have, strict=True)]
        project = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans.logical.Project")(self.seq_of(items), plan)
        df = self.frame(project)
        if [i for _, i in visible_names_ids(analyzed(df))] != [i for _, i in want]:
            # Spark renewed an alias whose id another alias below already produces: the nodes above
            # could not find their columns
            raise refuse(node, "capture cannot give its output Spark's own attribute ids here (a column "
                               "renamed by two operators it rebuilds); please report the query")
        return TrackedDataFrame(tdf.tracker, df, tdf.oid, tdf.id_column, tdf._slots, tdf._derived)

    def _as(self, attr, named: tuple[str, int], want, want_named: tuple[str, int]):
        """``attr`` (name and id ``named``) under ``want``'s name and id (itself when they already
        match: an alias that repeats its child's id would make Spark renew it)."""
        if named == want_named:
            return attr
        return self.alias(attr, want_named[0], want.exprId())

    def same(self, tdf: TrackedDataFrame, df: DataFrame) -> TrackedDataFrame:
        """``df`` (the same rows and columns as ``tdf``, e.g. repartitioned) as ``tdf``."""
        return TrackedDataFrame(tdf.tracker, df, tdf.oid, tdf.id_column, tdf._slots, tdf._derived)

    def run(self, node) -> TrackedDataFrame:
        """``node`` translated (its subtree first), its visible output rebound to ``node``'s own
        attribute ids. A subquery in the node's expressions is rewritten as a join first (a
        Filter's IN / EXISTS; a scalar subquery, correlated or not, in a Filter, Project or
        Aggregate), else refused (its rows would not be tracked); a tracked operator's refusal is
        said in terms of the plan node."""
        kind = cls(node)
        subs = self._subquery_exprs(node)
        if kind == "Filter" and any(_find_class(e, _PREDICATE) for e in subs):
            # IN / EXISTS in a WHERE clause: the plan rewritten as semi/anti joins, then visited
            return self.rebind(self.run(self._joins_for_subqueries(node)), node)
        if any(_correlated_scalar(e) for e in subs):
            # a correlated scalar subquery: the plan rewritten as a left outer join with the
            # subquery's aggregate, then visited
            return self.rebind(self.run(self._joins_for_scalars(node)), node)
        if kind in ("Filter", "Project", "Aggregate") and any(_uncorrelated_scalars(e) for e in subs):
            # an uncorrelated scalar subquery: its one-row result left-outer-joined to every row
            return self.rebind(self.run(self._join_for_uncorrelated(node)), node)
        self._no_subqueries(node, subs)
        try:
            out = self.visit(node, kind)
        except UnsupportedOperation as e:
            if getattr(e, "operation", None) is None:
                raise
            raise refuse(node, f"{e.operation}: {e.reason}" if e.reason else e.operation) from None
        return self.rebind(out, node)

    def visit(self, node, kind: str | None = None) -> TrackedDataFrame:
        """``visit_<Kind>(node)``: the visitor idiom of iql/visit.py (capture cannot import iql, so
        it is spelled out here). ``node`` is a py4j object of Spark's analyzed plan, so the
        dispatch key is the JVM node's simple class name (``kind``, else ``cls(node)``), not a
        Python class."""
        return getattr(self, "visit_" + (kind or cls(node)), self.generic_visit)(node)

    def generic_visit(self, node) -> TrackedDataFrame:
        raise refuse(node, "no provenance rule for it yet")

    # ---- nodes without an operator -------------------------------------------------------------
    def visit_SubqueryAlias(self, node) -> TrackedDataFrame:
        """Nodes that change neither rows nor columns: the plan keeps them, provenance does not
        see them."""
        return self.child(node)

    visit_View = visit_ResolvedHint = visit_SubqueryAlias

    def visit_Repartition(self, node) -> TrackedDataFrame:
        """Nodes that move rows between partitions: re-planted over the annotated child, no
        operator."""
        child = self.child(node)
        return self.same(child, self.replant(node, child.annotated))

    visit_RepartitionByExpression = visit_RebalancePartitions = visit_Repartition

    def _subquery_exprs(self, node) -> list:
        """The expressions of ``node`` that hold a subquery: Spark marks every expression tree
        holding one with its ``PLAN_EXPRESSION`` tree pattern, so each expression is asked once
        instead of walked node by node; a plan node's bits hold its subtree's, so a node with none
        below it is asked once (most nodes hold none)."""
        if not contains_any(node, ("PLAN_EXPRESSION",)):
            return []
        return [e for e in seq(node.expressions()) if contains_any(e, ("PLAN_EXPRESSION",))]

    def _joins_for_subqueries(self, node):
        """A Filter with IN/EXISTS subqueries as Spark's optimizer rewrites it: left semi joins
        (IN, EXISTS) and left anti joins (NOT IN, null-aware; NOT EXISTS), correlated predicates
        pulled up into the join condition (PullupCorrelatedPredicates, RewritePredicateSubquery)."""
        return self._optimized(node, "PullupCorrelatedPredicates$", "RewritePredicateSubquery$")

    def _joins_for_scalars(self, node):
        """A node with correlated scalar subqueries as Spark's optimizer rewrites it: each
        subquery's aggregate left-outer-joined on its correlated predicates, pulled up into the
        join condition (PullupCorrelatedPredicates, RewriteCorrelatedScalarSubquery); the value
        read from the joined column."""
        return self._optimized(node, "PullupCorrelatedPredicates$", "RewriteCorrelatedScalarSubquery$")

    def _join_for_uncorrelated(self, node):
        """A Filter, Project or Aggregate with uncorrelated scalar subqueries: each subquery's
        plan (one Spark does not know to be at most one row made one by :meth:`_one_row`)
        left-outer-joined to the node's child with no condition, its one column under a new
        attribute that replaces the subquery in the node's expressions (an Aggregate groups by
        it too: one value for every row). No rows: the left join gives null, as the subquery
        does. Spark has no rule for this (it runs such a subquery apart and plants its value);
        the plan is the one RewriteCorrelatedScalarSubquery builds for a correlated subquery
        with no correlated predicates. A Filter's subquery only decides which rows pass: its join
        records no right item (:meth:`visit_Join`, binary.compared_scalar)."""
        logical = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans.logical")
        plans = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans")
        none = getattr(getattr(self.jvm, "scala.None$"), "MODULE$")
        new_id = getattr(getattr(self.jvm, "org.apache.spark.sql.catalyst.expressions.NamedExpression$"),
                         "MODULE$").newExprId
        child = seq(node.children())[0]
        subs: dict = {}  # the subquery's exprId -> the attribute replacing it
        for e in seq(node.expressions()):
            for sub in _uncorrelated_scalars(e):
                if sub.exprId().id() in subs:
                    continue
                plan, rows = sub.plan(), sub.plan().maxRows()
                if rows.isDefined() and rows.get() <= 1:
                    value = self.alias(seq(plan.output())[0], "scalarsubquery", new_id())
                    right = logical.Project(self.seq_of([value]), plan)
                else:
                    right = self._one_row(plan)
                    value = seq(right.output())[0]
                child = logical.Join(child, right, getattr(getattr(plans, "LeftOuter$"), "MODULE$"), none,
                                     getattr(getattr(logical, "JoinHint$"), "MODULE$").NONE())
                subs[sub.exprId().id()] = value.toAttribute()
                if cls(node) == "Filter":
                    self.compared.add(value.exprId().id())

        def swap(e):
            if cls(e) == "ScalarSubquery" and e.exprId().id() in subs:
                return subs[e.exprId().id()]
            kids = seq(e.children())
            new = [swap(c) for c in kids]
            return e if all(a is b for a, b in zip(kids, new, strict=True)) else e.withNewChildren(self.seq_of(new))

        kind = cls(node)
        if kind == "Filter":
            return logical.Project(node.output(), logical.Filter(swap(node.condition()), child))
        if kind == "Project":
            return logical.Project(self.seq_of([swap(e) for e in seq(node.projectList())]), child)
        keys = [swap(k) for k in seq(node.groupingExpressions())]
        if not keys:
            raise refuse(node, "an uncorrelated scalar subquery in an aggregation without GROUP BY: write it "
                               "as a join")
        return logical.Aggregate(self.seq_of(keys + list(subs.values())),
                                 self.seq_of([swap(e) for e in seq(node.aggregateExpressions())]), child,
                                 node.hint())

    def _one_row(self, plan):
        """A scalar subquery's ``plan`` (of more rows than one, as far as Spark knows) as an
        aggregation of its rows into the one value: its only row's, null for none, Spark's own
        error for several (SCALAR_SUBQUERY_TOO_MANY_ROWS) — what the subquery gives."""
        col = column_of(self.spark, seq(plan.output())[0])
        many = F.raise_error(F.lit("[SCALAR_SUBQUERY_TOO_MANY_ROWS] More than one row returned by a subquery "
                                   "used as an expression."))
        return analyzed(self.frame(plan).agg(
            F.when(F.count(F.lit(1)) > 1, many).otherwise(F.first(col)).alias("scalarsubquery")))

    def _optimized(self, node, *rules: str):
        """``node`` after Spark's optimizer rules ``rules`` (objects of catalyst.optimizer), in order."""
        opt = getattr(self.jvm, "org.apache.spark.sql.catalyst.optimizer")
        for rule in rules:
            node = getattr(getattr(opt, rule), "MODULE$").apply(node)
        return node

    def _no_subqueries(self, node, exprs: list) -> None:
        for e in exprs:
            found = _find_class(e, _SUBQUERY)
            if found:
                raise refuse(node, f"a {found} subquery inside {cls(node)}: its rows would not be tracked "
                                   "(IN and EXISTS in a WHERE clause are captured as semi/anti joins, a scalar "
                                   "subquery in a Filter, Project or Aggregate as a join with its result): "
                                   "write it as a join")

    def child(self, node) -> TrackedDataFrame:
        return self.run(seq(node.children())[0])

    # ---- sources ----------------------------------------------------------------------------
    def _source(self, leaf, dataset: str, method: str, detail: str, where: Locator | None = None,
                by_row_index: bool = False) -> TrackedDataFrame:
        """A source over plan node ``leaf``: ids by file and row index, else by position under a
        layout key; ``where`` is a file scan's locator without its layout (None: the program's rows)."""
        df = self.frame(leaf)
        if by_row_index:
            return self.tracker._source(df, dataset, method, detail, file_row_ids(df, dataset), locator=where)
        layout = layout_key(df)
        where = program_locator(method) if where is None else replace(where, layout=layout, layout_options=())
        return self.tracker._source(df, dataset, method, detail, item_ids(dataset, layout), locator=where)

    def visit_LogicalRelation(self, node) -> TrackedDataFrame:
        rel = node.relation()
        if cls(rel) != "HadoopFsRelation":
            raise refuse(node, f"a {cls(rel)} relation (file sources and catalog tables of files are tracked)")
        fmt = _FORMATS.get(cls(rel.fileFormat()))
        if fmt is None:
            raise refuse(node, f"file format {cls(rel.fileFormat())}")
        table = node.catalogTable()
        if table.isDefined():
            dataset = table.get().identifier().unquotedString()
        else:
            dataset = ",".join(sorted(str(p) for p in seq(rel.location().rootPaths())))
            dataset = dataset.removeprefix("file:")
        if fmt == "json":
            lines = self._json_lines(node, rel, dataset, table)
            if lines is not None:
                return lines
        where = locator(self.frame(node), "row_index" if fmt == "parquet" else "position", fmt, self._options(rel),
                        relation=rel, table=dataset if table.isDefined() else None)
        return self._source(node, dataset, f"read.{fmt}", f"{fmt} {dataset}", where, by_row_index=fmt == "parquet")

    def visit_HiveTableRelation(self, node) -> TrackedDataFrame:
        """A Hive-format table that Spark reads through its SerDe (a text table, say; Spark turns
        Parquet and ORC Hive tables into file relations, read above). Spark's own scan is kept,
        so every row is what the program reads; the ids are the file, the Hadoop split and the
        record's index in it (``hive_split_ids``)."""
        dataset = node.tableMeta().identifier().unquotedString()
        where = hive_locator(self.spark, node, table=dataset)
        return self.tracker._source(self.frame(node), dataset, "read.hive", f"hive {dataset}",
                                    hive_split_ids(dataset), locator=where)

    def _options(self, rel) -> dict[str, str]:
        """A file relation's reader options (its paths aside: they are the relation's root paths)."""
        return {k: v for k, v in scala_map(rel.options()).items() if k.lower() not in ("path", "paths")}

    def _json_lines(self, node, rel, dataset: str, table) -> TrackedDataFrame | None:
        """A JSON Lines scan read again with capture's offset reader (capture/jvm), as
        ``Tracker.read.json`` reads it: the same rows plus each line's offset, so item ids are
        ``(dataset, file, modification time, offset)`` — the Tracker's ids, independent of the
        splits, with filter pushdown kept. None (positional ids) without the reader's jar, for
        multi-line JSON, or for a partitioned folder."""


        options = self._options(rel)  # the files come from the root paths below
        if rel.partitionSchema().length() or not jvm.available(self.spark) \
                or not line_delimited(self.spark, options):
            return None
        schema = self.frame(node).schema
        if any(is_hidden(f.name) for f in schema.fields):
            return None
        paths = [str(p) for p in seq(rel.location().rootPaths())]
        fields = [*schema.fields, StructField(jvm.OFFSET, LongType(), False)]
        df = self.spark.read.options(**options).schema(StructType(fields)).format(jvm.CLASS).load(paths)
        # the re-read relation under the scan's own attributes (no aliasing Project: an alias that
        # re-produced them would make Spark renew later aliases of the same ids)
        leaf = analyzed(df)
        out = seq(node.output()) + [a for a in seq(leaf.output()) if a.name() == jvm.OFFSET]
        df = self.frame(getattr(self.jvm, "org.apache.spark.sql.execution.datasources.LogicalRelation")(
            leaf.relation(), self.seq_of(out), leaf.catalogTable(), leaf.isStreaming(), leaf.stream()))
        where = locator(df, "offset", "json", options, relation=rel, table=dataset if table.isDefined() else None)
        return self.tracker._source(df, dataset, "read.json", f"json {dataset}", file_line_ids(df, dataset),
                                    (jvm.OFFSET,), where)

    def _local(self, node, what: str) -> TrackedDataFrame:
        text = node.toString() if what != "local" else "\n".join(
            [str(f) for f in node.schema().fieldNames()] + [node.data().mkString("\n")])
        digest = hashlib.sha256(_without_ids(text).encode()).hexdigest()[:16]
        return self._source(node, f"{what}:{digest}", what, f"{what} {node.simpleString(25)}")

    def visit_LocalRelation(self, node) -> TrackedDataFrame:
        return self._local(node, "local")

    def visit_Range(self, node) -> TrackedDataFrame:
        return self._local(node, "range")

    def visit_OneRowRelation(self, node) -> TrackedDataFrame:
        return self._local(node, "onerow")

    def visit_LogicalRDD(self, node) -> TrackedDataFrame:
        """``createDataFrame`` of a local list or an RDD: positional ids, under a dataset name
        that holds the RDD's id (unique in the session), since the plan does not hold the data."""
        schema = hashlib.sha256(node.schema().json().encode()).hexdigest()[:8]
        dataset = f"rdd:{schema}:{node.rdd().id()}"
        return self._source(node, dataset, "createDataFrame", f"rdd {node.simpleString(25)}")

    # ---- CTEs -------------------------------------------------------------------------------
    def visit_WithCTE(self, node) -> TrackedDataFrame:
        for d in seq(node.cteDefs()):
            self.ctes[d.id()] = d
        return self.run(node.plan())

    def visit_CTERelationRef(self, node) -> TrackedDataFrame:
        """The CTE's definition, translated at its first reference; every later reference reuses
        that translation, so the CTE's operators and item ids are the same wherever the query reads
        it (one operator per operator of the program, as for a DataFrame used twice), and the plan
        is built once. :meth:`run` rebinds each reference to its own attribute ids."""
        cte = node.cteId()
        done = self.cte_frames.get(cte)
        if done is not None:
            return done
        d = self.ctes.get(cte)
        if d is None:
            raise refuse(node, "a reference to a CTE the plan does not define")
        self.cte_frames[cte] = out = self.run(d.child())
        return out

    # ---- rows kept with their ids ------------------------------------------------------------
    def visit_Filter(self, node) -> TrackedDataFrame:
        child = self.child(node)
        return child._rowwise("filter", OpType.FILTER, self.replant(node, child.raw), over_raw=True)

    def visit_Sample(self, node) -> TrackedDataFrame:
        if node.withReplacement():
            raise refuse(node, "sampling with replacement repeats rows; sample without replacement is a filter")
        child = self.child(node)
        return child._rowwise("sample", OpType.FILTER, self.replant(node, child.annotated))

    def visit_Sort(self, node) -> TrackedDataFrame:
        child = self.child(node)
        return child._rowwise("orderBy" if getattr(node, "global")() else "sortWithinPartitions", OpType.SORT,
                              self.replant(node, child.annotated))

    def visit_GlobalLimit(self, node) -> TrackedDataFrame:
        local = seq(node.children())[0]
        if cls(local) != "LocalLimit":
            raise refuse(node, "a global limit without its local limit")
        child = self.child(local)
        return child._rowwise("limit", OpType.LIMIT, self.replant(node, self.replant(local, child.annotated)))

    def visit_Offset(self, node) -> TrackedDataFrame:
        child = self.child(node)
        return child._rowwise("offset", OpType.LIMIT, self.replant(node, child.annotated))

    # ---- projections, flatten ------------------------------------------------------------------
    def visit_Project(self, node) -> TrackedDataFrame:
        below = seq(node.children())[0]
        items = seq(node.projectList())
        if cls(below) == "Generate":
            gen_ids = {a.exprId().id() for a in seq(below.generatorOutput())}
            if all(_plain_ref(i, gen_ids) or not (_refs(i) & gen_ids) for i in items):
                return self._generate(node, below)  # one flatten
            # expressions over the generator's output (LATERAL VIEW … AS l, then l.sku): the
            # flatten, then the projection over its output
        child = self.run(below)
        cols = [column_of(self.spark, i) for i in items]
        return project_apply(child, "select", lambda d, extra: d.select(*cols, *extra), explicit=True)

    def visit_Generate(self, node) -> TrackedDataFrame:
        project = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans.logical.Project")(node.output(), node)
        return self._generate(project, node)

    def _stack(self, project, gen) -> TrackedDataFrame:
        """``stack(n, e1, e2, …)`` (the SQL unpivot idiom): the n rows as ``inline`` over the
        array of the row's n structs (a flatten over a computed array, as Expand), then the
        projection above it."""
        args = seq(gen.generator().children())
        n = int(args[0].eval(None))
        exprs = args[1:]
        width = -(-len(exprs) // n)
        outs = seq(gen.generatorOutput())
        structs = []
        for i in range(n):
            row = exprs[i * width:(i + 1) * width]
            cols = [column_of(self.spark, e) for e in row]
            cols += [F.lit(None).cast(outs[j].dataType().simpleString()) for j in range(len(row), width)]
            structs.append(F.struct(*[c.cast(outs[j].dataType().simpleString()).alias(f"_{j}")
                                      for j, c in enumerate(cols)]))
        child = self.run(seq(gen.children())[0])
        keep = [column_of(self.spark, a) for a in seq(seq(gen.children())[0].output())]
        flat = project_apply(child, "stack",
                             lambda d, extra: d.select(*keep, F.inline(F.array(*structs)), *extra))
        logical = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans.logical")
        shape = logical.Project(self.seq_of(seq(seq(gen.children())[0].output()) + outs), gen)
        flat = self.rebind(flat, shape)
        cols = [column_of(self.spark, i) for i in seq(project.projectList())]
        return project_apply(flat, "select", lambda d, extra: d.select(*cols, *extra), explicit=True)

    def _json_tuple(self, project, gen) -> TrackedDataFrame:
        """``json_tuple(doc, 'f1', 'f2', …)``: exactly one row per input row (a row of nulls for a
        null or invalid document), so a select, not a flatten: Spark's own Generate over the
        annotated rows, each field column built from the document's paths (A: those paths)."""
        child = self.run(seq(gen.children())[0])
        logical = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans.logical")
        plan = analyzed(child.annotated)
        new_gen = logical.Generate(gen.generator(), self.seq_of([]), gen.outer(), gen.qualifier(),
                                   gen.generatorOutput(), plan)
        hidden = [a for a in seq(plan.output()) if is_hidden(a.name())]
        items = seq(project.projectList())
        new = self.frame(logical.Project(self.seq_of(items + hidden), new_gen))
        attrs = attr_map([plan])
        doc = list(maximal_paths(gen.generator(), attrs))
        fields = {a.exprId().id(): doc for a in seq(gen.generatorOutput())}
        accessed = dict.fromkeys([p for _, p in doc] + [p for i in items for _, p in maximal_paths(i, attrs)])
        manipulated = dict.fromkeys(m for i, dst in zip(items, output_paths(items), strict=True)
                                    for m in out_pairs(i, dst, attrs, fields))
        op = OperatorProv(self.tracker._new_oid(), OpType.SELECT, "json_tuple", (OpInput(child.oid, tuple(accessed)),),
                          tuple(manipulated), detail=str(gen.simpleString(25)))
        return child._next(new, op)

    def _generate(self, project, gen) -> TrackedDataFrame:
        kind = cls(gen.generator())
        if kind == "Stack":
            return self._stack(project, gen)
        if kind == "JsonTuple":
            return self._json_tuple(project, gen)
        if kind not in ("Explode", "PosExplode", "Inline"):
            raise refuse(gen, f"generator {kind}: explode, posexplode and inline (and their _outer forms) "
                              "are tracked")
        child = self.run(seq(gen.children())[0])
        logical = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans.logical")

        def build(d: DataFrame, extra: list[str]) -> DataFrame:
            plan = analyzed(d)
            new_gen = logical.Generate(gen.generator(), self.seq_of([]), gen.outer(), gen.qualifier(),
                                       gen.generatorOutput(), plan)
            hidden = [a for a in seq(plan.output()) if a.name() in extra]
            return self.frame(logical.Project(self.seq_of(seq(project.projectList()) + hidden), new_gen))

        return project_apply(child, "select", build)

    def visit_Expand(self, node) -> TrackedDataFrame:
        """GROUPING SETS, ROLLUP, CUBE (and pivots/distinct aggregates Spark expands): every input
        row becomes one row per projection, a flatten over the array of the row's projections
        (``inline``): the n-th copy has position n, and every path the projections read maps to
        every output column (a computed array: docs/capture.md)."""
        child = self.child(node)
        projections, n = _expand_parts(node)
        keep = [column_of(self.spark, a) for a in seq(node.output().take(n))]
        structs = [F.struct(*[column_of(self.spark, e).alias(f"_{j}") for j, e in enumerate(p)])
                   for p in projections]
        rows = F.array(*structs)
        expanded = project_apply(child, "expand", lambda d, extra: d.select(*keep, F.inline(rows), *extra))
        self.expand_inputs[expanded.oid] = (child, projections, n)
        return expanded

    # ---- joins, unions, set operations ----------------------------------------------------------
    def visit_Join(self, node) -> TrackedDataFrame:
        cond = node.condition()
        if cls(node.joinType()) == "ExistenceJoin":  # EXISTS / IN under an OR: a semi join that keeps every row
            left, right = self.run(node.left()), self.run(node.right())
            on = column_of(self.spark, cond.get()) if cond.isDefined() else None
            return binary.existence(left, right, lambda lt, rt: self.replant(node, lt, rt), on)
        how = _JOINS.get(str(node.joinType().sql()))
        if how is None:
            raise refuse(node, f"join type {node.joinType().sql()}")
        left, right = self.run(node.left()), self.run(node.right())
        if how == "left" and not cond.isDefined() and self._compared(node.right()):
            return binary.compared_scalar(left, right)  # a Filter's uncorrelated scalar subquery
        on = column_of(self.spark, cond.get()) if cond.isDefined() else None
        if on is None and how == "inner":
            how = "cross"
        return binary.join(left, right, on, how)

    def visit_Union(self, node) -> TrackedDataFrame:
        kids = [self.run(c) for c in seq(node.children())]
        out = kids[0]
        for k in kids[1:]:
            out = binary.union(self.rebind(out, node), k, "union", by_name=False)
        return out

    def _compared(self, plan) -> bool:
        """Whether ``plan`` is a Filter's uncorrelated scalar subquery (its one value, noted in
        :attr:`compared` when the subquery was joined)."""
        value = seq(plan.output())
        return len(value) == 1 and value[0].exprId().id() in self.compared

    def _set_op(self, node, how: str) -> TrackedDataFrame:
        """INTERSECT / EXCEPT (DISTINCT): a left semi / anti join on null-safe equality of every
        column and a distinct. EXCEPT as Spark rewrites it (the distinct over the join); INTERSECT
        with the distinct first, which keeps the same rows: each left value then records the
        right copies that match it once, n_left + n_right ids per value, where a distinct over the
        join would record them for every left copy, n_left × n_right (docs/capture.md, "Logical
        operators")."""
        if node.isAll():
            return self._set_op_all(node, how)
        left, right = self.run(node.left()), self.run(node.right())
        ls, rs = seq(node.left().output()), seq(node.right().output())
        cond = None
        for a, b in zip(ls, rs, strict=True):
            eq = column_of(self.spark, a).eqNullSafe(column_of(self.spark, b))
            cond = eq if cond is None else cond & eq
        if how == "semi":
            return binary.join(self.rebind(grouping.deduplicate(left, "distinct", None), node.left()), right, cond,
                               how)
        joined = binary.join(left, right, cond, how)
        return grouping.deduplicate(joined, "distinct", None)

    def _set_op_all(self, node, how: str) -> TrackedDataFrame:
        """INTERSECT ALL / EXCEPT ALL: each side grouped by every column (a row value's copies
        are the members of its group), the groups joined on null-safe equality (inner; left
        for EXCEPT), then a flatten that repeats the row value min(left, right) times
        (left - right for EXCEPT). Every output copy of a value is built from all of the left
        side's copies of it; the right side's copies influence it (the join's condition)."""
        method = "intersectAll" if how == "semi" else "exceptAll"
        left, right = self.run(node.left()), self.run(node.right())
        ls, rs = seq(node.left().output()), seq(node.right().output())
        count = F.count(F.lit(1))
        gl = grouping.aggregate(left, method, tuple(column_of(self.spark, a) for a in ls), [count.alias("_strata_nl")])
        gr = grouping.aggregate(right, method, tuple(column_of(self.spark, b) for b in rs), [count.alias("_strata_nr")])
        cond = None
        for a, b in zip(ls, rs, strict=True):
            eq = column_of(self.spark, a).eqNullSafe(column_of(self.spark, b))
            cond = eq if cond is None else cond & eq
        joined = binary.join(gl, gr, cond, "inner" if how == "semi" else "left")
        nl, nr = joined.annotated["_strata_nl"], joined.annotated["_strata_nr"]
        copies = F.least(nl, nr) if how == "semi" else nl - F.coalesce(nr, F.lit(0))
        keep = [column_of(self.spark, a) for a in ls]
        flat = project_apply(joined, method, lambda d, extra: d.select(
            *keep, F.explode(F.array_repeat(F.lit(True), copies.cast("int"))).alias("_strata_copy"), *extra))
        return project_apply(flat, "select", lambda d, extra: d.select(*keep, *extra), explicit=True)

    def visit_Intersect(self, node) -> TrackedDataFrame:
        return self._set_op(node, "semi")

    def visit_Except(self, node) -> TrackedDataFrame:
        return self._set_op(node, "anti")

    # ---- grouping ---------------------------------------------------------------------------------
    def visit_Aggregate(self, node) -> TrackedDataFrame:
        child = self.child(node)
        keys = seq(node.groupingExpressions())
        key_ids = {k.exprId().id() for k in keys if cls(k) == "AttributeReference"}
        exprs = [e for e in seq(node.aggregateExpressions())
                 if not (cls(e) == "AttributeReference" and e.exprId().id() in key_ids)]
        # the tracked aggregation's visible output is the keys, then exprs: pick the node's
        # columns by position (the aggregation renamed them), then rebind names and ids
        key_pos = {k.exprId().id(): i for i, k in enumerate(keys) if cls(k) == "AttributeReference"}
        expr_pos = {e.exprId().id(): len(keys) + i for i, e in enumerate(exprs)}
        output = seq(node.output())
        order = [key_pos.get(a.exprId().id(), expr_pos.get(a.exprId().id())) for a in output]

        def paths(names: list[str]) -> list[str]:
            """The aggregation's output paths: the node's (a repeated name is ``name~n`` in the
            node's order, as the operators above see it), then its keys the node does not output."""
            rest = [i for i in range(len(names)) if i not in order]
            at: dict[int, str] = {}
            shown = column_paths(a.name() for a in output)  # as the operator above reads them
            for i, p in zip([*order, *rest], column_paths([*shown, *(names[i] for i in rest)]), strict=True):
                at.setdefault(i, p)  # a key output twice (SELECT k, k): its first column's path
            return [at.get(i, n) for i, n in enumerate(names)]

        # a SQL GROUP BY outputs the keys it lists whatever spark.sql.retainGroupColumns says (it
        # shapes the DataFrame API's groupBy().agg() only): the tracked aggregation keeps them
        with spark_conf(self.spark, "spark.sql.retainGroupColumns", "true"):
            out = grouping.aggregate(child, "groupBy.agg", tuple(column_of(self.spark, k) for k in keys),
                                     [column_of(self.spark, e) for e in exprs], paths=None if None in order else paths)
            if child.oid in self.expand_inputs:
                out = self._by_groups(node, keys, exprs, *self.expand_inputs[child.oid], child, out)
        plan = analyzed(out.annotated)
        attrs = seq(plan.output())
        visible = [a for a in attrs if not is_hidden(a.name())]
        if None in order or order != list(range(len(visible))):
            if None in order:
                raise refuse(node, "an output column capture cannot place")
            items = [visible[i] for i in order] + [a for a in attrs if is_hidden(a.name())]
            project = getattr(self.jvm, "org.apache.spark.sql.catalyst.plans.logical.Project")(self.seq_of(items), plan)
            out = self.same(out, self.frame(project))
        return out

    def _by_groups(self, node, keys: list, exprs: list, below: TrackedDataFrame, sets: list[list], n: int,
                   expanded: TrackedDataFrame, out: TrackedDataFrame) -> TrackedDataFrame:
        """The aggregation ``out`` over an expand (GROUPING SETS, ROLLUP, CUBE) computed in two
        levels where its values allow (:func:`_merged`): the same rows, values and stored members
        as ``out``, which copies every input row once per grouping set and collects the copies by
        all the grouping columns (TPC-DS Q22: 2.35M rows, 11.7M members shuffled with four string
        keys each). Here the expand's input ``below`` is grouped by the columns the grouping sets
        read, each group collecting its rows' stored columns and partial values (a sum, a count,
        a minimum, …); each group is copied once per set (not each row), and the copies of a set's
        group concatenate their lists, each member with its copy's position as the row-by-row
        expand gives it, and merge their partial values. ``out`` where it does not apply
        (docs/capture.md, "Grouping sets"). ``sets``: each projection's items after the ``n``
        columns the expand passes through (:func:`_expand_parts`)."""
        expand = seq(node.children())[0]
        width = len(sets[0])
        outs = [i for _, i in names_ids(expand.output())]
        at = {i: k for k, i in enumerate(outs[n:])}
        places = [at.get(k.exprId().id()) if cls(k) == "AttributeReference" else None for k in keys]
        ins = {i for _, i in names_ids(expand.child().output())}
        passed = set(outs[:n])
        if (sorted(p for p in places if p is not None) != list(range(width)) or len(places) != width
                or not all(cls(e) == "Literal" or (cls(e) == "AttributeReference" and e.exprId().id() in ins)
                           for p in sets for e in p)
                or not node.deterministic()):
            return out
        funcs: dict[str, object] = {}  # the aggregate expressions, by their text
        for e in exprs:
            if not _aggregates(e, funcs):
                return out
        parts = [_merged(self.spark, f, passed) for f in funcs.values()]
        if any(p is None for p in parts):
            return out
        partials = [c.alias(f"_p{i}_{j}") for i, (cs, _) in enumerate(parts) for j, c in enumerate(cs)]
        merges = [merge([f"_p{i}_{j}" for j in range(len(cs))]).alias(f"_v{i}")
                  for i, (cs, merge) in enumerate(parts)]
        sources = list({e.exprId().id(): e for p in sets for e in p if cls(e) == "AttributeReference"}.values())
        key_ids = {k.exprId().id(): f"_k{p}" for k, p in zip(keys, places, strict=True)}
        texts = list(funcs)

        def finish(merged: DataFrame) -> list:
            """The keys and values over the merged groups: each value's aggregate functions read
            their merged column, its grouping columns the group's key."""
            attrs = {a.name(): a for a in seq(analyzed(merged).output())}

            def merged_column(x):
                kind = cls(x)
                if kind == "AggregateExpression":
                    return attrs[f"_v{texts.index(x.toString())}"]
                if kind == "AttributeReference" and x.exprId().id() in key_ids:
                    return attrs[key_ids[x.exprId().id()]]
                return None

            cols = [column_of(self.spark, attrs[f"_k{p}"]).alias(k.name()) for k, p in zip(keys, places, strict=True)]
            return cols + [column_of(self.spark, _swap(e, merged_column, self.seq_of)) for e in exprs]

        made = grouping.by_groups(out, below, expanded, [column_of(self.spark, a) for a in sources],
                                  [[column_of(self.spark, e) for e in p] for p in sets], partials, merges,
                                  places, finish)
        return out if made is None else self.same(out, made)

    def visit_Distinct(self, node) -> TrackedDataFrame:
        return grouping.deduplicate(self.child(node), "distinct", None)

    def visit_Deduplicate(self, node) -> TrackedDataFrame:
        child = self.child(node)
        names = [k.name() for k in seq(node.keys())]
        if len(names) == len(child.visible()):
            return grouping.deduplicate(child, "distinct", None)
        return grouping.deduplicate(child, "dropDuplicates", names)


    # ---- opaque Python functions ---------------------------------------------------------------
    def _python_function(self, node):
        """``(function, schema)`` of a Python node, read back from the plan's pickled command."""

        fn = node.functionExpr().func()
        try:
            return CloudPickleSerializer().loads(bytes(fn.command().unsafeArray()))
        except Exception as e:  # noqa: BLE001 - any unpickling failure means: cannot run it here
            raise refuse(node, f"its Python function cannot be read back from the plan ({type(e).__name__})") from None

    def visit_MapInPandas(self, node) -> TrackedDataFrame:
        """``mapInPandas``: Pebble's map rule through the tracked ``mapInPandas`` (one output row
        per input row, in order; a function that drops or adds rows fails the task with a message)."""
        func, schema = self._python_function(node)
        return map_in_pandas(self.child(node), func, schema, bool(node.isBarrier()))

    def visit_MapInArrow(self, node) -> TrackedDataFrame:
        """``mapInArrow``: the map rule, as ``mapInPandas``."""
        func, schema = self._python_function(node)
        return map_in_arrow(self.child(node), func, schema, bool(node.isBarrier()))

    def visit_FlatMapGroupsInPandas(self, node) -> TrackedDataFrame:
        """``groupBy(...).applyInPandas``: the group's aggregation (opaque) and a flatten into the
        function's rows (capture/tracking/grouping.py ``apply_in_pandas``). Its child is the
        Project Spark puts the keys in front with; the function sees the columns under it."""
        func, schema = self._python_function(node)
        below = seq(node.children())[0]
        n = node.groupingAttributes().size()
        if cls(below) != "Project":
            raise refuse(node, f"a grouped map over {cls(below)} (Spark puts a Project of the keys under it)")
        child = self.child(below)
        keys = [column_of(self.spark, e) for e in seq(below.projectList())[:n]]
        return grouping.apply_in_pandas(child, keys, func, schema)

    def visit_FlatMapCoGroupsInPandas(self, node) -> TrackedDataFrame:
        raise refuse(node, "cogrouped applyInPandas: an output row's two groups come from two inputs; not yet "
                           "(apply the function to a join of the two sides under capture)")

    # ---- windows --------------------------------------------------------------------------------
    def visit_Window(self, node) -> TrackedDataFrame:
        """A window value is influenced by its partition's rows and built from its frame's
        (capture/auto/window.py; docs/capture.md, "Window")."""
        return window.translate(self, node, refuse)


def _refs(expr) -> set[int]:
    if cls(expr) == "AttributeReference":
        return {expr.exprId().id()}
    return {r for c in seq(expr.children()) for r in _refs(c)}


def _plain_ref(item, ids: set[int]) -> bool:
    """A project item that is (an alias of) one of the attributes ``ids``."""
    ref = item.child() if cls(item) == "Alias" else item
    return cls(ref) == "AttributeReference" and ref.exprId().id() in ids


def _correlated_scalar(expr) -> bool:
    """Whether an expression holds a scalar subquery that reads the outer query's columns."""
    if cls(expr) == "ScalarSubquery" and not expr.outerAttrs().isEmpty():
        return True
    return any(_correlated_scalar(c) for c in seq(expr.children()))


def _uncorrelated_scalars(expr) -> list:
    """The scalar subqueries of an expression that do not read the outer query's columns."""
    if cls(expr) == "ScalarSubquery" and expr.outerAttrs().isEmpty():
        return [expr]
    return [s for c in seq(expr.children()) for s in _uncorrelated_scalars(c)]


def _expand_parts(node) -> tuple[list[list], int]:
    """How many of an Expand's leading columns every projection passes through unchanged (Spark
    puts them first: they stay the child's own attributes), and each projection's items after
    them (the grouping columns and the grouping id, which differ from copy to copy). A passed
    column is found from Spark's text of each projection and of the output, one round trip each:
    an item whose text is its output attribute's (``name#id``) is that attribute, as in
    :func:`~capture.tracking.paths.project_output`; texts that do not split into the columns (a
    separator in a literal) are asked item by item."""
    jprojections = seq(node.projections())
    out, out_texts = names_ids_texts(node.output())
    width = len(out)
    ins = {i for _, i in names_ids(seq(node.children())[0].output())}
    item_texts = [texts(p, width) for p in jprojections]
    if out_texts is not None and None not in item_texts:
        def passed(k: int) -> bool:
            return all(t[k] == out_texts[k] for t in item_texts)
    else:
        items = [seq(p) for p in jprojections]

        def passed(k: int) -> bool:
            return all(cls(p[k]) == "AttributeReference" and p[k].exprId().id() == out[k][1] for p in items)
    n = 0
    while n < width and out[n][1] in ins and passed(n):
        n += 1
    return [seq(p.drop(n)) for p in jprojections], n


def _aggregates(expr, found: dict) -> bool:
    """Add the aggregate expressions of ``expr`` to ``found`` (by their text); False where one
    is DISTINCT or has a FILTER (its partial values would not merge)."""
    if cls(expr) == "AggregateExpression":
        found.setdefault(expr.toString(), expr)
        return not expr.isDistinct() and expr.filter().isEmpty()
    return all(_aggregates(c, found) for c in seq(expr.children()))


_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")


def _merged(spark, agg, passed: set[int]):
    """``(partials, merge)`` of aggregate expression ``agg`` where its value over a group is a
    merge of its values over parts of the group, computed exactly as Spark computes it: the
    partial columns over the rows of a part (Spark's own expression where it is one of them), and
    ``merge(names)``, the aggregate over the parts' partial columns ``names``, of ``agg``'s type.
    ``count`` sums its counts, an integral or decimal ``sum`` sums its sums (the decimal sums
    cast back to the type Spark gives the sum), ``min``/``max`` of their own, and ``avg`` of
    ``int`` and narrower values divides the summed sum by the summed count (Spark sums them as
    doubles, which hold these sums exactly up to 2^53). None for any other, or where the function
    reads a grouping column (its copies differ from set to set) rather than the expand's input."""
    fn = agg.aggregateFunction()
    kind = cls(fn)
    reads = [a.exprId().id() for c in seq(fn.children()) for a in seq(c.references().toSeq())]
    if not set(reads) <= passed:
        return None
    inner = [cls(c.dataType()).rstrip("$") for c in seq(fn.children())]  # a Scala object: `IntegerType$`
    typed = agg.dataType().simpleString()
    if kind == "Count" or (kind == "Sum" and inner and (inner[0] in _INTEGRAL or inner[0] == "DecimalType")):
        return [column_of(spark, agg)], lambda n: F.sum(n[0]).cast(typed)
    if kind in ("Min", "Max"):
        return [column_of(spark, agg)], lambda n: (F.min if kind == "Min" else F.max)(n[0])
    if kind == "Average" and inner and inner[0] in _INTEGRAL[:3]:
        x = column_of(spark, seq(fn.children())[0])
        return [F.sum(x), F.count(x)], lambda n: F.when(F.sum(n[1]) > 0, F.sum(n[0]).cast("double")
                                                        / F.sum(n[1]).cast("double")).cast(typed)
    return None


def _swap(expr, repl, seq_of):
    """``expr`` with every node ``repl`` gives a replacement for (an expression, else None)
    replaced, its other nodes rebuilt over their new children."""
    got = repl(expr)
    if got is not None:
        return got
    kids = seq(expr.children())
    new = [_swap(c, repl, seq_of) for c in kids]
    if all(a is b for a, b in zip(new, kids, strict=True)):
        return expr
    return expr.withNewChildren(seq_of(new))


def _find_class(expr, names: frozenset[str]) -> str | None:
    kind = cls(expr)
    if kind in names:
        return kind
    for c in seq(expr.children()):
        found = _find_class(c, names)
        if found:
            return found
    return None


def _without_ids(text: str) -> str:
    """A plan string without its attribute ids (``#12L``), which differ between runs."""
    return re.sub(r"#\d+L?", "", text)


def translate(tracker, df: DataFrame) -> TrackedDataFrame:
    """The tracked DataFrame computing ``df``'s rows with provenance (raises
    :class:`UnsupportedOperation` naming the first operator it cannot track; no job has run)."""
    with _no_call_sites():
        return _Walk(tracker, df.sparkSession).run(analyzed(df))


@contextmanager
def _no_call_sites() -> Iterator[None]:
    """PySpark sends the Python call site of every DataFrame and Column function to the JVM
    (``spark.python.sql.dataFrameDebugging.enabled``, on by default: Spark names it in an error's
    context), several py4j round trips a call, a sixth of the round trips of building a tracked
    plan. The plan capture builds is Strata's, not the program's: it is built without them (the
    program's own expressions, copied from its analyzed plan, keep the call sites they carry).
    PySpark reads the setting once into a module global; it is switched off here and restored."""
    import pyspark.errors.utils as pyspark_errors  # deferred: only this path changes it

    if not hasattr(pyspark_errors, "_enable_debugging_cache"):  # another PySpark: nothing to switch
        yield
        return
    before = pyspark_errors._enable_debugging_cache
    pyspark_errors._enable_debugging_cache = False
    try:
        yield
    finally:
        pyspark_errors._enable_debugging_cache = before
