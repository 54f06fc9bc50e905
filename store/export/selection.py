"""Which subgraph to export or draw: a `Selection`, and the vertex ids it means.

The lineage of an item (its ancestors, or descendants with `forward`), the vertex ids an IQL
statement returns, ids given one by one, or the connected component of an item (component
index). The store does not run IQL: for a query selection the caller passes `run_query`, a
function from the statement's text to its result DataFrame (strata passes `iql.run(st, text).df`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame

from store.errors import UserError


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


def select_ids(st, sel: Selection, run_query: Callable[[str], DataFrame] | None = None) -> DataFrame:
    """A DataFrame of the selection's vertex ids (Spark; nothing collected but a lineage).

    run_query: runs a query selection's IQL statement and returns its result DataFrame (read
    as vertex ids by `store.export.subgraph.vertex_ids`).
    """
    if sel.query is not None:
        if run_query is None:
            raise ValueError("a query selection needs run_query (the store does not run IQL)")
        return run_query(sel.query)
    if sel.component is not None:
        from store.lineage import component_members

        return component_members(st, sel.component)
    if sel.item is not None:
        from store.lineage import lineage

        result = lineage(st, sel.item, depth=sel.depth, forward=sel.forward, method=sel.method)
        ids = [sel.item, *result.nodes, *sorted({op for _, _, op in result.edges})]
    else:
        ids = list(sel.ids)
    return st.spark.createDataFrame([(i,) for i in ids], "id string")


def subgraph(st, sel: Selection, max_nodes: int,
             run_query: Callable[[str], DataFrame] | None = None):
    """The bounded subgraph (`store.export.Subgraph`) of the selection's vertices."""
    from store.export.subgraph import extract

    return extract(st, select_ids(st, sel, run_query), max_nodes=max_nodes)
