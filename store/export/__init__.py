"""Export a bounded subgraph of the store: Neo4j (push, .cypher, CSV) and an HTML picture."""

from store.export.property_graph import (
    BROWSER_INITIAL_NODE_DISPLAY,
    BROWSER_MAX_NEIGHBOURS,
    DEFAULT_MAX_NODES,
    Node,
    Rel,
    RelType,
    Subgraph,
)
from store.export.subgraph import build, extract

__all__ = [
    "BROWSER_INITIAL_NODE_DISPLAY",
    "BROWSER_MAX_NEIGHBOURS",
    "DEFAULT_MAX_NODES",
    "Node",
    "Rel",
    "RelType",
    "Subgraph",
    "build",
    "extract",
]
