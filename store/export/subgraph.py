"""Collect one bounded subgraph of the store for export (the only Spark in `store.export`).

Input: a DataFrame of vertex ids (an IQL result, a lineage, a component) and a node budget.
Only rows touching those ids are read back to the driver: at most `max_nodes` vertices, the
provenance edges among them (at most `max_rels`), and the containment pairs among them.
Everything else (labels, relationship rules, containment reduction) is pure, in `model.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from store.errors import UserError
from store.export.property_graph import (
    DEFAULT_MAX_NODES,
    Node,
    Rel,
    RelType,
    Subgraph,
    browser_warnings,
    nearest_containers,
    node_properties,
    sanitize_label,
)
from store.schema import (
    ANCESTOR,
    ANCESTORS,
    ATTRS,
    CE,
    COMPLEX,
    DEPTH,
    DST,
    EDGES,
    ELEM,
    GRANULARITY,
    ID,
    KIND,
    N_CE,
    PROCESS,
    SRC,
    TYPE,
    VERTEX,
    VERTICES,
)


class TableSource(Protocol):
    """What extraction needs of a store: `Store` has both."""

    catalog: Any

    def table(self, name: str): ...


def vertex_ids(df):
    """One column `id` of vertex ids from a result: its `id` column, its only column, or every
    string column together (an IQL result such as `select d.id, p.id ...`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    cols = df.columns
    if ID in cols or len(cols) == 1:
        return df.select(F.col(ID if ID in cols else cols[0]).cast("string").alias(ID))
    strings = [f.name for f in df.schema.fields if isinstance(f.dataType, StringType)]
    if not strings:
        raise UserError(
            f"no column of vertex ids in the result: its columns are {cols} and none holds strings",
            hint="select vertex ids, e.g. `select d.id from Row d ...`",
        )
    frames = [df.select(F.col(c).alias(ID)) for c in strings]
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _type_info(catalog, key: str) -> tuple[str, dict[str, str]]:
    """(label, attribute schema) for a type key, from the catalog's display name."""
    info = None
    if catalog is not None:
        info = catalog.types.get(key)
    if info is None:
        return sanitize_label(key.replace("+", "_")), {}
    schema = {name: getattr(t, "value", str(t)) for name, t in info.attributes}
    return sanitize_label(info.name), schema


def extract(
    source: TableSource,
    ids,
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_rels: int | None = None,
) -> Subgraph:
    """The subgraph induced by the vertex ids in the DataFrame `ids` (see `vertex_ids`), at most
    `max_nodes` nodes: the given vertices (smallest ids first when there are more), then the
    processes of the provenance edges among them while the budget lasts."""
    if max_nodes < 1:
        raise UserError(f"the node budget must be at least 1, got {max_nodes}", hint="--max-nodes 1000")
    from pyspark.sql import functions as F

    max_rels = max_rels if max_rels is not None else 20 * max_nodes
    wanted = [
        r[0]
        for r in vertex_ids(ids)
        .where(F.col(ID).isNotNull())
        .distinct()
        .orderBy(ID)
        .limit(max_nodes + 1)
        .collect()
    ]
    warnings: list[str] = []
    truncated = len(wanted) > max_nodes
    if truncated:
        wanted = wanted[:max_nodes]
        warnings.append(
            f"more than {max_nodes} vertices were asked for; exporting the first {max_nodes} by id "
            "(raise the budget with --max-nodes, or narrow the query)"
        )
    spark = ids.sparkSession
    chosen = _ids_frame(spark, wanted)

    edges = source.table(EDGES)
    e_both = _semi(_semi(edges, SRC, chosen), DST, chosen)
    e_proc = _semi(edges, PROCESS, chosen)
    e_proc = _semi(e_proc, SRC, chosen).unionByName(_semi(e_proc, DST, chosen))
    edge_rows = e_both.unionByName(e_proc).distinct().orderBy(SRC, DST, PROCESS).limit(max_rels + 1).collect()
    if len(edge_rows) > max_rels:
        edge_rows = edge_rows[:max_rels]
        truncated = True
        warnings.append(f"more than {max_rels} provenance edges among these vertices; exporting {max_rels}")

    node_set = set(wanted)
    extra = sorted({r[PROCESS] for r in edge_rows} - node_set)
    room = max_nodes - len(node_set)
    if len(extra) > room:
        truncated = True
        warnings.append(
            f"{len(extra) - max(room, 0)} process vertices did not fit the node budget; their edges "
            "are exported as DERIVED only (raise --max-nodes to see FEEDS/EMITS)"
        )
        extra = extra[: max(room, 0)]
    all_ids = sorted(node_set | set(extra))
    every = _ids_frame(spark, all_ids)

    vertex_rows = _semi(source.table(VERTICES), ID, every).collect()
    found = {r[ID] for r in vertex_rows}
    unknown = [i for i in wanted if i not in found]
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        warnings.append(f"{len(unknown)} id(s) are not vertices of the store and were skipped: {shown}")
    anc_rows = (
        _semi(_semi(source.table(ANCESTORS), ID, every), ANCESTOR, every)
        .where(F.col(DEPTH) > 0)
        .select(ID, ANCESTOR)
        .collect()
    )
    member_rows = (
        _semi(_semi(source.table(COMPLEX), VERTEX, every), ELEM, every)
        .where(F.col(VERTEX) != F.col(ELEM))
        .select(VERTEX, CE, GRANULARITY, ELEM)
        .collect()
    )
    return build(
        [r.asDict() for r in vertex_rows],
        [r.asDict() for r in edge_rows],
        [(r[ID], r[ANCESTOR]) for r in anc_rows],
        [r.asDict() for r in member_rows],
        catalog=source.catalog,
        warnings=warnings,
        truncated=truncated,
    )


def _ids_frame(spark, ids: Sequence[str]):
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(ID, StringType(), False)])
    return F.broadcast(spark.createDataFrame([(i,) for i in ids], schema))


