"""The store as a graph shaped for GraphFrames: vertices (`id`, …) and edges (`src`, `dst`, …)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from store import schema as S
from store.spark.session import graphframes_available

if TYPE_CHECKING:
    from store.store import Store

NOTE = ("GraphFrames' JVM package is not on the classpath, so this is the two DataFrames; "
        "add --conf spark.jars.packages=io.graphframes:graphframes-spark4_2.13:<version> for a GraphFrame")


@dataclass(frozen=True)
class GraphTables:
    """What `Store.graph()` returns without the GraphFrames JVM package."""

    vertices: DataFrame
    edges: DataFrame
    note: str = NOTE


def graph(st: Store):
    """A `graphframes.GraphFrame` when its JVM side is present, else `GraphTables`."""
    vertices = st.table(S.VERTICES)
    edges = st.table(S.EDGES)
    if graphframes_available(st.spark):
        from graphframes import GraphFrame  # deferred: only this path needs graphframes

        return GraphFrame(vertices, edges)
    return GraphTables(vertices, edges)
