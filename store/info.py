"""`strata info`: what a store holds.

The counts are three small aggregations (vertices per kind and type, elements per granularity,
edges). On a local store answered by the local engine they run in DuckDB over the committed
Parquet files (the edge count comes from the files' footers) and no JVM starts; otherwise each
is one small Spark job. Both give the same dictionary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from store import schema as S
from store.engine import Engine

if TYPE_CHECKING:
    from store.store import Store


def _counts_local(st: Store) -> tuple[list[tuple], list[tuple], int]:
    local = st.local()
    by_type = local.relation(S.VERTICES).aggregate(
        f"{S.KIND}, {S.TYPE}, {S.IMPLICIT}, count(*) AS n", f"{S.KIND}, {S.TYPE}, {S.IMPLICIT}").fetchall()
    elements = local.relation(S.ELEMENTS).aggregate(
        f"{S.GRANULARITY}, count(*) AS n", S.GRANULARITY).fetchall()
    return by_type, elements, local.rows(S.EDGES)


def _counts_spark(st: Store) -> tuple[list[tuple], list[tuple], int]:
    from pyspark.sql import functions as F

    by_type = [(r[S.KIND], r[S.TYPE], r[S.IMPLICIT], r["n"]) for r in
               st.table(S.VERTICES).groupBy(S.KIND, S.TYPE, S.IMPLICIT).agg(F.count("*").alias("n")).collect()]
    elements = [(r[S.GRANULARITY], r["n"]) for r in
                st.table(S.ELEMENTS).groupBy(S.GRANULARITY).agg(F.count("*").alias("n")).collect()]
    return by_type, elements, st.table(S.EDGES).count()


def info(st: Store) -> dict[str, Any]:
    cat = st.catalog
    local = st.storage.is_local and st.choose(None).engine is Engine.LOCAL
    type_rows, element_rows, edges = _counts_local(st) if local else _counts_spark(st)
    by_type: dict[tuple[str, str, bool], int] = {}
    for kind, key, implicit, n in type_rows:
        by_type[(kind, key, bool(implicit))] = by_type.get((kind, key, bool(implicit)), 0) + n
    types = cat.types
    vertices: dict[str, dict[str, int]] = {S.DATA: {}, S.PROCESS_KIND: {}}
    for (kind, key, _implicit), n in sorted(by_type.items()):
        name = types[key].name if key in types else key
        vertices[kind][name] = vertices[kind].get(name, 0) + n
    elements = {g: n for g, n in element_rows}
    index = st.meta("index")
    return {
        "store": st.root,
        "version": st.version,
        "commits": len([v for v in st.storage.versions() if v <= st.version]),
        "versions": st.history(),
        "last_commit": {"created": st.manifest.created, "message": st.manifest.message} if st.version else None,
        "granularities": {
            kind: sorted(g for g, k in cat.all_kinds().items() if k == kind) for kind in S.KINDS
        },
        "containment": [list(p) for p in cat.pairs],
        "auto_granularities": list(cat.auto),
        "types": {
            t.name: {"granularities": list(t.granularities), "kind": t.kind,
                     "attributes": {a: v.value for a, v in t.attributes}}
            for t in types.values() if len(t.granularities) > 1 or t.attributes
        },
        "elements": dict(sorted(elements.items())),
        "vertices": vertices,
        "edges": edges,
        "index": index if index else {"state": "none"},
    }