def _semi(df, column: str, ids):
    return df.join(ids.withColumnRenamed(ID, column), on=column, how="left_semi")


def membership(vertex: str, elem: str, ces: set[int], n_ce: int, single_granularity: bool) -> Rel:
    """How basic element `elem`, found in complex elements `ces` of `vertex`, relates to it.

    Definition 5.2: the vertex is UNDER the element when every one of its complex elements
    contains it (a Cell under its Row and its Column); the element is UNDER the vertex when the
    vertex is a union of single-granularity elements and `{elem}` is one of them (a File under a
    set of Files). Otherwise neither holds, and HAS_ELEMENT records the membership."""
    ce = tuple(sorted(ces))
    if len(ces) >= n_ce:
        return Rel(RelType.UNDER, vertex, elem, (("via", "element"), ("ce", ce)))
    if single_granularity:
        return Rel(RelType.UNDER, elem, vertex, (("via", "element"), ("ce", ce)))
    return Rel(RelType.HAS_ELEMENT, vertex, elem, (("ce", ce),))


def build(
    vertices: Sequence[dict],
    edges: Sequence[dict],
    ancestors: Sequence[tuple[str, str]],
    members: Sequence[dict],
    *,
    catalog=None,
    warnings: Sequence[str] = (),
    truncated: bool = False,
) -> Subgraph:
    """Pure: collected rows -> Subgraph (nodes sorted by id, relationships deduplicated)."""
    nodes: list[Node] = []
    for v in sorted(vertices, key=lambda r: r[ID]):
        label, schema = _type_info(catalog, v[TYPE])
        props = node_properties(v[ID], v[KIND], v[TYPE], v[N_CE], v.get(ATTRS), schema)
        nodes.append(Node(v[ID], v[KIND], v[TYPE], label, props))
    ids = {n.id for n in nodes}
    kinds = {n.id: n.kind for n in nodes}
    rels: dict[tuple, Rel] = {}

    def add(rel: Rel) -> None:
        rels.setdefault(rel.key, rel)

    for e in edges:
        s, p, d = e[SRC], e[PROCESS], e[DST]
        if s in ids and d in ids:
            add(Rel(RelType.DERIVED, s, d, (("via", p),)))
        if p in ids and kinds.get(p) == "process":
            if s in ids:
                add(Rel(RelType.FEEDS, s, p))
            if d in ids:
                add(Rel(RelType.EMITS, p, d))
    for x, a in sorted(nearest_containers((x, a) for x, a in ancestors if x in ids and a in ids)):
        add(Rel(RelType.UNDER, x, a, (("via", "parent"),)))
    ces: dict[tuple[str, str], set[int]] = {}
    for m in members:
        if m[VERTEX] in ids and m[ELEM] in ids:
            ces.setdefault((m[VERTEX], m[ELEM]), set()).add(int(m[CE]))
    shape = {v[ID]: (int(v[N_CE]), "+" not in v[TYPE]) for v in vertices}
    for (v, b), ce in sorted(ces.items()):
        rel = membership(v, b, ce, *shape[v])
        add(rel)
    ordered = sorted(rels.values(), key=lambda r: (r.type.value, r.src, r.dst, str(r.props.get("via"))))
    sg = Subgraph(tuple(nodes), tuple(ordered), tuple(warnings), truncated)
    return Subgraph(sg.nodes, sg.rels, tuple(warnings) + tuple(browser_warnings(sg)), truncated)


__all__ = ["TableSource", "extract", "build", "vertex_ids", "membership"]
