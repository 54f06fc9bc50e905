"""Where one IQL statement runs, decided once: the store's statistics, the rows the plan reads,
the engine store/engine.py's rule picks for it (`choose`: EXPLAIN's first line), and the plan run
on that engine's wing (`execute`): iql/duckdb/ (DuckDB in this process) or iql/spark/ (Spark).
The choice is passed down to the wing, which passes it on to `capture.tracing` for a TRACE:
nothing below asks again.

`reads(plan, stats, store_rows)` estimates the rows a plan reads after pruning:

- each scan reads the vertices of its type (the planner's estimate; all vertices if unknown);
- a provenance predicate whose bound side is small (at most `SCOPED_IDS` ids) reads only its
  scopes when the store has current influence scopes and the predicate is `under` or
  `influences`: counted as nothing beyond the scans;
- any other predicate reads the containment, complex-element and edge tables whole
  (`store_rows`), counted once however many such predicates there are;
- a TRACE scan reads its run's result items (`capture.tracing.trace_reads`); a run the driver
  cannot read (a result layout or column type the local trace does not read) sends the whole
  statement to Spark under `auto`.
"""

from __future__ import annotations

import weakref

from iql import ast as A
from iql import plan as P
from iql.planner import Stats
from store import schema as S
from store.duckdb.semantics import SCOPED_IDS, store_rows
from store.engine import Choice, Engine
from store.index.scopes import current as scopes_current

_STATS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def stats(st):
    """Vertex counts per type and kind, and whether a component index exists and is current:
    what the planner orders scans by. Read once per store version (DuckDB on a local store, one
    small Spark job otherwise), then remembered."""
    key = (st.root, st.version)
    cached = _STATS.get(st)
    if cached is not None and cached[0] == key:
        return cached[1]
    found = _stats(st)
    _STATS[st] = (key, found)
    return found


def _stats(st):

    if st.storage.on_this_machine:
        counts = st.local().relation(S.VERTICES).aggregate(
            f"{S.TYPE}, {S.KIND}, count(*) AS n", f"{S.TYPE}, {S.KIND}").fetchall()
    else:
        rows = st.table(S.VERTICES).groupBy(S.TYPE, S.KIND).count().collect()
        counts = [(r[S.TYPE], r[S.KIND], r["count"]) for r in rows]
    types: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for type_key, kind, n in counts:
        types[type_key] = types.get(type_key, 0) + n
        kinds[kind] = kinds.get(kind, 0) + n
    has_index = bool(st.meta("index"))
    pruning = has_index and scopes_current(st)
    return Stats(types, kinds, has_index, pruning)


def _nodes(plan: P.QueryPlan):
    """Every node of a plan, subqueries' plans included (`Node.children()`); a ProvJoin's own
    predicate is left out, it is counted with its join."""
    stack: list[A.Node] = [plan.root]
    while stack:
        node = stack.pop()
        yield node
        children = node.children()
        if isinstance(node, P.ProvJoin):
            children = tuple(c for c in children if c is not node.pred)
        stack += children


def reads(plan: P.QueryPlan, stats, store_rows, trace_rows=lambda scan: 0) -> int:
    """Rows `plan` reads after pruning (module docstring). `store_rows()` is called only when a
    predicate cannot be pruned; `trace_rows(scan)` counts a TRACE scan."""
    total = 0
    unpruned = False
    for node in _nodes(plan):
        if isinstance(node, P.TraceScan):
            total += trace_rows(node)
        elif isinstance(node, P.Scan):
            n = stats.count(node.source)
            total += n if n is not None else sum(stats.kind_counts.values())
        elif isinstance(node, P.ProvJoin):
            unpruned |= not _pruned(node.pred, stats, _bound_size(node))
        elif isinstance(node, A.ProvPredicate):  # a predicate between two bound aliases
            unpruned |= not _pruned(node, stats, None)
    return total + (store_rows() if unpruned else 0)


def _bound_size(join: P.ProvJoin) -> int | None:
    """The estimated ids of the side a join's pairs are computed from: -1 when neither side
    is bound (the predicate runs over the whole store), None when unknown."""
    if join.new is None:
        return getattr(join.input, "estimate", None)
    new_is_right = join.new.source.uid == join.pred.right.uid
    input_bound, new_bound = ((join.bound_left, join.bound_right) if new_is_right
                              else (join.bound_right, join.bound_left))
    if input_bound:
        return getattr(join.input, "estimate", None)
    if new_bound:
        return join.new.estimate
    return -1


def _pruned(pred: A.ProvPredicate, stats, bound: int | None) -> bool:
    """True when the predicate reads only its bound side's scopes."""
    if not stats.pruning or pred.kind not in (A.ProvKind.UNDER, A.ProvKind.INFLUENCES) or bound == -1:
        return False
    return bound is None or bound <= SCOPED_IDS


def choose(st, plan: P.QueryPlan | None, stats) -> Choice:
    """The engine for `plan` on `st` (store/engine.py); `plan` None: a statement that reads nothing."""
    if st.engine is not Engine.AUTO or not st.storage.on_this_machine or st.cluster() or plan is None:
        return st.choose(None)

    traces: dict[str | None, int] = {}
    for node in _nodes(plan):
        if isinstance(node, P.TraceScan) and node.trace.run not in traces:
            from capture.tracing import trace_reads  # deferred: the tracing loads only for a TRACE

            n = trace_reads(st, node.trace.run)
            if n is None:
                return Choice(Engine.SPARK, "a TRACE of a run whose result the driver cannot read")
            traces[node.trace.run] = n
    return st.choose(reads(plan, stats, lambda: store_rows(st), lambda scan: traces[scan.trace.run]))


def execute(st, plan: P.QueryPlan, choice: Choice):
    """Rows (local engine: a list of tuples) or a Spark DataFrame (spark), with the query's names:
    `plan` run on the wing of `choice.engine`. The wings are imported here, when chosen: the
    Spark wing loads pyspark, which a local answer does not need."""
    if choice.engine is Engine.LOCAL:
        from iql.duckdb.executor import execute as run_duckdb  # deferred: it loads duckdb

        return run_duckdb(st, plan)
    from iql.spark.executor import execute as run_spark  # deferred: it loads py4j, pyspark

    return run_spark(st, plan)


def describe_trace(st, scan: P.TraceScan, engine: Engine) -> list[str]:
    """How a TRACE scan runs on this store on `engine` (for EXPLAIN): reads the run's operators."""
    from capture.tracing import describe  # deferred: it loads lark, numpy, pyarrow

    t = scan.trace
    return describe(st, t.run, t.pattern, t.limit, engine=engine)
