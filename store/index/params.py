"""How the component index is built (its parameters, kept in the index's manifest meta), for
both engines' builders."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from store.errors import UserError

DEFAULT_THETA = 25_000  # CSProv's θ (nodes)
DEFAULT_BUCKETS = 16


class CCEngine(str, enum.Enum):
    """Which connected-components implementation to run."""

    AUTO = "auto"
    GRAPHFRAMES = "graphframes"
    STARS = "stars"


@dataclass(frozen=True, slots=True)
class IndexParams:
    """How to build the index. `splits`: user-given top-level splits (lists of tables)."""

    theta: int = DEFAULT_THETA
    bands: int = 3
    splits: tuple[tuple[str, ...], ...] | None = None
    engine: CCEngine = CCEngine.AUTO
    buckets: int = DEFAULT_BUCKETS

    def __post_init__(self) -> None:
        if self.theta < 2:
            raise UserError(f"theta must be at least 2 nodes, got {self.theta}")
        if self.buckets < 1:
            raise UserError(f"buckets must be at least 1, got {self.buckets}")
        if self.bands < 1:
            raise UserError(f"bands must be at least 1, got {self.bands}")


def params_from_meta(meta: dict, **overrides) -> IndexParams:
    splits = meta.get("user_splits")
    base = IndexParams(
        theta=int(meta["theta"]), bands=int(meta["bands"]), buckets=int(meta["buckets"]),
        splits=tuple(tuple(s) for s in splits) if splits else None,
        engine=CCEngine(meta.get("engine", "auto")),
    )
    fields = {f: getattr(base, f) for f in IndexParams.__slots__}
    fields.update({k: v for k, v in overrides.items() if v is not None})
    return IndexParams(**fields)
