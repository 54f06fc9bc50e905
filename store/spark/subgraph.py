"""The rows of the store touching a few vertex ids, as Spark jobs (store/export/subgraph.py
builds the exported subgraph from them), and the vertex ids of a Spark result."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from store.errors import no_vertex_ids
from store.schema import (
    ANCESTOR,
    ANCESTORS,
    CE,
    COMPLEX,
    DEPTH,
    DST,
    EDGES,
    ELEM,
    GRANULARITY,
    ID,
    PROCESS,
    SRC,
    VERTEX,
    VERTICES,
)
from store.spark.frames import local_frame


def vertex_ids(df):
    """One column `id` of vertex ids from a Spark result: its `id` column, its only column, or
    every string column together (an IQL result such as `select d.id, p.id ...`)."""
    def col(name: str):  # IQL names columns `d.id`: quoted, not a struct field
        return F.col("`" + name.replace("`", "``") + "`")

    cols = df.columns
    if ID in cols or len(cols) == 1:
        return df.select(col(ID if ID in cols else cols[0]).cast("string").alias(ID))
    strings = [f.name for f in df.schema.fields if isinstance(f.dataType, StringType)]
    if not strings:
        raise no_vertex_ids(cols)
    frames = [df.select(col(c).alias(ID)) for c in strings]
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


class SubgraphReader:
    """The same rows as Spark jobs (the ids join as a broadcast DataFrame)."""

    def __init__(self, source, spark) -> None:
        self.source = source
        self.spark = spark

    @staticmethod
    def first_ids(ids, n: int) -> list[str]:
        """The first `n` vertex ids (sorted) of a Spark result (`vertex_ids`)."""
        return [r[0] for r in vertex_ids(ids).where(F.col(ID).isNotNull()).distinct().orderBy(ID).limit(n).collect()]

    def _ids(self, ids: Sequence[str]):
        schema = StructType([StructField(ID, StringType(), False)])
        return F.broadcast(local_frame(self.spark, [(i,) for i in ids], schema))

    @staticmethod
    def _semi(df, column: str, ids):
        return df.join(ids.withColumnRenamed(ID, column), on=column, how="left_semi")

    def edges(self, ids: Sequence[str], limit: int) -> list[dict]:
        chosen = self._ids(ids)
        edges = self.source.table(EDGES)
        both = self._semi(self._semi(edges, SRC, chosen), DST, chosen)
        proc = self._semi(edges, PROCESS, chosen)
        proc = self._semi(proc, SRC, chosen).unionByName(self._semi(proc, DST, chosen))
        rows = both.unionByName(proc).distinct().orderBy(SRC, DST, PROCESS).limit(limit).collect()
        return [r.asDict() for r in rows]

    def vertices(self, ids: Sequence[str]) -> list[dict]:
        return [r.asDict() for r in self._semi(self.source.table(VERTICES), ID, self._ids(ids)).collect()]

    def ancestors(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        every = self._ids(ids)
        rows = (self._semi(self._semi(self.source.table(ANCESTORS), ID, every), ANCESTOR, every)
                .where(F.col(DEPTH) > 0).select(ID, ANCESTOR).collect())
        return [(r[ID], r[ANCESTOR]) for r in rows]

    def members(self, ids: Sequence[str]) -> list[dict]:
        every = self._ids(ids)
        rows = (self._semi(self._semi(self.source.table(COMPLEX), VERTEX, every), ELEM, every)
                .where(F.col(VERTEX) != F.col(ELEM)).select(VERTEX, CE, GRANULARITY, ELEM).collect())
        return [r.asDict() for r in rows]
