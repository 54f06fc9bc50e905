"""Logical plan -> Spark DataFrame: the Spark wing's physical layer (iql/placement.py sends a
statement here when store/engine.py's rule picks Spark; a TRACE is traced on Spark too).

Every value the user wrote reaches Spark as a `F.lit(...)` Column, never as SQL text.
Provenance predicates are evaluated by `store.spark.semantics` from the bound side(s): a bound side is
a one-column DataFrame `id` of the element ids the relation holds so far.
Internally each binding column is named `<uid>__<name>` and each output `__o<i>`; the caller
renames the outputs (`DataFrame.toDF`) so user-chosen names never need parsing.
"""

from __future__ import annotations

import itertools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from iql import ast as A
from iql import plan as P
from iql.errors import IqlRuntimeError
from iql.physical import ExpressionCompiler, aggregate_calls, marks_needed, top
from iql.plan import cname, out_name
from store import schema as S
from store.engine import Engine
from store.spark import semantics as SEM
from store.spark.frames import local_frame

_CAST = {
    A.ValueType.STRING: "string",
    A.ValueType.INT: "bigint",
    A.ValueType.FLOAT: "double",
    A.ValueType.BOOL: "boolean",
    A.ValueType.INT_ARRAY: "array<int>",
}


def pairs(st, pred: A.ProvPredicate, left: DataFrame | None, right: DataFrame | None) -> DataFrame:
    """The (l, r) element pairs satisfying `pred`, restricted to the given id sets."""
    if pred.kind is A.ProvKind.UNDER:
        df = SEM.under(st, lower=left, upper=right)
    elif pred.kind is A.ProvKind.FEEDS:
        df = SEM.feeds(st, data=left, process=right)
    elif pred.kind is A.ProvKind.EMITS:
        df = SEM.emits(st, process=left, data=right)
    else:
        df = SEM.influences(st, pred.depth, src=left, dst=right)
    return df.toDF("l", "r")


