"""Lineage of one item: RQ, CCProv and CSProv (CSProv, Section 2; docs/references.md), and `auto`,
on either engine (store/engine.py).

- RQ: recursive querying over every derivation triple: one lookup per level.
- CC (Algorithm 1): find the item's component, read only that component's triples.
- CS (Algorithm 2): find the item's connected set, its set-lineage through the set
  dependencies, read only the triples whose derived value lies in those sets.

`lineage(st, ...)` asks `st.choose(reads)` for an engine, `reads` being the triples the method
reads: every edge for RQ; for CC and CS the item's component or set-lineage, counted from the
index before anything else is read (pyarrow point reads on a local store).

- local (no JVM): RQ reads the edges (src, dst, process AS op) with DuckDB into an Arrow table
  and searches it with `reach_table`. CC and CS locate the item, walk the set dependencies and
  read the scope with pyarrow point reads of the index's bucket files (store/duckdb/index_reads.py);
  a scope of at most τ triples is searched in memory with `reach_table`, a larger one with
  DuckDB, one semi-join of the scope per level. Unknown items are looked up with DuckDB.
- spark: the same reads as Spark jobs (`IndexView`). CC and CS collect a scope of at most τ
  triples to the driver and search it there (`reach`); a larger one runs RQ on Spark
  restricted to those triples.

τ defaults to DEFAULT_LOCAL_TAU on the local engine and DEFAULT_TAU through Spark. Both engines
give the same `Lineage`: nodes, edges, method, and `triples_read`, the size of the triple volume
the recursive step ran over (all triples for RQ, the component for CC, the set-lineage's sets for
CS), so pruning is visible. `Lineage.engine` says which engine answered and why.

The lineage of q (backward) is every value with a path to q and every triple on such a path;
with depth k, the values within k steps and the triples whose derived value is fewer than k
steps from q. Forward is the same on reversed triples. A visited set makes cycles harmless.
"""

from __future__ import annotations

from collections.abc import Callable

from store.engine import Choice, Engine
from store.errors import UserError
from store.index import layout as L
from store.reach import (
    DEFAULT_LOCAL_TAU,
    DEFAULT_TAU,
    Direction,
    Lineage,
    Method,
    index_warning,
    reach,
    reach_table,
    resolve_method,
)
from store.wings import engine_for


def choose_with(st, reads: Callable[[], int | None]) -> Choice:
    """`st.choose` with `reads()` counted only when it can matter (the engine may be local)."""
    first = st.choose(None)
    if first.engine is Engine.SPARK:
        return first
    return st.choose(reads())


# ---------------------------------------------------------------------------- methods
def lineage(st, item: str, depth: int | None = None, forward: bool = False,
            method: Method = Method.AUTO, tau: int | None = None) -> Lineage:
    """Lineage of `item` in store `st`. Raises UserError for unknown items.

    The engine is `st.choose(reads)` (module docstring), chosen here once; the engine's wing
    (store/duckdb/lineage.py, store/spark/lineage.py) answers. `tau`: the most triples CC/CS
    search in memory; None means DEFAULT_LOCAL_TAU on the local engine, DEFAULT_TAU on Spark."""
    method = Method(method)
    if depth is not None and depth < 0:
        raise UserError(f"--depth must be 0 or more, got {depth}")
    warning = index_warning(st)
    indexed, warnings = warning is None, () if warning is None else (warning,)
    chosen = resolve_method(method, indexed, warnings)
    engine = engine_for(Engine.LOCAL) if st.storage.on_this_machine and st.engine is not Engine.SPARK else None
    plan = engine.lineage_plan(st, item, chosen, forward) if engine is not None else None
    choice = choose_with(st, plan.reads if plan is not None else lambda: None)
    if choice.engine is Engine.LOCAL:
        found, edges, read = plan.run(depth, DEFAULT_LOCAL_TAU if tau is None else tau)
    else:
        found, edges, read = engine_for(Engine.SPARK).lineage(st, item, depth, forward, chosen,
                                                              DEFAULT_TAU if tau is None else tau)
    return Lineage(item, Direction.FORWARD if forward else Direction.BACKWARD, tuple(sorted(found)),
                   tuple(sorted(edges)), chosen, read, warnings if method is Method.AUTO else (), choice)


def component_members(st, item: str, limit: int | None = None) -> list[str]:
    """Every value and process of the connected component (component index) holding `item`,
    sorted; with `limit`, the first `limit` of them. Reads only that component's index rows:
    with pyarrow on the local engine, as Spark jobs otherwise."""
    warning = index_warning(st)
    if warning is not None:
        if st.meta(L.META_KEY):
            raise UserError("exporting a component needs the component index, and it is older than the last ingest",
                            hint="run `strata index` to update it")
        raise UserError("exporting a component needs the component index, and there is none yet",
                        hint="run `strata index` first")
    engine = engine_for(Engine.LOCAL) if st.storage.on_this_machine and st.engine is not Engine.SPARK else None
    plan = engine.lineage_plan(st, item, Method.CC, False) if engine is not None else None  # CC's reads
    if choose_with(st, plan.reads if plan is not None else lambda: None).engine is Engine.LOCAL:
        members = engine.component_members(plan)
    else:
        members = engine_for(Engine.SPARK).component_members(st, item, limit)
    if members is None:
        raise UserError(f"'{item}' is in no component of the index: it takes part in no edge",
                        hint="ids are case-sensitive; give its id with --id to export it alone")
    return members if limit is None else members[:limit]


__all__ = ["Direction", "Lineage", "Method", "component_members", "index_warning", "lineage", "reach",
           "reach_table"]
