"""`strata info`: what a store holds.

The counts are three small aggregations (vertices per kind and type, elements per granularity,
edges), made by the engine the store chooses (`StoreEngine.counts`): on the DuckDB engine over
the committed Parquet files (the edge count comes from the files' footers), no JVM; on Spark one
small job each. Both give the same dictionary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from store import schema as S
from store.wings import engine_for

if TYPE_CHECKING:
    from store.store import Store


def info(st: Store) -> dict[str, Any]:
    cat = st.catalog
    type_rows, element_rows, edges = engine_for(st.choose(None).engine).counts(st)
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
