"""Collect one bounded subgraph of the store for export.

Input: vertex ids (a list; or a Spark DataFrame, such as the result of a query Spark answered)
and a node budget. Only rows touching those ids are read back: at most `max_nodes` vertices, the
provenance edges among them (at most `max_rels`), and the containment pairs among them. The
reads run on the engine the store chooses (`Store.choose`, with the rows of the edges, vertices,
ancestors and complex tables they scan): DuckDB in this process on the local engine, Spark jobs
otherwise. Everything else (labels, relationship rules, containment reduction) is pure, in
`property_graph.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from store.engine import Choice, Engine
from store.errors import UserError, no_vertex_ids
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
    ANCESTORS,
    ATTRS,
    CE,
    COMPLEX,
    DST,
    EDGES,
    ELEM,
    ID,
    KIND,
    N_CE,
    PROCESS,
    SRC,
    TYPE,
    VERTEX,
    VERTICES,
)
from store.wings import engine_for

_SCANNED = (EDGES, VERTICES, ANCESTORS, COMPLEX)  # the tables extraction reads


class TableSource(Protocol):
    """What extraction needs of a store: `Store` has it all (a source without `choose` and
    `local` is read with Spark, through `table` and `spark`)."""

    catalog: Any

    def table(self, name: str): ...


def row_ids(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The vertex ids of rows already in this process (a local engine's result): the `id`
    column, the only column, or every column of strings (a column with no value but nulls
    counts as strings, as in `iql.Result.df`). Nulls are dropped."""
    cols = list(columns)
    if ID in cols or len(cols) == 1:
        i = cols.index(ID) if ID in cols else 0
        return [_text(r[i]) for r in rows if r[i] is not None]
    strings = [i for i in range(len(cols)) if _strings(r[i] for r in rows)]
    if not strings:
        raise no_vertex_ids(cols)
    return [r[i] for i in strings for r in rows if r[i] is not None]


def _strings(values: Iterable[Any]) -> bool:
    """True when the first non-null value is a string (or there is none)."""
    return next((isinstance(v, str) for v in values if v is not None), True)


def _text(value: Any) -> str:
    """A value as Spark's cast to string writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _type_info(catalog, key: str) -> tuple[str, dict[str, str]]:
    """(label, attribute schema) for a type key, from the catalog's display name."""
    info = None
    if catalog is not None:
        info = catalog.types.get(key)
    if info is None:
        return sanitize_label(key.replace("+", "_")), {}
    schema = {name: getattr(t, "value", str(t)) for name, t in info.attributes}
    return sanitize_label(info.name), schema


def choose_reader(source) -> Choice:
    """The engine extraction reads `source` with: the store's choice for the rows of the tables
    it scans (counted from Parquet footers, only when the local engine is possible)."""
    if not hasattr(source, "choose") or not hasattr(source, "local"):
        return Choice(Engine.SPARK, "the source has no local tables")
    first = source.choose(None)
    if first.engine is Engine.SPARK:
        return first
    tables = source.local()
    return source.choose(sum(tables.rows(name) for name in _SCANNED))


def extract(
    source: TableSource,
    ids,
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_rels: int | None = None,
) -> Subgraph:
    """The subgraph induced by the vertex ids `ids` (a sequence of ids, or a Spark DataFrame read
    by `store.spark.subgraph.vertex_ids`), at most `max_nodes` nodes: the given vertices (smallest ids first when
    there are more), then the processes of the provenance edges among them while the budget
    lasts. Reads with DuckDB or Spark as `choose_reader(source)` chooses; the answer is the same."""
    if max_nodes < 1:
        raise UserError(f"the node budget must be at least 1, got {max_nodes}", hint="--max-nodes 1000")
    max_rels = max_rels if max_rels is not None else 20 * max_nodes
    frame = type(ids).__name__ == "DataFrame" and type(ids).__module__.startswith("pyspark")
    choice = Choice(Engine.SPARK, "the ids are a Spark DataFrame") if frame else choose_reader(source)
    reader = engine_for(choice.engine).subgraph_reader(source, ids.sparkSession if frame else None)
    if frame:
        wanted = reader.first_ids(ids, max_nodes + 1)
    else:
        wanted = sorted({_text(i) for i in ids if i is not None})[: max_nodes + 1]
    warnings: list[str] = []
    truncated = len(wanted) > max_nodes
    if truncated:
        wanted = wanted[:max_nodes]
        warnings.append(
            f"more than {max_nodes} vertices were asked for; exporting the first {max_nodes} by id "
            "(raise the budget with --max-nodes, or narrow the query)"
        )
    edge_rows = reader.edges(wanted, max_rels + 1)
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
    every = sorted(node_set | set(extra))

    vertex_rows = reader.vertices(every)
    found = {r[ID] for r in vertex_rows}
    unknown = [i for i in wanted if i not in found]
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        warnings.append(f"{len(unknown)} id(s) are not vertices of the store and were skipped: {shown}")
    return build(
        vertex_rows,
        edge_rows,
        reader.ancestors(every),
        reader.members(every),
        catalog=source.catalog,
        warnings=warnings,
        truncated=truncated,
    )


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


__all__ = ["TableSource", "choose_reader", "extract", "build", "row_ids", "membership"]
