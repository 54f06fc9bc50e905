"""The component index (CCProv / CSProv): components, connected sets, set dependencies, influence
scopes; its layout, parameters and driver-side reads, shared by both engines. Building it:
`store.indexing.build_index` / `update_index` (docs/index.md); the builders are in the engines'
wings (store/duckdb/index.py, store/spark/index/).
"""

from store.index.params import DEFAULT_BUCKETS, DEFAULT_THETA, CCEngine, IndexParams, params_from_meta
from store.index.splits import Split, plan_splits

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_THETA",
    "CCEngine",
    "IndexParams",
    "Split",
    "params_from_meta",
    "plan_splits",
]
