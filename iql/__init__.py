"""IQL, the Ibis query language: parse -> bind -> plan -> execute.

    import iql
    result = iql.run(store, "select p.id from WebPage p, Version v where p influences(2) v")
    result.columns, result.rows(), result.warnings, result.engine

Stages (each a module with one entry function): `parser.parse` (text -> AST),
`binder.bind` (AST + catalog -> bound AST), `planner.plan` (-> logical plan), then
`placement.execute` runs the plan on the engine `placement.choose` picks (once per statement,
by store/engine.py's rule): the wing `iql.duckdb` (DuckDB in this process) or `iql.spark`.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from iql.ast import TRACE_COLUMNS, Form
from iql.errors import IqlError, IqlRuntimeError, IqlSemanticError, IqlSyntaxError
from iql.result import Result

__all__ = ["TRACE_COLUMNS", "Form", "IqlError", "IqlRuntimeError", "IqlSemanticError",
           "IqlSyntaxError", "Result", "compile_query", "run"]


def compile_query(text: str, catalog, stats=None):
    """Parse, bind and plan `text` without Spark: returns (bound statement, logical plan)."""
    from iql.binder import bind  # deferred: `import iql` for its names loads no stage
    from iql.parser import parse  # deferred: it loads lark
    from iql.planner import plan  # deferred: as the binder

    bound = bind(parse(text), catalog, text)
    return bound, plan(bound, stats)


# (store root, version, text) -> (bound, logical): a statement asked again of the same version
# (the REPL's history, a dashboard's refresh) is not parsed, bound and planned again. Plans
# are immutable and depend only on the text, the catalog and the statistics, both of which
# are fixed per committed version.
_PLANS: OrderedDict[tuple[str, int, str], tuple] = OrderedDict()
_PLANS_KEPT = 256
_AS_OF = re.compile(r"\s*as\b", re.IGNORECASE)


def _compiled(store, text: str, stats):
    key = (store.root, store.version, text)
    found = _PLANS.get(key)
    if found is None:
        found = compile_query(text, store.catalog, stats)
        _PLANS[key] = found
        if len(_PLANS) > _PLANS_KEPT:
            _PLANS.popitem(last=False)
    else:
        _PLANS.move_to_end(key)
    return found


def run(store, text: str) -> Result:
    """Run one IQL statement against a `store.Store`.

    The plan is made once, with the store's statistics, and is the one EXPLAIN shows and the
    chosen engine runs (`iql.placement`: DuckDB in this process or Spark; EXPLAIN names it).
    The engine is chosen here, once, and passed down."""
    from iql import placement  # deferred: a statement's stages load at the first statement
    from iql.explain import explain_lines  # deferred: only EXPLAIN needs it

    if _AS_OF.match(text):  # AS OF VERSION n: the statement reads that committed version
        from iql.parser import parse  # deferred: it loads lark

        version = parse(text).as_of
        if version is not None and version != store.version:
            store = store.at(version)
    stats = placement.stats(store)
    bound, logical = _compiled(store, text, stats)
    choice = placement.choose(store, logical, stats)
    if bound.explain:
        lines = [choice.line(), *explain_lines(logical, bound.warnings,
                                               lambda scan: placement.describe_trace(store, scan, choice.engine))]
        return Result([(line,) for line in lines], ("plan",), bound.warnings, True, engine=choice,
                      spark=lambda: store.spark)
    return Result(placement.execute(store, logical, choice), logical.columns, bound.warnings,
                  form=bound.form, engine=choice, spark=lambda: store.spark)
