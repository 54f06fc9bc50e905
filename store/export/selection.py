"""Which subgraph to export or draw: a `Selection`, and the vertex ids it means.

The lineage of an item (its ancestors, or descendants with `forward`), the vertex ids an IQL
statement returns, ids given one by one, or the connected component of an item (component
index). The store does not run IQL: for a query selection the caller passes `run_query`, a
function from the statement's text to its result (strata passes `iql.run(st, text)`).

Ids come back as a plain list, read with the engine the store chooses (lineage, components)
or the one the query ran on; only a query answered by Spark gives a Spark DataFrame, which
`store.export.subgraph.extract` narrows to the node budget on Spark before collecting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from store import progress
from store.engine import Engine
from store.errors import UserError
from store.export.subgraph import extract, row_ids
from store.lineage import component_members, lineage


@dataclass(frozen=True, slots=True)
class Selection:
    """Which subgraph: exactly one of item (lineage), query, ids, component."""

    item: str | None = None
    query: str | None = None
    ids: tuple[str, ...] = ()
    depth: int | None = None
    forward: bool = False
    method: str = "auto"
    component: str | None = None

    def __post_init__(self) -> None:
        given = sum([self.item is not None, self.query is not None, bool(self.ids),
                     self.component is not None])
        if given != 1:
            raise UserError(
                "say which subgraph: give an ITEM (its lineage), --query \"IQL\", --id ID "
                "or --component ITEM",
                hint='e.g. strata show imdb_worthington --forward, or --query "select d.id from Row d"',
            )

    def describe(self) -> str:
        if self.item is not None:
            way = "descendants" if self.forward else "lineage"
            return f"{way} of {self.item}" + (f" (depth {self.depth})" if self.depth is not None else "")
        if self.query is not None:
            return f"IQL: {self.query}"
        if self.component is not None:
            return f"component of {self.component}"
        return f"{len(self.ids)} vertices"


def select_ids(st, sel: Selection, run_query: Callable[[str], Any] | None = None,
               limit: int | None = None):
    """The selection's vertex ids: a list of strings, or, for a query Spark answered, its
    result DataFrame (read as vertex ids by `store.spark.subgraph.vertex_ids`).

    run_query: runs a query selection's IQL statement and returns its result: an object with
    `columns`, `rows()`, `engine` (a store.engine.Choice) and `df` (iql.Result), or a Spark
    DataFrame. limit: a component selection returns at most its `limit` smallest ids.
    """
    if sel.query is not None:
        if run_query is None:
            raise ValueError("a query selection needs run_query (the store does not run IQL)")
        return result_ids(run_query(sel.query))
    if sel.component is not None:
        return component_members(st, sel.component, limit)
    if sel.item is not None:
        result = lineage(st, sel.item, depth=sel.depth, forward=sel.forward, method=sel.method)
        return [sel.item, *result.nodes, *sorted({op for _, _, op in result.edges})]
    return list(sel.ids)


def result_ids(result):
    """The vertex ids of a query result: a list when the local engine answered (its rows are
    here already), else the result's Spark DataFrame."""
    if not callable(getattr(type(result), "rows", None)):  # a Spark DataFrame
        return result
    choice = getattr(result, "engine", None)
    if choice is not None and choice.engine is Engine.SPARK:
        return result.df

    return row_ids(result.columns, result.rows())


def subgraph(st, sel: Selection, max_nodes: int, run_query: Callable[[str], Any] | None = None):
    """The bounded subgraph (`store.export.Subgraph`) of the selection's vertices."""
    with progress.step("select ids") as step:
        ids = select_ids(st, sel, run_query, limit=max_nodes + 1)
        known = len(ids) if isinstance(ids, list) else None  # a Spark result is counted by extract
        step.advance(known or 0)
    with progress.step("read their rows", total=known) as step:
        out = extract(st, ids, max_nodes=max_nodes)
        step.advance(len(out.nodes))
    return out