class SparkExecutor(ExpressionCompiler):
    name = "spark executor"

    """Runs plans against one store; `domains` bind outer aliases of correlated subqueries."""

    def __init__(self, st) -> None:
        self.st = st
        self._names = itertools.count()

    def fresh(self, prefix: str = "__m") -> str:
        return f"{prefix}{next(self._names)}"

    # ------------------------------------------------------------------ queries
    def query(self, plan: P.QueryPlan, domains: dict[str, DataFrame] | None = None) -> DataFrame:
        """The plan's rows with internal output names `__o0..` (keys first for subqueries)."""
        return self.visit(plan.root, domains or {})

    def visit_Scan(self, scan: P.Scan, domains) -> DataFrame:
        src = scan.source
        v = self.st.table(S.VERTICES)
        if src.type_key is not None:
            v = v.filter(F.col(S.TYPE) == F.lit(src.type_key))
        elif src.kind is not None:
            v = v.filter(F.col(S.KIND) == F.lit(src.kind))
        if scan.ids is not None:
            v = v.filter(F.col(S.ID).isin([F.lit(i) for i in scan.ids]))
        if scan.outer:
            v = v.join(domains[src.uid], S.ID, "left_semi")
        cols = [F.col(S.ID).alias(cname(src.uid, "id"))]
        for attr in scan.attributes:
            vtype = src.attribute(attr)
            cols.append(F.col(S.ATTRS)[F.lit(attr)].cast(_CAST[vtype]).alias(cname(src.uid, attr)))
        df = v.select(*cols)
        for f in scan.filters:
            df = df.filter(self.column(f, []))
        return df

    def visit_TraceScan(self, scan: P.TraceScan, domains) -> DataFrame:
        from capture.tracing import trace, trace_rows  # deferred: it loads lark, numpy, pyarrow

        t = scan.trace
        rows = trace_rows(self.st, trace(self.st, t.run, t.pattern, t.limit, engine=Engine.SPARK),
                          where="source" in scan.columns, values="value" in scan.columns)
        schema = ", ".join(f"{cname(scan.source.uid, name)} {_CAST[vtype]}"
                           for name, vtype in A.TRACE_COLUMNS)
        df = local_frame(self.st.spark, rows, schema)
        for f in scan.filters:
            df = df.filter(self.column(f, []))
        return df

    def visit_CrossJoin(self, rel: P.CrossJoin, domains) -> DataFrame:
        return self.visit(rel.left, domains).crossJoin(self.visit(rel.right, domains))

    def visit_ProvJoin(self, rel: P.ProvJoin, domains) -> DataFrame:
        df = self.visit(rel.input, domains)
        if not isinstance(rel.input, P.Scan):
            df = materialize(df)
        pred = rel.pred
        lcol, rcol = cname(pred.left.uid, "id"), cname(pred.right.uid, "id")
        if rel.new is None:
            found = self._pairs_for(df, pred, None)
            if lcol == rcol:
                return df.join(found.filter(F.col("l") == F.col("r")).select(F.col("l").alias(lcol)), lcol)
            return df.join(found.select(F.col("l").alias(lcol), F.col("r").alias(rcol)), [lcol, rcol])
        new_df = self.visit(rel.new, domains)
        bound_new = rel.bound_right if rel.new.source.uid == pred.right.uid else rel.bound_left
        found = self._pairs_for(df, pred, new_df if bound_new else None)
        found = found.select(F.col("l").alias(lcol), F.col("r").alias(rcol))
        joined_col = lcol if rel.new.source.uid == pred.right.uid else rcol
        new_col = rcol if joined_col == lcol else lcol
        return df.join(found, joined_col).join(new_df, new_col)

    def _pairs_for(self, df: DataFrame, pred: A.ProvPredicate, new_df: DataFrame | None) -> DataFrame:
        """Pairs of `pred` with each side bound to the ids in `df` (or `new_df` for a new side)."""

        def ids(uid: str) -> DataFrame | None:
            col = cname(uid, "id")
            if col in df.columns:
                return df.select(F.col(col).alias(S.ID)).distinct()
            if new_df is not None:
                return new_df.select(F.col(col).alias(S.ID)).distinct()
            return None

        # store.spark.semantics returns each pair once, so no distinct() here.
        return pairs(self.st, pred, ids(pred.left.uid), ids(pred.right.uid))

    def visit_Filter(self, rel: P.Filter, domains) -> DataFrame:
        df = self.visit(rel.input, domains)
        df, subst = self.prepare(df, rel.predicate, domains)
        cols = [c for c in df.columns if not c.startswith("__m")]
        return df.filter(self.column(rel.predicate, subst)).select(*cols)

    def visit_Project(self, rel: P.Project, domains) -> DataFrame:
        df = self.visit(rel.input, domains)
        subst: list = []
        for o in rel.outputs:
            df, more = self.prepare(df, o.expr, domains)
            subst += more
        df = df.select(*[self.column(o.expr, subst).alias(out_name(i)) for i, o in enumerate(rel.outputs)])
        return df.distinct() if rel.distinct else df

    def visit_Aggregate(self, rel: P.Aggregate, domains) -> DataFrame:
        df = self.visit(rel.input, domains)
        subst: list = []
        for expr in [*rel.keys, *(o.expr for o in rel.outputs), rel.having]:
            if expr is not None:
                df, more = self.prepare(df, expr, domains)
                subst += more
        keys = [(k, f"__g{i}") for i, k in enumerate(rel.keys)]
        calls = aggregate_calls(rel)
        aggs = [self.aggregate(c, subst).alias(f"__a{i}") for i, c in enumerate(calls)]
        grouped = df.groupBy(*[self.column(k, subst).alias(n) for k, n in keys])
        out = grouped.agg(*aggs) if aggs else grouped.agg(F.count(F.lit(1)).alias("__count"))
        post = [(k, F.col(n)) for k, n in keys] + [(c, F.col(f"__a{i}")) for i, c in enumerate(calls)]
        if rel.having is not None:
            out = out.filter(self.column(rel.having, post))
        return out.select(*[self.column(o.expr, post).alias(out_name(i)) for i, o in enumerate(rel.outputs)])

    def aggregate(self, call: A.BoundCall, subst) -> Column:
        if call.arg is None:
            return F.count(F.lit(1))
        arg = self.column(call.arg, subst)
        if call.func is A.AggFunc.COUNT:
            return F.count_distinct(arg) if call.distinct else F.count(arg)
        if call.func is A.AggFunc.SUM:
            return F.sum_distinct(arg) if call.distinct else F.sum(arg)
        if call.func is A.AggFunc.AVG:
            return F.avg(arg)
        return F.min(arg) if call.func is A.AggFunc.MIN else F.max(arg)

    def visit_Sort(self, rel: P.Sort, domains) -> DataFrame:
        df = self.visit(rel.input, domains)
        cols = []
        for key in rel.keys:
            col = F.col(out_name(key.position)) if key.position is not None else self.column(key.expr, [])
            cols.append(col.desc_nulls_last() if key.descending else col.asc_nulls_first())
        return df.orderBy(*cols)

    def visit_Limit(self, rel: P.Limit, domains) -> DataFrame:
        return self.visit(rel.input, domains).limit(rel.count)

    # ------------------------------------------------------------------ expressions
    def prepare(self, df: DataFrame, expr, domains) -> tuple[DataFrame, list]:
        """Add a column for each provenance predicate and subquery inside `expr`.

        Returns the widened DataFrame and (node, Column) substitutions for `column()`.
        """
        subst: list = []
        if marks_needed(expr):
            df = materialize(df)
        for node in A.walk(expr):
            if isinstance(node, A.ProvPredicate):
                df, col = self._mark_pred(df, node)
            elif isinstance(node, P.SubqueryExists):
                df, col = self._mark_exists(df, node, domains)
            elif isinstance(node, P.SubqueryValue):
                df, col = self._mark_value(df, node, domains)
            else:
                continue
            subst.append((node, col))
        return df, subst

    def _mark_pred(self, df, pred: A.ProvPredicate):
        m = self.fresh()
        lcol, rcol = cname(pred.left.uid, "id"), cname(pred.right.uid, "id")
        found = self._pairs_for(df, pred, None)
        if lcol == rcol:
            marks = found.filter(F.col("l") == F.col("r")).select(F.col("l").alias(lcol), F.lit(True).alias(m))
            return df.join(marks, lcol, "left"), F.coalesce(F.col(m), F.lit(False))
        marks = found.select(F.col("l").alias(lcol), F.col("r").alias(rcol), F.lit(True).alias(m))
        return df.join(marks, [lcol, rcol], "left"), F.coalesce(F.col(m), F.lit(False))

    def _sub_frame(self, df, keys, plan: P.QueryPlan, domains):
        sub_domains = dict(domains)
        for key in keys:
            sub_domains[key.uid] = df.select(F.col(cname(key.uid, "id")).alias(S.ID)).distinct()
        sub = self.query(plan, sub_domains)
        names = [cname(k.uid, "id") for k in keys]
        return sub, names

    def _mark_exists(self, df, node: P.SubqueryExists, domains):
        m = self.fresh()
        sub, names = self._sub_frame(df, node.keys, node.plan, domains)
        if not names:
            marks = sub.limit(1).select(F.lit(True).alias(m))
            return df.join(marks, F.lit(True), "left"), F.coalesce(F.col(m), F.lit(False))
        marks = sub.toDF(*names).withColumn(m, F.lit(True))
        return df.join(marks, names, "left"), F.coalesce(F.col(m), F.lit(False))

    def _mark_value(self, df, node: P.SubqueryValue, domains):
        m = self.fresh()
        sub, names = self._sub_frame(df, node.keys, node.plan, domains)
        sub = sub.toDF(*names, m)
        if not isinstance(top(node.plan.root), P.Aggregate):
            dupes = sub.groupBy(*names).count().filter(F.col("count") > 1).limit(1).count() if names \
                else max(0, sub.limit(2).count() - 1)
            if dupes:
                raise IqlRuntimeError.at(
                    "a subquery used as a value returned more than one row", node.span, None,
                    "aggregate it (max, min, ...) or make its WHERE pick one element",
                )
        col = F.coalesce(F.col(m), F.lit(0)) if node.is_count else F.col(m)
        if not names:
            return df.join(sub.limit(1), F.lit(True), "left"), col
        return df.join(sub, names, "left"), col

    def lit(self, value):
        return F.lit(value)

    def col(self, name: str):
        return F.col(name)

    def null_test(self, e, negated: bool):
        return e.isNotNull() if negated else e.isNull()

    def in_list(self, e, items, negated: bool):
        test = e.isin(items)
        return ~test if negated else test


def materialize(df: DataFrame) -> DataFrame:
    """Compute `df` once and cut its lineage: a relation feeds both the bound side of the next
    predicate and the join with its pairs, and would otherwise be recomputed for each (and
    exponentially often along a chain of predicates). Local checkpoints need no cleanup."""
    return df.localCheckpoint(eager=True)


def execute(st, plan: P.QueryPlan) -> DataFrame:
    """Run a top-level plan; the result has the query's column names."""
    return SparkExecutor(st).query(plan).toDF(*plan.columns)
