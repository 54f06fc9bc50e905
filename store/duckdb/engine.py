"""The DuckDB engine's `StoreEngine`: everything in this process (DuckDB, pyarrow, numpy), no
JVM; for stores in a folder on this machine."""

from __future__ import annotations

from store import schema as S
from store.duckdb import lineage
from store.duckdb.subgraph import SubgraphReader
from store.engine import Engine, StoreEngine


class DuckDBEngine(StoreEngine):
    kind = Engine.LOCAL

    def ingest(self, stx, item):
        # deferred: the readers and writers load pyarrow and numpy, which a question does not need
        from store.duckdb.bundle import from_dict
        from store.duckdb.ingest import ingest_bundle, load  # deferred: it loads numpy, pyarrow
        from store.duckdb.triples import ingest_triples  # deferred: it loads numpy, pyarrow

        if item.triples:
            return ingest_triples(stx, item.source)
        bundle = load(item.source) if item.loaded is None else from_dict(item.loaded, str(item.source))
        return ingest_bundle(stx, bundle)

    def counts(self, st):
        local = st.local()
        by_type = local.relation(S.VERTICES).aggregate(
            f"{S.KIND}, {S.TYPE}, {S.IMPLICIT}, count(*) AS n", f"{S.KIND}, {S.TYPE}, {S.IMPLICIT}").fetchall()
        elements = local.relation(S.ELEMENTS).aggregate(
            f"{S.GRANULARITY}, count(*) AS n", S.GRANULARITY).fetchall()
        return by_type, elements, local.rows(S.EDGES)

    def build_index(self, st, params, message, extra_meta):
        from store.duckdb import index  # deferred: numpy and the build load only for a build

        return index.build_index(st, params, message, extra_meta)

    def update_index(self, st, params, meta, extra_meta):
        # New edges merged into the index, reading and writing only what they touch; a full
        # recompute when that does not apply (store/duckdb/index_update.py says when).
        from store.duckdb import index_update  # deferred: numpy and the build load only for a build

        return index_update.update_index(st, params, meta, extra_meta)

    def refresh_scopes(self, st, meta):
        # the rows appended since the scopes merged into them, or the scopes computed whole
        # (store/duckdb/scope_update.py says when)
        from store.duckdb import scope_update  # deferred: numpy and the build load only for a build

        return scope_update.refresh_scopes(st, meta)

    def lineage_plan(self, st, item, method, forward):
        """What a lineage of `item` reads on this engine (`LineagePlan.reads`), and its answer
        (`LineagePlan.run`)."""
        return lineage.LineagePlan(st, item, method, forward)

    def component_members(self, plan):
        return lineage.component_members(plan)

    def subgraph_reader(self, source, spark=None):
        """The rows touching a few vertex ids, for export (store/export/subgraph.py)."""
        return SubgraphReader(source)
