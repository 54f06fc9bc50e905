"""`strata info`: what a store holds, in one small Spark job per table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from store import schema as S

if TYPE_CHECKING:
    from store.store import Store


def info(st: Store) -> dict[str, Any]:
    cat = st.catalog
    by_type = {
        (r[S.KIND], r[S.TYPE], bool(r[S.IMPLICIT])): r["n"]
        for r in st.table(S.VERTICES).groupBy(S.KIND, S.TYPE, S.IMPLICIT).agg(F.count("*").alias("n")).collect()
    }
    types = cat.types
    vertices: dict[str, dict[str, int]] = {S.DATA: {}, S.PROCESS_KIND: {}}
    for (kind, key, _implicit), n in sorted(by_type.items()):
        name = types[key].name if key in types else key
        vertices[kind][name] = vertices[kind].get(name, 0) + n
    elements = {r[S.GRANULARITY]: r["n"] for r in
                st.table(S.ELEMENTS).groupBy(S.GRANULARITY).agg(F.count("*").alias("n")).collect()}
    index = st.meta("index")
    return {
        "store": st.root,
        "version": st.version,
        "commits": len(st.storage.versions()),
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
        "edges": st.table(S.EDGES).count(),
        "index": index if index else {"state": "none"},
    }
