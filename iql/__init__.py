"""IQL, the Ibis query language: parse -> bind -> plan -> execute.

    import iql
    result = iql.run(store, "select p.id from WebPage p, Version v where p influences(2) v")
    result.columns, result.rows(), result.warnings, result.df

Stages (each a module with one entry function): `parser.parse` (text -> AST),
`binder.bind` (AST + catalog -> bound AST), `planner.plan` (-> logical plan),
`executor.execute` (plan -> Spark DataFrame).
"""

from __future__ import annotations

from iql.errors import IqlError, IqlRuntimeError, IqlSemanticError, IqlSyntaxError
from iql.result import Result

__all__ = ["IqlError", "IqlRuntimeError", "IqlSemanticError", "IqlSyntaxError", "Result",
           "compile_query", "run"]


def compile_query(text: str, catalog, stats=None):
    """Parse, bind and plan `text` without Spark: returns (bound statement, logical plan)."""
    from iql.binder import bind
    from iql.parser import parse
    from iql.planner import plan

    bound = bind(parse(text), catalog, text)
    return bound, plan(bound, stats)


def run(store, text: str) -> Result:
    """Run one IQL statement against a `store.Store`."""
    from iql import executor
    from iql.ast import Trace
    from iql.binder import bind
    from iql.explain import explain_lines
    from iql.parser import parse
    from iql.planner import plan

    bound = bind(parse(text), store.catalog, text)
    if bound.explain and isinstance(bound.query, Trace):  # EXPLAIN TRACE: see iql/trace.py
        from iql.trace import explain

        return Result(executor.explain_frame(store, explain(store, bound.query)), ("plan",), (), True)
    if bound.explain:
        logical = plan(bound, executor.stats(store))
        lines = explain_lines(logical, bound.warnings)
        return Result(executor.explain_frame(store, lines), ("plan",), bound.warnings, True)
    logical = plan(bound)
    return Result(executor.execute(store, logical), logical.columns, bound.warnings)
