"""IQL, the Ibis query language: parse -> bind -> plan -> execute.

    import iql
    result = iql.run(store, "select p.id from WebPage p, Version v where p influences(2) v")
    result.columns, result.rows(), result.warnings, result.df

Stages (each a module with one entry function): `parser.parse` (text -> AST),
`binder.bind` (AST + catalog -> bound AST), `planner.plan` (-> logical plan),
`executor.execute` (plan -> Spark DataFrame).
"""

from __future__ import annotations

from iql.ast import TRACE_COLUMNS, Form
from iql.errors import IqlError, IqlRuntimeError, IqlSemanticError, IqlSyntaxError
from iql.result import Result

__all__ = ["TRACE_COLUMNS", "Form", "IqlError", "IqlRuntimeError", "IqlSemanticError",
           "IqlSyntaxError", "Result", "compile_query", "run"]


def compile_query(text: str, catalog, stats=None):
    """Parse, bind and plan `text` without Spark: returns (bound statement, logical plan)."""
    from iql.binder import bind
    from iql.parser import parse
    from iql.planner import plan

    bound = bind(parse(text), catalog, text)
    return bound, plan(bound, stats)


def run(store, text: str) -> Result:
    """Run one IQL statement against a `store.Store`.

    The plan is made once, with the store's statistics, and is the one EXPLAIN shows and the
    executor runs."""
    from iql import executor
    from iql.explain import explain_lines

    bound, logical = compile_query(text, store.catalog, executor.stats(store))
    if bound.explain:
        lines = explain_lines(logical, bound.warnings,
                              lambda scan: executor.describe_trace(store, scan))
        return Result(executor.explain_frame(store, lines), ("plan",), bound.warnings, True)
    return Result(executor.execute(store, logical), logical.columns, bound.warnings,
                  form=bound.form)
