"""The component index (CCProv / CSProv): components, connected sets, set dependencies.

`build_index(st, params)` builds it from scratch; `update_index(st, params)` merges newly
ingested edges into only the affected components and sets (falling back to a full build when
there is no index yet). See docs/index.md for the layout and the split strategy.
"""

from store.index.build import (
    DEFAULT_BUCKETS,
    DEFAULT_THETA,
    IndexParams,
    build_index,
    compute_index,
)
from store.index.components import CCEngine, connected_components
from store.index.maintenance import update_index
from store.index.splits import Split, plan_splits

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_THETA",
    "CCEngine",
    "IndexParams",
    "Split",
    "build_index",
    "compute_index",
    "connected_components",
    "plan_splits",
    "update_index",
]
