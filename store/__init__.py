"""Strata's provenance store: multi-granularity model, Parquet storage, semantics.

Import `Store` from here; it is loaded on first use, so importing `store` (or `store.errors`)
imports no pyspark and starts no JVM. Importing `Store` or `store.model` imports pyspark (the
table schemas in `store.schema` are pyspark types) but starts no JVM until a session is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from store.errors import BundleError, StrataError, UserError

if TYPE_CHECKING:
    from store.store import CommitInfo, Store

__all__ = ["Store", "CommitInfo", "StrataError", "UserError", "BundleError"]


def __getattr__(name: str) -> Any:
    if name in ("Store", "CommitInfo"):
        from store import store as _store  # deferred: `import store` alone loads no table code

        return getattr(_store, name)
    raise AttributeError(name)
