"""Building and updating the component index (docs/index.md): the engine is chosen here, once
(`choose_builder`), and its wing builds (store/duckdb/index.py in this process,
store/spark/index/ on Spark). The index's layout, parameters and driver-side reads are shared
(store/index/)."""

from __future__ import annotations

import time

from store import schema as S
from store.engine import Choice, Engine, choose, local_triples_setting, within_memory
from store.index import layout as L
from store.index.params import IndexParams, params_from_meta
from store.index.scopes import current as scopes_current
from store.wings import engine_for

# Peak memory of an in-process build per row it reads, measured (docs/index.md, "Memory and
# time"): the triples with their components and sets, and the complex-element rows that make
# influence-scope rows (every value of a store ingested from a triples file is an element with an
# implicit vertex, so one complex row each).
BYTES_PER_EDGE = 300
BYTES_PER_COMPLEX_ROW = 1000


def estimated_bytes(edges: int, complex_rows: int) -> int:
    """The peak memory an in-process build of a store with these row counts is expected to need."""
    return edges * BYTES_PER_EDGE + complex_rows * BYTES_PER_COMPLEX_ROW


def choose_builder(st) -> Choice:
    """Where `strata index` builds: `local` (store/duckdb/index.py) or `spark` (store/spark/index/).

    The store's engine setting decides (store/engine.py): `local` and `spark` force one path,
    `auto` builds here when the store is a local folder, no cluster was asked for, its `edges`
    table has at most `$STRATA_LOCAL_TRIPLES` rows (counted from the Parquet footers), and the
    build's expected peak memory (`estimated_bytes`) fits in the memory the machine has
    available; otherwise on Spark, which spills to disk instead of running out of memory."""
    local = st.storage.on_this_machine
    rows = st.local().rows(S.EDGES) if local and st.engine is not Engine.SPARK else None
    choice = choose(st.engine, on_this_machine=local, cluster=st.cluster(), reads=rows,
                    local_rows=local_triples_setting())
    if choice.engine is Engine.LOCAL and st.engine is Engine.AUTO:
        return within_memory(estimated_bytes(rows or 0, st.local().rows(S.COMPLEX)),
                             "an in-process build") or choice
    return choice


def build_index(st, params: IndexParams | None = None) -> dict:
    """Build the index from scratch over every derivation edge of the store, on the engine
    `choose_builder` picks; the meta records which (`builder`) and why (`builder_reason`)."""
    choice = choose_builder(st)
    meta = engine_for(choice.engine).build_index(st, params or IndexParams(), "index: full build",
                                                 {"builder_reason": choice.reason})
    return with_skeletons(st, meta)


def update_index(st, params: IndexParams | None = None) -> dict:
    """Bring the index up to the committed edges (or build it if absent): the new edges merged
    into it, on Spark or in this process, or in this process recomputed where a merge does not
    apply (store/duckdb/index_update.py says when); all equal a full build over the same edges."""
    meta = st.meta(L.META_KEY)
    if not meta:
        return build_index(st, params)
    if params is not None and params_from_meta(meta) != params:
        return build_index(st, params)  # other parameters: the old index is no guide
    params = params_from_meta(meta)
    choice = choose_builder(st)
    if list(L.edge_segments(st)) == list(meta.get("edges_segments", [])):
        if not scopes_current(st):  # new elements or vertices without new edges
            return engine_for(choice.engine).refresh_scopes(st, {**meta, "builder_reason": choice.reason})
        return {**meta, "mode": "unchanged"}
    return with_skeletons(st, engine_for(choice.engine).update_index(st, params, meta,
                                                                     {"builder_reason": choice.reason}))


def with_skeletons(st, meta: dict) -> dict:
    """`meta` of a committed index, with how many lineage skeletons were written for its large
    components (store/duckdb/index_reads.py `write_skeletons`; local stores only)."""
    if not st.storage.on_this_machine:
        return meta
    from store.duckdb.index_reads import write_skeletons  # deferred: the DuckDB wing, for local stores

    t0 = time.perf_counter()
    written = write_skeletons(st)
    if written:
        meta = {**meta, "skeletons": written, "skeletons_s": round(time.perf_counter() - t0, 3)}
    return meta
