"""The exported property graph: nodes, relationships and the rules that shape them (pure).

A `Subgraph` is what every export target writes (Neo4j push, `.cypher` script, CSV for
`neo4j-admin`, the HTML picture). It is built once by `store.export.subgraph.extract` from a
bounded set of store vertices and never holds more than the node budget.

Graph model (docs/neo4j.md explains the choices):
- every node has the labels `Strata` (the label the uniqueness constraint is on), its kind
  (`Data` or `Process`) and its type (`Row`, `PigJob`, `Cell`, ...);
- `(:Data)-[:DERIVED {via}]->(:Data)` for a provenance edge (src, process, dst), `via` = process id;
- `(:Data)-[:FEEDS]->(:Process)-[:EMITS]->(:Data)` for the same edge when the process is exported;
- `(x)-[:UNDER {via: "parent"}]->(y)`: basic element y is the nearest container of x among the
  exported nodes; `(v)-[:UNDER {via: "element", ce}]->(b)` or `(b)-[:UNDER {via: "element", ce}]->(v)`
  where basic element b is part of complex element(s) `ce` of vertex v and Definition 5.2 makes
  one under the other; `(v)-[:HAS_ELEMENT {ce}]->(b)` for the remaining memberships.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from store.schema import DATA, PROCESS_KIND

# Neo4j Browser's defaults: it shows at most this many nodes of a result at first ...
BROWSER_INITIAL_NODE_DISPLAY = 300
# ... and expands at most this many neighbours of one node.
BROWSER_MAX_NEIGHBOURS = 100
DEFAULT_MAX_NODES = 1000

ROOT_LABEL = "Strata"
KIND_LABELS = {DATA: "Data", PROCESS_KIND: "Process"}
# Node properties Strata itself sets; attributes with these names get an `attr_` prefix.
RESERVED_PROPERTIES = ("id", "kind", "type", "n_ce")

PropValue = str | int | float | bool | tuple


class RelType(str, enum.Enum):
    DERIVED = "DERIVED"
    FEEDS = "FEEDS"
    EMITS = "EMITS"
    UNDER = "UNDER"
    HAS_ELEMENT = "HAS_ELEMENT"


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    kind: str
    type_key: str
    type_label: str
    properties: tuple[tuple[str, PropValue], ...]

    def __post_init__(self) -> None:
        if self.kind not in KIND_LABELS:
            raise ValueError(f"node {self.id!r}: kind must be one of {sorted(KIND_LABELS)}, got {self.kind!r}")
        if not _LABEL_RE.fullmatch(self.type_label):
            raise ValueError(f"node {self.id!r}: type label {self.type_label!r} is not a sanitized label")

    @property
    def labels(self) -> tuple[str, str, str]:
        return (ROOT_LABEL, KIND_LABELS[self.kind], self.type_label)

    @property
    def props(self) -> dict[str, PropValue]:
        return dict(self.properties)


@dataclass(frozen=True, slots=True)
class Rel:
    type: RelType
    src: str
    dst: str
    properties: tuple[tuple[str, PropValue], ...] = ()

    @property
    def props(self) -> dict[str, PropValue]:
        return dict(self.properties)

    @property
    def key(self) -> tuple:
        """What makes two relationships the same one (MERGE key): DERIVED also keys on `via`."""
        if self.type is RelType.DERIVED:
            return (self.type, self.src, self.dst, self.props.get("via"))
        return (self.type, self.src, self.dst)


@dataclass(frozen=True, slots=True)
class Subgraph:
    nodes: tuple[Node, ...]
    rels: tuple[Rel, ...]
    warnings: tuple[str, ...] = ()
    truncated: bool = False
    node_ids: frozenset[str] = field(default=frozenset(), init=False, compare=False)

    def __post_init__(self) -> None:
        ids = frozenset(n.id for n in self.nodes)
        if len(ids) != len(self.nodes):
            raise ValueError("subgraph: duplicate node ids")
        for r in self.rels:
            if r.src not in ids or r.dst not in ids:
                missing = r.src if r.src not in ids else r.dst
                raise ValueError(f"subgraph: {r.type.value} relationship refers to missing node {missing!r}")
        object.__setattr__(self, "node_ids", ids)

    def degree(self) -> dict[str, int]:
        deg = {n.id: 0 for n in self.nodes}
        for r in self.rels:
            deg[r.src] += 1
            if r.dst != r.src:
                deg[r.dst] += 1
        return deg


_LABEL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def sanitize_label(name: str) -> str:
    """A label made of letters, digits and `_` (so it needs no quoting anywhere): `(Row, Column)`
    becomes `Row_Column`; a leading digit gets a `T_` prefix."""
    out = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "Type"
    return out if _LABEL_RE.fullmatch(out) else "T_" + out


def convert_attr(value: str | None, declared: str | None) -> PropValue | None:
    """An attribute (stored as a string) as a typed property value, using the catalog's type;
    values that do not parse stay strings, so nothing is lost."""
    if value is None:
        return None
    try:
        if declared == "int":
            number = int(value)
            return number if -(2**63) <= number < 2**63 else value  # Neo4j integers are 64-bit
        if declared == "float":
            f = float(value)
            return f if math.isfinite(f) else value
        if declared == "bool" and value.lower() in ("true", "false"):
            return value.lower() == "true"
    except ValueError:
        return value
    return value


def node_properties(
    ident: str, kind: str, type_key: str, n_ce: int, attrs: Mapping[str, str] | None,
    schema: Mapping[str, str] | None = None,
) -> tuple[tuple[str, PropValue], ...]:
    props: dict[str, PropValue] = {"id": ident, "kind": kind, "type": type_key, "n_ce": n_ce}
    schema = schema or {}
    for key in sorted(attrs or {}):
        value = convert_attr(attrs[key], schema.get(key))
        if value is None:
            continue
        name = f"attr_{key}" if key in RESERVED_PROPERTIES else key
        props[name] = value
    return tuple(props.items())


def nearest_containers(pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Transitive reduction of a containment relation restricted to the exported nodes.

    `pairs` are (id, ancestor) with ancestor strictly containing id, both exported. Keeps
    (x, a) unless some exported b with (x, b) and (b, a) lies between them."""
    up: dict[str, set[str]] = {}
    for x, a in pairs:
        if x != a:
            up.setdefault(x, set()).add(a)
    out: set[tuple[str, str]] = set()
    for x, ancestors in up.items():
        for a in ancestors:
            if not any(a in up.get(b, ()) for b in ancestors if b != a):
                out.add((x, a))
    return out


def browser_warnings(sg: Subgraph) -> list[str]:
    """Warnings for what Neo4j Browser will not show with its default settings."""
    out: list[str] = []
    if len(sg.nodes) > BROWSER_INITIAL_NODE_DISPLAY:
        out.append(
            f"the subgraph has {len(sg.nodes)} nodes; Neo4j Browser draws only the first "
            f"{BROWSER_INITIAL_NODE_DISPLAY} of a result (initialNodeDisplay): query a part of it, "
            "or raise the limit with `:config initialNodeDisplay: 1000`"
        )
    busy = sorted((d, i) for i, d in sg.degree().items() if d > BROWSER_MAX_NEIGHBOURS)
    if busy:
        d, i = busy[-1]
        out.append(
            f"{len(busy)} node(s) have more than {BROWSER_MAX_NEIGHBOURS} relationships (e.g. "
            f"{i!r} with {d}); Neo4j Browser expands at most {BROWSER_MAX_NEIGHBOURS} neighbours "
            "(maxNeighbours): raise it with `:config maxNeighbours: 500`"
        )
    return out
