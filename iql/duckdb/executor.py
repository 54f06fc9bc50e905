"""Logical plan -> DuckDB relations: the DuckDB wing's physical layer (iql/placement.py sends a
statement here when store/engine.py's rule picks the local engine; a TRACE is traced on the
driver too).

The same plans as iql/spark/executor.py (Spark), the same internal names (`<uid>__<name>` for binding
columns, `__o<i>` for outputs), the same semantics; only the physical operators differ. Tables
are DuckDB relations over the store's committed Parquet files (store/duckdb/tables.py); every value
the user wrote reaches DuckDB as a `ConstantExpression`, never as SQL text. Provenance predicates
are answered on the driver by store/duckdb/semantics.py from the ids of the bound side(s), and
their pairs joined back as a relation.
"""

from __future__ import annotations

import itertools
import sys

import duckdb
from duckdb import CoalesceOperator, ColumnExpression, ConstantExpression, FunctionExpression

from iql import ast as A
from iql import plan as P
from iql.errors import IqlRuntimeError
from iql.physical import ExpressionCompiler, aggregate_calls, marks_needed, top
from iql.plan import cname, out_name
from store import schema as S
from store.duckdb import semantics as LS
from store.engine import Engine, temp_table

_TYPES = {
    A.ValueType.STRING: "VARCHAR",
    A.ValueType.INT: "BIGINT",
    A.ValueType.FLOAT: "DOUBLE",
    A.ValueType.BOOL: "BOOLEAN",
    A.ValueType.INT_ARRAY: "INTEGER[]",
}

_AGG = {A.AggFunc.COUNT: "count", A.AggFunc.SUM: "sum", A.AggFunc.AVG: "avg",
        A.AggFunc.MIN: "min", A.AggFunc.MAX: "max"}

_KIND = {A.ProvKind.UNDER: LS.UNDER, A.ProvKind.FEEDS: LS.FEEDS, A.ProvKind.EMITS: LS.EMITS,
         A.ProvKind.INFLUENCES: LS.INFLUENCES}


def col(name: str):
    return ColumnExpression(name)


def lit(value):
    return ConstantExpression(value)


_TABLES = itertools.count()  # names of the tables executors make on a store's connection


def _quoted(name: str) -> str:
    """An identifier for DuckDB SQL text (plan-made names: `__o0`, `<uid>__id`)."""
    return '"' + name.replace('"', '""') + '"'


class Held:
    """A relation whose rows have been computed once: into a pyarrow Table (`table`), or into a
    table of the connection's memory (`table` None)."""

    def __init__(self, rel, table=None) -> None:
        self.rel = rel
        self.table = table

    @property
    def columns(self) -> list[str]:
        return self.rel.columns

    def ids(self, name: str) -> list[str]:
        """The distinct non-null values of column `name`."""
        if self.table is not None:
            return [v for v in set(self.table.column(name).to_pylist()) if v is not None]
        c = ColumnExpression(name)
        return [r[0] for r in self.rel.filter(c.isnotnull()).project(c).distinct().fetchall()]


