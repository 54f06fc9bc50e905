"""Splits of the workflow dependency graph (CSProv Section 3), planned in pure Python.

The workflow dependency graph G_wf has one node per table and an edge for every distinct
(src_table, dst_table) pair of the triples. A *split* is a weakly connected set of tables;
Algorithm 3 computes connected sets of a large component inside each split, and refines a set
that is still too large with the *sub-splits* of its split.

Automatic strategy (`plan_splits`): rank the tables by their longest distance from an input
table (cycles collapsed first), cut the ranks into `bands` contiguous bands of about equal
weight (values per table), and break each band into its weakly connected pieces: those are the
top-level splits. A split's sub-splits bisect its rank range the same way; a split of one rank
falls apart into single tables; a single table is a leaf (cannot be split further).
Cutting by rank keeps a value's close ancestors in the same or the next band, so a set-lineage
crosses few bands (CSProv criterion C2), and weakly connected splits mean the sets of one
split never depend on each other (criterion C1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from store.errors import UserError

UNKNOWN_TABLE = ""  # values whose table is not known form one pseudo-table
# The index meta lists the split plan and the workflow graph only up to this many tables: a store
# whose values have no table has one table per value, and the manifest is rewritten every commit.
PLAN_META_TABLES = 10_000


@dataclass(frozen=True, slots=True)
class Split:
    """A weakly connected set of tables, with the sub-splits used to refine it."""

    name: str
    tables: tuple[str, ...]
    children: tuple[Split, ...] = ()

    def __post_init__(self) -> None:
        if not self.tables:
            raise ValueError(f"split {self.name!r} has no tables")
        inner = [t for c in self.children for t in c.tables]
        if self.children and sorted(inner) != sorted(self.tables):
            raise ValueError(f"sub-splits of {self.name!r} do not partition its tables")

    @property
    def leaf(self) -> bool:
        return not self.children

    def walk(self) -> Iterable[Split]:
        yield self
        for child in self.children:
            yield from child.walk()

    def to_json(self) -> dict:
        return {"name": self.name, "tables": list(self.tables),
                "splits": [c.to_json() for c in self.children]}


@dataclass(frozen=True, slots=True)
class SplitRow:
    """Which split a table falls in at one refinement level (level 1 = top-level splits)."""

    table: str
    level: int
    split: str
    leaf: bool


def _ranks(tables: Sequence[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Longest-path rank from the inputs, with every cycle collapsed to one rank."""
    succ: dict[str, set[str]] = {t: set() for t in tables}
    for a, b in edges:
        if a != b:
            succ[a].add(b)
    comp = _scc(tables, succ)
    csucc: dict[int, set[int]] = {c: set() for c in set(comp.values())}
    indeg = dict.fromkeys(csucc, 0)
    for a, outs in succ.items():
        for b in outs:
            if comp[a] != comp[b] and comp[b] not in csucc[comp[a]]:
                csucc[comp[a]].add(comp[b])
                indeg[comp[b]] += 1
    rank = dict.fromkeys(csucc, 0)
    ready = sorted(c for c, d in indeg.items() if d == 0)
    while ready:
        c = ready.pop()
        for d in csucc[c]:
            rank[d] = max(rank[d], rank[c] + 1)
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    return {t: rank[comp[t]] for t in tables}


def _scc(tables: Sequence[str], succ: Mapping[str, set[str]]) -> dict[str, int]:
    """Strongly connected components (iterative Kosaraju); small graphs only (tables)."""
    order: list[str] = []
    seen: set[str] = set()
    for start in tables:
        if start in seen:
            continue
        stack = [(start, iter(sorted(succ[start])))]
        seen.add(start)
        while stack:
            node, it = stack[-1]
            nxt = next((n for n in it if n not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(sorted(succ[nxt]))))
    pred: dict[str, set[str]] = {t: set() for t in tables}
    for a, outs in succ.items():
        for b in outs:
            pred[b].add(a)
    comp: dict[str, int] = {}
    for i, start in enumerate(reversed(order)):
        if start in comp:
            continue
        todo = [start]
        comp[start] = i
        while todo:
            node = todo.pop()
            for p in pred[node]:
                if p not in comp:
                    comp[p] = i
                    todo.append(p)
    return comp


def _weak_pieces(tables: Sequence[str], edges: Sequence[tuple[str, str]],
                 ) -> list[tuple[tuple[str, ...], list[tuple[str, str]]]]:
    """Weakly connected pieces of the graph of `tables` and `edges` (both ends in `tables`), in
    a stable order, each with its edges: the cost grows with the tables and edges given."""
    parent = {t: t for t in tables}

    def find(t: str) -> str:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    pieces: dict[str, list[str]] = {}
    for t in sorted(tables):
        pieces.setdefault(find(t), []).append(t)
    inner: dict[str, list[tuple[str, str]]] = {}
    for a, b in edges:
        inner.setdefault(find(a), []).append((a, b))
    return sorted((tuple(p), inner.get(root, [])) for root, p in pieces.items())


def _bands(ranks: list[int], weight: Mapping[int, int], n: int) -> list[list[int]]:
    """Cut sorted distinct ranks into at most n contiguous bands of about equal weight."""
    total = sum(weight.get(r, 1) for r in ranks) or 1
    bands: list[list[int]] = [[]]
    acc = 0
    for r in ranks:
        if bands[-1] and acc >= total * len(bands) / n and len(bands) < n:
            bands.append([])
        bands[-1].append(r)
        acc += weight.get(r, 1)
    if len(bands) == 1 and len(ranks) > 1 and n > 1:  # always make progress
        bands = [ranks[:-1], ranks[-1:]]
    return bands


