"""The Spark engine's `StoreEngine`: Spark jobs on the store's session (embedded local[*] or a
cluster), for any store, on this machine's file system or a Hadoop URI."""

from __future__ import annotations

from pyspark.sql import functions as F

from store import schema as S
from store.engine import Engine, StoreEngine
from store.spark import lineage
from store.spark.index import build, maintenance
from store.spark.ingest import ingest_planned
from store.spark.subgraph import SubgraphReader


class SparkEngine(StoreEngine):
    kind = Engine.SPARK

    def ingest(self, stx, item):
        return ingest_planned(stx, item)

    def counts(self, st):
        by_type = [(r[S.KIND], r[S.TYPE], r[S.IMPLICIT], r["n"]) for r in
                   st.table(S.VERTICES).groupBy(S.KIND, S.TYPE, S.IMPLICIT).agg(F.count("*").alias("n")).collect()]
        elements = [(r[S.GRANULARITY], r["n"]) for r in
                    st.table(S.ELEMENTS).groupBy(S.GRANULARITY).agg(F.count("*").alias("n")).collect()]
        return by_type, elements, st.table(S.EDGES).count()

    def build_index(self, st, params, message, extra_meta):
        return build.build_index(st, params, extra_meta)

    def update_index(self, st, params, meta, extra_meta):
        return maintenance.update_index(st, params, meta, extra_meta)

    def refresh_scopes(self, st, meta):
        return build.refresh_scopes(st, meta)

    def lineage(self, st, item, depth, forward, method, tau):
        """(nodes, triples, triples read) of a lineage on Spark (store/spark/lineage.py)."""
        return lineage.on_spark(lineage.view_of(st), item, depth, forward, method, tau)

    def component_members(self, st, item, limit):
        return lineage.component_members(lineage.view_of(st), item, limit)

    def subgraph_reader(self, source, spark=None):
        """The rows touching a few vertex ids, for export (store/export/subgraph.py)."""
        return SubgraphReader(source, spark if spark is not None else source.spark)