class DuckDBExecutor(ExpressionCompiler):
    """Runs plans against one store's committed version with DuckDB."""

    name = "duckdb executor"

    def __init__(self, st) -> None:
        self.st = st
        self.tables = st.local()
        self.con = self.tables.con
        self._names = itertools.count()
        # Computed rows go back to DuckDB through pyarrow (the faster hand-off) once the process
        # has it loaded or asks its second question on this version (a REPL, a notebook, a
        # service); a process's first question uses tables of the connection's memory instead, so
        # a one-question `strata query` never pays pyarrow's import (a tenth of a second).
        self.arrow = self.hands_off_through_arrow(self.tables)
        self.tables.answered += 1
        self._held: dict[int, tuple] = {}  # id(relation) -> (relation, its Arrow rows or None)
        self._temp: list[str] = []  # tables this executor made (dropped by `close`)

    @staticmethod
    def hands_off_through_arrow(tables) -> bool:
        """Whether computed rows go back to DuckDB through pyarrow (see `__init__`)."""
        return "pyarrow" in sys.modules or tables.answered > 0

    def fresh(self, prefix: str = "__m") -> str:
        return f"{prefix}{next(self._names)}"

    def frame(self, columns: dict[str, list], types: dict[str, A.ValueType]):
        """A relation of Python values (columns of equal length), each column a list parameter
        unnested (the values never become SQL text)."""
        if self.arrow:
            import pyarrow as pa  # deferred: see self.arrow

            arrow = {A.ValueType.STRING: pa.string(), A.ValueType.INT: pa.int64(), A.ValueType.FLOAT: pa.float64(),
                     A.ValueType.BOOL: pa.bool_(), A.ValueType.INT_ARRAY: pa.list_(pa.int32())}
            schema = pa.schema([(name, arrow[types[name]]) for name in columns])
            return self.con.from_arrow(pa.table(columns, schema=schema))
        params = {self.fresh("p"): values for values in columns.values()}
        select = ", ".join(f"unnest(${p}::{_TYPES[types[name]]}[]) AS {_quoted(name)}"
                           for p, name in zip(params, columns, strict=True))
        return self.con.sql(f"SELECT {select}", params=params)

    def close(self) -> None:
        """Drop the tables this executor computed (the scans a held store keeps stay)."""
        for name in self._temp:
            self.con.execute(f"DROP TABLE IF EXISTS {_quoted(name)}")
        self._temp.clear()

    # ------------------------------------------------------------------ queries
    def query(self, plan: P.QueryPlan, domains=None):
        """The plan's relation with internal output names `__o0..` (keys first for subqueries)."""
        return self.visit(plan.root, domains or {})

    def visit_Scan(self, scan: P.Scan, domains):
        key = None if scan.outer or not self.tables.held(S.VERTICES) else scan
        cached = self.tables.scans.get(key) if key is not None else None
        if cached is not None:
            return self._known(cached)
        df = self._scan(scan, domains)
        if key is not None:
            # A store held in memory keeps each scan's rows for its later questions (one bind to
            # reuse them, instead of a filter and a projection over the vertices).
            if self.arrow:
                table = self.tables.scans[key] = df.to_arrow_table()
            else:
                table = self.tables.scans[key] = f"__scan{next(_TABLES)}"
                temp_table(self.con, table, df)
            return self._known(table)
        return df

    def _known(self, table):
        """A relation over rows already computed (a pyarrow Table, or the name of a table of the
        connection), remembered so that `hold` needs no run."""
        rows = None if isinstance(table, str) else table
        rel = self.con.table(table) if rows is None else self.con.from_arrow(rows)
        self._held[id(rel)] = (rel, rows)
        return rel

    def _scan(self, scan: P.Scan, domains):
        src = scan.source
        v = self.tables.relation(S.VERTICES)
        keep = []  # one filter of every condition on the vertices (each relational step costs a bind)
        if src.type_key is not None:
            keep.append(col(S.TYPE) == lit(src.type_key))
        elif src.kind is not None:
            keep.append(col(S.KIND) == lit(src.kind))
        if scan.ids is not None:
            keep.append(col(S.ID).isin(*[lit(i) for i in scan.ids]))
        if keep:
            v = v.filter(_all(keep))
        if scan.outer:
            v = v.join(domains[src.uid], S.ID, how="semi")
        cols = [col(S.ID).alias(cname(src.uid, "id"))]
        for attr in scan.attributes:
            value = FunctionExpression("map_extract_value", col(S.ATTRS), lit(attr))
            cols.append(value.cast(duckdb.sqltype(_TYPES[src.attribute(attr)])).alias(cname(src.uid, attr)))
        df = v.project(*cols)
        if scan.filters:
            df = df.filter(_all([self.column(f, []) for f in scan.filters]))
        return df

    def visit_TraceScan(self, scan: P.TraceScan, domains):
        from capture.tracing import trace, trace_table  # deferred: it loads lark, numpy, pyarrow

        t = scan.trace
        table = trace_table(self.st, trace(self.st, t.run, t.pattern, t.limit, engine=Engine.LOCAL),
                            where="source" in scan.columns, values="value" in scan.columns)
        df = self.con.from_arrow(table.rename_columns([cname(scan.source.uid, name) for name, _ in A.TRACE_COLUMNS]))
        if scan.filters:
            df = df.filter(_all([self.column(f, []) for f in scan.filters]))
        return df

    def visit_CrossJoin(self, rel: P.CrossJoin, domains):
        return self.visit(rel.left, domains).cross(self.visit(rel.right, domains))

    def visit_ProvJoin(self, rel: P.ProvJoin, domains):
        held = self.hold(self.visit(rel.input, domains))
        df = held.rel
        pred = rel.pred
        lcol, rcol = cname(pred.left.uid, "id"), cname(pred.right.uid, "id")
        if rel.new is None:
            found = self._pairs_for([held], pred)
            if lcol == rcol:
                same_id = [a for a, b in found if a == b]
                return df.join(self.frame({lcol: same_id}, {lcol: A.ValueType.STRING}), lcol)
            return df.join(self._pair_frame(found, lcol, rcol), [lcol, rcol])
        new = self.hold(self.visit(rel.new, domains))
        bound_new = rel.bound_right if rel.new.source.uid == pred.right.uid else rel.bound_left
        found = self._pair_frame(self._pairs_for([held, new] if bound_new else [held], pred), lcol, rcol)
        joined_col = lcol if rel.new.source.uid == pred.right.uid else rcol
        new_col = rcol if joined_col == lcol else lcol
        return df.join(found, joined_col).join(new.rel, new_col)

    def _pair_frame(self, found, lcol: str, rcol: str):
        string = A.ValueType.STRING
        return self.frame({lcol: [a for a, _ in found], rcol: [b for _, b in found]}, {lcol: string, rcol: string})

    def hold(self, df) -> Held:
        """Run `df` once: a relation over its rows (for the bound sides' ids)."""
        known = self._held.get(id(df))
        if known is not None and known[0] is df:
            return Held(df, known[1])
        if self.arrow:
            rows = df.to_arrow_table()
            return Held(self._known(rows), rows)
        table = f"__held{next(_TABLES)}"
        temp_table(self.con, table, df)
        self._temp.append(table)
        return Held(self._known(table))

    def _pairs_for(self, held: list[Held], pred: A.ProvPredicate) -> list[tuple[str, str]]:
        """Pairs of `pred` with each side bound to the ids of the first held rows that bind it."""

        def ids(uid: str):
            name = cname(uid, "id")
            for h in held:
                if name in h.columns:
                    return h.ids(name)
            return None

        depth = pred.depth if pred.kind is A.ProvKind.INFLUENCES else None
        return LS.pairs(self.st, _KIND[pred.kind], depth, ids(pred.left.uid), ids(pred.right.uid))

    def visit_Filter(self, rel: P.Filter, domains):
        df = self.visit(rel.input, domains)
        df, subst = self.prepare(df, rel.predicate, domains)
        keep = [c for c in df.columns if not c.startswith("__m")]
        return df.filter(self.column(rel.predicate, subst)).project(*[col(c) for c in keep])

    def visit_Project(self, rel: P.Project, domains):
        df = self.visit(rel.input, domains)
        subst: list = []
        for o in rel.outputs:
            df, more = self.prepare(df, o.expr, domains)
            subst += more
        outputs = [self.column(o.expr, subst).alias(out_name(i)) for i, o in enumerate(rel.outputs)]
        # An uncorrelated EXISTS subquery outputs nothing; DuckDB needs a column to count rows by.
        df = df.project(*outputs) if outputs else df.project(lit(True).alias("__rows"))
        return df.distinct() if rel.distinct else df

    def visit_Aggregate(self, rel: P.Aggregate, domains):
        df = self.visit(rel.input, domains)
        subst: list = []
        for expr in [*rel.keys, *(o.expr for o in rel.outputs), rel.having]:
            if expr is not None:
                df, more = self.prepare(df, expr, domains)
                subst += more
        calls = aggregate_calls(rel)
        # Keys and aggregate arguments become internal columns first, so the aggregate list
        # names only those (a list of our own identifiers, no value of the user's).
        pre = [self.column(k, subst).alias(f"__g{i}") for i, k in enumerate(rel.keys)]
        pre += [self.column(c.arg, subst).alias(f"__x{i}") for i, c in enumerate(calls) if c.arg is not None]
        if not pre:
            pre = [lit(1).alias("__one")]
        inner = df.project(*pre)
        keys = [f"__g{i}" for i in range(len(rel.keys))]
        aggs = [_aggregate_text(c, i) for i, c in enumerate(calls)]
        out = inner.aggregate(", ".join(keys + aggs) if aggs or keys else "count(*) AS __count", ", ".join(keys))
        post = [(k, col(f"__g{i}")) for i, k in enumerate(rel.keys)]
        post += [(c, col(f"__a{i}")) for i, c in enumerate(calls)]
        if rel.having is not None:
            out = out.filter(self.column(rel.having, post))
        return out.project(*[self.column(o.expr, post).alias(out_name(i)) for i, o in enumerate(rel.outputs)])

    def visit_Sort(self, rel: P.Sort, domains):
        df = self.visit(rel.input, domains)
        keys = []
        for key in rel.keys:
            e = col(out_name(key.position)) if key.position is not None else self.column(key.expr, [])
            keys.append(e.desc().nulls_last() if key.descending else e.asc().nulls_first())
        return df.sort(*keys)

    def visit_Limit(self, rel: P.Limit, domains):
        return self.visit(rel.input, domains).limit(rel.count)

    # ------------------------------------------------------------------ expressions
    def prepare(self, df, expr, domains):
        """Add a column for each provenance predicate and subquery inside `expr`.

        Returns the widened relation and (node, expression) substitutions for `column()`.
        """
        subst: list = []
        if not marks_needed(expr):
            return df, subst
        held = self.hold(df)
        df = held.rel
        for node in A.walk(expr):
            if isinstance(node, A.ProvPredicate):
                df, e = self._mark_pred(df, held, node)
            elif isinstance(node, P.SubqueryExists):
                df, e = self._mark_exists(df, held, node, domains)
            elif isinstance(node, P.SubqueryValue):
                df, e = self._mark_value(df, held, node, domains)
            else:
                continue
            subst.append((node, e))
        return df, subst

    def _marked(self, df, marks, names: list[str], m: str):
        """`df` left-joined with `marks` (columns `names` + `m`); the mark is false when absent."""
        joined = df.join(marks, names if names else lit(True), how="left")
        return joined, CoalesceOperator(col(m), lit(False))

    def _mark_pred(self, df, held: Held, pred: A.ProvPredicate):
        m = self.fresh()
        lcol, rcol = cname(pred.left.uid, "id"), cname(pred.right.uid, "id")
        found = self._pairs_for([held], pred)
        string, boolean = A.ValueType.STRING, A.ValueType.BOOL
        if lcol == rcol:
            hits = [a for a, b in found if a == b]
            marks = self.frame({lcol: hits, m: [True] * len(hits)}, {lcol: string, m: boolean})
            return self._marked(df, marks, [lcol], m)
        marks = self.frame({lcol: [a for a, _ in found], rcol: [b for _, b in found], m: [True] * len(found)},
                           {lcol: string, rcol: string, m: boolean})
        return self._marked(df, marks, [lcol, rcol], m)

    def _sub_frame(self, held: Held, keys, plan: P.QueryPlan, domains):
        sub_domains = dict(domains)
        for key in keys:
            ids = held.ids(cname(key.uid, "id"))
            sub_domains[key.uid] = self.frame({S.ID: ids}, {S.ID: A.ValueType.STRING})
        sub = self.query(plan, sub_domains)
        names = [cname(k.uid, "id") for k in keys]
        return sub, names

    def _mark_exists(self, df, held: Held, node: P.SubqueryExists, domains):
        m = self.fresh()
        sub, names = self._sub_frame(held, node.keys, node.plan, domains)
        if not names:
            marks = sub.limit(1).project(lit(True).alias(m))
            return self._marked(df, marks, [], m)
        renamed = [col(c).alias(n) for c, n in zip(sub.columns, names, strict=True)]
        marks = sub.project(*renamed, lit(True).alias(m)).distinct()
        return self._marked(df, marks, names, m)

    def _mark_value(self, df, held: Held, node: P.SubqueryValue, domains):
        m = self.fresh()
        sub, names = self._sub_frame(held, node.keys, node.plan, domains)
        sub = sub.project(*[col(c).alias(n) for c, n in zip(sub.columns, [*names, m], strict=True)]).materialize()
        if not isinstance(top(node.plan.root), P.Aggregate):
            if names:
                dupes = sub.aggregate("count(*) AS n", ", ".join(names)).filter(col("n") > lit(1)).limit(1)
                many = bool(dupes.fetchall())
            else:
                many = len(sub.limit(2).fetchall()) > 1
            if many:
                raise IqlRuntimeError.at(
                    "a subquery used as a value returned more than one row", node.span, None,
                    "aggregate it (max, min, ...) or make its WHERE pick one element",
                )
        value = CoalesceOperator(col(m), lit(0)) if node.is_count else col(m)
        joined = df.join(sub.limit(1) if not names else sub, names if names else lit(True), how="left")
        return joined, value

    def lit(self, value):
        return lit(value)

    def col(self, name: str):
        return col(name)

    def null_test(self, e, negated: bool):
        return e.isnotnull() if negated else e.isnull()

    def in_list(self, e, items, negated: bool):
        return e.isnotin(*items) if negated else e.isin(*items)


def _all(conditions):
    out = conditions[0]
    for c in conditions[1:]:
        out = out & c
    return out


def _aggregate_text(call: A.BoundCall, i: int) -> str:
    """One aggregate over internal columns, e.g. `count(DISTINCT __x2) AS __a2` (identifiers only)."""
    if call.arg is None:
        return f"count(*) AS __a{i}"
    distinct = "DISTINCT " if call.distinct and call.func in (A.AggFunc.COUNT, A.AggFunc.SUM) else ""
    text = f"{_AGG[call.func]}({distinct}__x{i})"
    if call.func is A.AggFunc.SUM:
        text = f"CAST({text} AS {'DOUBLE' if call.vtype is A.ValueType.FLOAT else 'BIGINT'})"
    return f"{text} AS __a{i}"


def execute(st, plan: P.QueryPlan) -> list[tuple]:
    """Run a top-level plan; the rows in the query's column order."""
    executor = DuckDBExecutor(st)
    try:
        return executor.query(plan).fetchall()
    finally:
        executor.close()
