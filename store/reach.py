"""What a lineage is, engine-neutral: the methods, the answer (`Lineage`) and the in-memory
search both engines run over the triples they read (store/lineage.py says how a lineage is
answered; store/duckdb/lineage.py and store/spark/lineage.py answer it)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from store.engine import Choice
from store.errors import UserError
from store.index import layout as L
from store.schema import DST, SRC

DEFAULT_TAU = 200_000  # triples collected to the driver through Spark at most (CSProv's τ)
# On the local engine the scope is read by pyarrow straight into an Arrow table and searched
# vectorized (no Spark collect), so the driver can take ten times as many by default.
DEFAULT_LOCAL_TAU = 2_000_000

Triple = tuple[str, str, str]


class Method(str, enum.Enum):
    AUTO = "auto"
    RQ = "rq"
    CC = "cc"
    CS = "cs"


class Direction(str, enum.Enum):
    BACKWARD = "backward"
    FORWARD = "forward"


@dataclass(frozen=True, slots=True)
class Lineage:
    """The answer to one lineage query (`engine`: which engine answered and why; not compared)."""

    item: str
    direction: Direction
    nodes: tuple[str, ...]  # ancestors (backward) or descendants (forward), sorted
    edges: tuple[Triple, ...]  # (src, dst, op), sorted
    method: Method
    triples_read: int
    warnings: tuple[str, ...] = field(default=())
    engine: Choice | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        key = "ancestors" if self.direction is Direction.BACKWARD else "descendants"
        return {
            "item": self.item,
            "direction": self.direction.value,
            key: list(self.nodes),
            "edges": [{"src": s, "dst": d, "op": o} for s, d, o in self.edges],
            "method": self.method.value,
            "triples_read": self.triples_read,
        }


# ---------------------------------------------------------------------------- driver-side search
def reach(triples: Iterable[Triple], item: str, depth: int | None = None,
          forward: bool = False) -> tuple[set[str], set[Triple]]:
    """Driver-side RQ over collected triples: (values reached, triples on the paths)."""
    step: dict[str, list[Triple]] = {}
    for t in triples:
        step.setdefault(t[0] if forward else t[1], []).append(t)
    return walk(lambda frontier: [t for v in frontier for t in step.get(v, ())], item, depth, forward)


def reach_table(table, item: str, depth: int | None = None,
                forward: bool = False) -> tuple[set[str], set[Triple]]:
    """`reach` over a pyarrow Table[src, dst, op]: each level is one vectorized `is_in` over the
    table, and only the triples on the paths become Python tuples."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: only this path needs pyarrow

    key = table.column(SRC if forward else DST)

    def expand(frontier: list[str]) -> list[Triple]:
        hop = table.filter(pc.is_in(key, value_set=pa.array(frontier, pa.string())))
        return list(zip(*(hop.column(c).to_pylist() for c in (SRC, DST, "op")), strict=True))

    return walk(expand, item, depth, forward)


def walk(expand, item: str, depth: int | None, forward: bool) -> tuple[set[str], set[Triple]]:
    """Level-by-level search; `expand(frontier)` returns the triples leaving the frontier."""
    if depth is not None and depth < 0:
        raise UserError(f"--depth must be 0 or more, got {depth}")
    seen, found, edges = {item}, set(), set()
    frontier, level = [item], 0
    while frontier and (depth is None or level < depth):
        hop = expand(frontier)
        edges.update(hop)
        reached = {t[1] if forward else t[0] for t in hop}
        found |= reached
        frontier = list(reached - seen)  # order is irrelevant to every expand
        seen |= reached
        level += 1
    return found, edges


def resolve_method(method: Method, indexed: bool, warnings: tuple[str, ...]) -> Method:
    """`auto` as CS when the index is current, else RQ; CC and CS without a current index are a
    UserError saying why."""
    if method in (Method.CC, Method.CS) and not indexed:
        raise UserError(f"method '{method.value}' needs the component index: "
                        + (warnings[0] if warnings else "it is missing"),
                        hint="run `strata index` first, or use --method rq")
    return method if method is not Method.AUTO else (Method.CS if indexed else Method.RQ)


def unknown(item: str) -> UserError:
    return UserError(f"unknown item '{item}': it is in no triple and no vertex of the store",
                     hint="item ids are case-sensitive; `strata query` can list them")


# ---------------------------------------------------------------------------- components


def index_warning(st) -> str | None:
    """None when the component index covers every committed edge, else why it cannot be used
    (read from the manifest: no Spark, no file)."""
    meta = st.meta(L.META_KEY)
    if not meta:
        return "no component index yet: run `strata index`"
    if list(L.edge_segments(st)) != list(meta.get("edges_segments", [])):
        return "the component index is older than the last ingest: run `strata index` to update it"
    return None