def _split(name: str, tables: Sequence[str], edges: Sequence[tuple[str, str]],
           rank: Mapping[str, int], weight: Mapping[str, int], n: int) -> list[Split]:
    """Cut `tables` into weakly connected splits over `n` rank bands, each refined recursively.

    `edges` are the workflow edges with both ends in `tables`: each level of the recursion
    passes a piece only its own edges, so a level costs what its tables and edges are (a store
    whose values have no table has as many tables as values)."""
    distinct = sorted({rank[t] for t in tables})
    if len(distinct) > 1:
        rweight: dict[int, int] = {}
        for t in tables:
            rweight[rank[t]] = rweight.get(rank[t], 0) + weight.get(t, 1)
        band_of = {r: i for i, b in enumerate(_bands(distinct, rweight, n)) for r in b}
        groups: dict[int, list[str]] = {}
        for t in tables:
            groups.setdefault(band_of[rank[t]], []).append(t)
        group_edges: dict[int, list[tuple[str, str]]] = {}
        for a, b in edges:
            if band_of[rank[a]] == band_of[rank[b]]:
                group_edges.setdefault(band_of[rank[a]], []).append((a, b))
        pieces = [p for i in sorted(groups) for p in _weak_pieces(groups[i], group_edges.get(i, []))]
    else:
        pieces = [((t,), []) for t in sorted(tables)]
    out = []
    for i, (piece, inner) in enumerate(pieces, 1):
        sub = f"{name}.{i}" if name else f"sp{i}"
        children = _split(sub, piece, inner, rank, weight, 2) if len(piece) > 1 else []
        out.append(Split(sub, tuple(sorted(piece)), tuple(children)))
    return out


def _within(tables: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    members = set(tables)
    return [(a, b) for a, b in edges if a in members and b in members]


def plan_splits(
    tables: Iterable[str],
    edges: Iterable[tuple[str, str]],
    weight: Mapping[str, int] | None = None,
    bands: int = 3,
    user: Sequence[Sequence[str]] | None = None,
) -> tuple[Split, ...]:
    """The top-level splits of the workflow dependency graph, each with its sub-split tree.

    `user` gives top-level splits explicitly (lists of tables); tables they leave out get
    automatic splits. Raises UserError for an unknown table or a table in two splits.
    """
    tables = sorted(set(tables))
    edges = sorted(set(_within(tables, list(edges))))
    weight = dict(weight or {})
    rank = _ranks(tables, edges)
    if not user:
        return tuple(_split("", tables, edges, rank, weight, max(1, bands)))
    known, taken, out = set(tables), set(), []
    for i, group in enumerate(user, 1):
        for t in group:
            if t not in known:
                raise UserError(f"split {i} names table {t!r}, which no triple belongs to",
                                hint="known tables: " + ", ".join(sorted(known)[:20]))
            if t in taken:
                raise UserError(f"table {t!r} is in two splits (split {i} and an earlier one)",
                                hint="splits must be disjoint")
            taken.add(t)
        name = f"sp{i}"
        children = _split(name, sorted(group), _within(group, edges), rank, weight, 2) if len(group) > 1 else []
        out.append(Split(name, tuple(sorted(group)), tuple(children)))
    rest = [t for t in tables if t not in taken]
    if rest:
        auto = _split("", rest, _within(rest, edges), rank, weight, 1)
        out += [Split(f"sp{len(user) + i}", s.tables, _rename(s.children, f"sp{len(user) + i}"))
                for i, s in enumerate(auto, 1)]
    return tuple(out)


def _rename(children: tuple[Split, ...], prefix: str) -> tuple[Split, ...]:
    return tuple(
        Split(f"{prefix}.{i}", c.tables, _rename(c.children, f"{prefix}.{i}"))
        for i, c in enumerate(children, 1)
    )


def split_rows(splits: Sequence[Split]) -> list[SplitRow]:
    """For each table and level, the split it lies in (a leaf split repeats at deeper levels)."""
    rows: list[SplitRow] = []
    depth = max((len(s.name.split(".")) for top in splits for s in top.walk()), default=1)

    def visit(s: Split, level: int) -> None:
        if s.leaf:
            for lv in range(level, depth + 1):
                rows.extend(SplitRow(t, lv, s.name, True) for t in s.tables)
            return
        rows.extend(SplitRow(t, level, s.name, False) for t in s.tables)
        for c in s.children:
            visit(c, level + 1)

    for top in splits:
        visit(top, 1)
    return rows


def plan_meta(splits: Sequence[Split], workflow: Sequence[tuple[str, str]]) -> dict:
    """The split plan and workflow graph as the index meta records them: in full when the plan
    has at most PLAN_META_TABLES tables, else only their sizes and a digest (an update that
    finds no `workflow` in the meta treats the plan as changed: Spark's maintenance then
    recomputes every split component, which equals a full build)."""
    n_tables = sum(len(s.tables) for s in splits)
    if n_tables <= PLAN_META_TABLES:
        return {"splits": [s.to_json() for s in splits], "workflow": [list(p) for p in workflow]}
    return {"plan_tables": n_tables, "plan_splits": sum(1 for top in splits for _s in top.walk()),
            "plan_workflow_edges": len(workflow)}


def split_levels(splits: Sequence[Split]) -> tuple[int, list[tuple[Split, int]]]:
    """The depth of the split tree and every split with its level (1 = top level): what
    `split_rows` lists row by row, without repeating a leaf's tables at every deeper level."""
    out: list[tuple[Split, int]] = []
    todo = [(s, 1) for s in reversed(splits)]
    while todo:
        s, level = todo.pop()
        out.append((s, level))
        todo += [(c, level + 1) for c in reversed(s.children)]
    return max((lv for _s, lv in out), default=1), out
