"""The rows of the store touching a few vertex ids, read with DuckDB (store/export/subgraph.py
builds the exported subgraph from them)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import duckdb

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


class SubgraphReader:
    """The rows touching a few ids, read with DuckDB (the ids join as a list parameter)."""

    def __init__(self, st) -> None:
        self.tables = st.local()
        self.con = self.tables.con
        self._params = itertools.count()

    def _semi(self, rel, column: str, ids: Sequence[str]):
        name = f"ids{next(self._params)}"  # relations joined into one query need distinct parameter names
        keys = self.con.sql(f"SELECT unnest(${name}::VARCHAR[]) AS k", params={name: list(ids)})
        return rel.join(keys.project(duckdb.ColumnExpression("k").alias(column)), column, how="semi")

    @staticmethod
    def _dicts(rel) -> list[dict]:
        cols = rel.columns
        return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]

    def edges(self, ids: Sequence[str], limit: int) -> list[dict]:
        edges = self.tables.relation(EDGES)
        both = self._semi(self._semi(edges, SRC, ids), DST, ids)
        proc = self._semi(edges, PROCESS, ids)
        rel = both.union(self._semi(proc, SRC, ids)).union(self._semi(proc, DST, ids)).distinct()
        return self._dicts(rel.order(f"{SRC}, {DST}, {PROCESS}").limit(limit))

    def vertices(self, ids: Sequence[str]) -> list[dict]:
        return self._dicts(self._semi(self.tables.relation(VERTICES), ID, ids))

    def ancestors(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        rel = self._semi(self._semi(self.tables.relation(ANCESTORS), ID, ids), ANCESTOR, ids)
        rel = rel.filter(duckdb.ColumnExpression(DEPTH) > duckdb.ConstantExpression(0))
        return [(i, a) for i, a in rel.project(ID, ANCESTOR).fetchall()]

    def members(self, ids: Sequence[str]) -> list[dict]:
        rel = self._semi(self._semi(self.tables.relation(COMPLEX), VERTEX, ids), ELEM, ids)
        rel = rel.filter(duckdb.ColumnExpression(VERTEX) != duckdb.ColumnExpression(ELEM))
        return self._dicts(rel.project(VERTEX, CE, GRANULARITY, ELEM))
