"""TRACE ['run'] MATCH 'pattern' [LIMIT n]: structural backtracing from IQL.

Binding checks the pattern (a tree-pattern syntax error points into the query text); planning
makes a :class:`TraceRelation`; executing matches the pattern on the run's committed result
items (table ``capture_result_items``) in Spark and backtraces the matches with
``capture.backtrace``. One row per node of each traced input item's tree.
"""

from __future__ import annotations

from dataclasses import dataclass

from iql import ast as A
from iql.errors import IqlRuntimeError, IqlSyntaxError

COLUMNS = ("dataset", "item", "item_id", "path", "role", "accessed_by", "manipulated_by")
_SCHEMA = ("dataset string, item string, item_id long, path string, role string, "
           "accessed_by array<int>, manipulated_by array<int>")


@dataclass(frozen=True, slots=True)
class TraceRelation:
    """The plan of a TRACE statement (a leaf: it reads the capture tables)."""

    run: str | None
    pattern: object  # capture.treepattern.Pattern
    limit: int | None

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS


def bind(trace: A.Trace, text: str) -> A.Trace:
    """Check the tree pattern now, pointing into the query on a syntax error."""
    from capture.treepattern import PatternError, parse_pattern

    try:
        parse_pattern(trace.pattern)
    except PatternError as e:
        first = e.message.splitlines()[0].replace("tree pattern: ", "")
        raise IqlSyntaxError.at(f"bad tree pattern in TRACE: {first}", trace.pattern_span, text,
                                hint=e.hint) from None
    return trace


def plan(trace: A.Trace):
    from capture.treepattern import parse_pattern
    from iql import plan as P

    rel = TraceRelation(trace.run, parse_pattern(trace.pattern), trace.limit)
    return P.QueryPlan(rel, COLUMNS, (), ("trace: match the pattern on the run's result items in Spark, "
                                          "then semi-join the id associations of the matched items only",))


def element_id(dataset: str, item_id: int) -> str:
    """The store element of a source item (capture/bundle.py naming)."""
    return f"dataset:{dataset}#{item_id & 0xFFFFFFFFFFFFFFFF:016x}"


def result_docs(store, run: str):
    """The committed result items of ``run`` (``id, doc``)."""
    from pyspark.sql import functions as F

    from capture.backtrace import RESULT_ITEMS

    if not store.has_table(RESULT_ITEMS):
        raise IqlRuntimeError(
            f"run {run} has no committed result items to match the pattern on",
            hint="runs written by this version of tracker.write record them; for an older run, "
                 "commit them with capture.backtrace.record_result_items(store, run, result)")
    return store.table(RESULT_ITEMS).filter(F.col("run") == F.lit(run)).select("id", "doc")


def execute(store, rel: TraceRelation):
    from capture.backtrace import backtrace, load_run, match_docs, spark_fetcher

    stored = load_run(store, rel.run)
    matched = match_docs(result_docs(store, stored.run), rel.pattern, rel.limit, (store.root, stored.run))
    trace = backtrace(stored.operators, stored.result_oid, matched, spark_fetcher(stored.assoc))
    rows = [(d, element_id(d, i), i, p, r, a, m) for d, i, p, r, a, m in trace.rows()]
    return store.spark.createDataFrame(rows, _SCHEMA)


def render_tree(rows) -> str:
    """TRACE rows as indented trees (one per input item), for the CLI and the REPL:

        tweets  dataset:tweets#e30a59a421e0f527
          retweet_cnt  influencing  accessed by 2
          text  contributing  accessed by 3,7,8; manipulated by 3,7,8
    """
    lines: list[str] = []
    current = None
    for dataset, item, _, path, role, accessed, manipulated in rows:
        if (dataset, item) != current:
            current = (dataset, item)
            lines.append(f"{dataset}  {item}")
        segs = path.split(".")
        ops = [f"{word} by {','.join(map(str, v))}" for word, v in (("accessed", accessed), ("manipulated", manipulated))
               if v]
        lines.append(f"{'  ' * len(segs)}{segs[-1]}  {role}" + (f"  {'; '.join(ops)}" if ops else ""))
    return "\n".join(lines)
