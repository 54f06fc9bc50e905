"""Structural backtracing (Pebble Section 6, Algorithms 1-4): from matched result items to inputs.

The backtracing structure B (Definition 6.2) is a bag of ``(item id, tree)``; a tree (Definition
6.3) holds attribute paths, each node with the operators that accessed (A) and manipulated (M)
it and whether it *contributes* to the queried items or only *influences* them. Stepping back
through an operator undoes its manipulations (``manipulatePath``) and records its accesses
(``accessPath``), operator by operator, until every tree sits on a source dataset.

The core (:func:`backtrace`) is pure Python over the operators' schema-level provenance and a
``fetch(oid, ids)`` callback returning the id associations of just those output items.
:func:`backtrace_rows` backtraces the matched rows either engine's wing brings to the driver
(capture/tracing/spark/, capture/tracing/duckdb/): it derives the associations of the matched
rows alone from their hidden columns -- never the full provenance of an operator; operators that
keep ids (filter, select, map, sort, limit: in id = out id) need no association at all. The
entry points over a store, :func:`trace` and :func:`describe`, are in capture/tracing/entry.py.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple

import numpy as np

from capture.ids import item_element_id
from capture.operators import POS, OperatorProv, OpType
from capture.storing.associations import assoc_groups

Path = tuple[str, ...]
AssocRow = tuple[int, int, int, int | None]  # out_id, input, in_id, pos
Fetch = Callable[[int, list[int]], Iterable[AssocRow]]

_PATH_PRESERVING = frozenset({OpType.FILTER, OpType.SORT, OpType.LIMIT, OpType.UNION})


def split(path: str) -> Path:
    return tuple(path.split(".")) if path else ()


def join_path(path: Path) -> str:
    return ".".join(path)


@dataclass(slots=True)
class _Node:
    contrib: bool
    accessed: set[int] = field(default_factory=set)
    manipulated: set[int] = field(default_factory=set)

    def copy(self) -> _Node:
        return _Node(self.contrib, set(self.accessed), set(self.manipulated))


Tree = dict[Path, _Node]


def _merge_node(tree: Tree, path: Path, node: _Node) -> None:
    old = tree.get(path)
    if old is None:
        tree[path] = node
    else:
        old.contrib = old.contrib or node.contrib
        old.accessed |= node.accessed
        old.manipulated |= node.manipulated


def merge_trees(a: Tree, b: Tree) -> Tree:
    out = {p: n.copy() for p, n in a.items()}
    for p, n in b.items():
        _merge_node(out, p, n.copy())
    return out


def _seg_match(pattern: str, seg: str) -> bool:
    return pattern == seg or (pattern == POS and seg.startswith("[") and seg.endswith("]"))


def _is_prefix(prefix: Path, path: Path) -> bool:
    return len(prefix) <= len(path) and all(_seg_match(p, s) for p, s in zip(prefix, path, strict=False))


def _subst_pos(path: Path, pos: int | None, before: Path | None = None) -> Path:
    """Replace the first ``[pos]`` (the one right after ``before``, if given) by ``[pos]``."""
    if pos is None:
        return path
    for i, seg in enumerate(path):
        if seg == POS and (before is None or path[:i] == before):
            return (*path[:i], f"[{pos}]", *path[i + 1:])
    return path


def manipulate(tree: Tree, pairs: list[tuple[Path, Path]], oid: int, keep_unmatched: bool) -> tuple[Tree, set[int]]:
    """manipulatePath for all pairs at once: output paths (dst) back to input paths (src).

    A node at or under a dst moves under its src (longest dst wins; several pairs with the same
    dst -- a value computed from several inputs -- copy it to each src). A node *above* a dst
    (a struct or collection the operator built) stands for all of it, so it maps to every src
    under it. Returns the new tree and the indices of the pairs that were used.
    """
    out: Tree = {}
    used: set[int] = set()
    for path, node in tree.items():
        below = [(i, s, d) for i, (s, d) in enumerate(pairs) if _is_prefix(d, path)]
        if below:
            longest = max(len(d) for _, _, d in below)
            hits = [(i, s, d) for i, s, d in below if len(d) == longest]
        else:
            hits = [(i, s, d) for i, (s, d) in enumerate(pairs) if len(path) < len(d) and _is_prefix(path, d)]
        if not hits:
            if keep_unmatched:
                _merge_node(out, path, node.copy())
            continue
        for i, src, dst in hits:
            used.add(i)
            new = (*src, *path[len(dst):]) if len(path) >= len(dst) else src
            n = node.copy()
            n.manipulated.add(oid)
            _merge_node(out, new, n)
    return out, used


def access(tree: Tree, path: Path, oid: int) -> None:
    """accessPath: mark the node at ``path`` and everything under it as accessed by ``oid``;
    a path not in the tree is added as an influencing (non-contributing) node."""
    hit = False
    for p, n in tree.items():
        if _is_prefix(path, p):
            n.accessed.add(oid)
            hit = hit or p == path
    if not hit:
        tree[path] = _Node(False, {oid}, set())


def step_back(op: OperatorProv, k: int, pos: int | None, tree: Tree) -> Tree | None:
    """Undo operator ``op`` on one tree, for input number ``k`` and association position ``pos``.
    Returns None when the item drops out of the provenance (an aggregation member whose nested
    position the question does not reference)."""
    oid = op.oid
    if op.manipulated is None:  # map: opaque, every node counts as manipulated
        new = {p: n.copy() for p, n in tree.items()}
        for n in new.values():
            n.manipulated.add(oid)
    else:
        pairs = [(split(m.src), split(m.dst)) for m in op.manipulated if m.input == k]
        if op.type is OpType.FLATTEN:
            pairs = [(_subst_pos(s, pos), d) for s, d in pairs]
        nested: list[Path] = []
        if op.type is OpType.AGGREGATION:
            nested = [d[: d.index(POS)] for _, d in pairs if POS in d]
            pairs = [(s, _subst_pos(d, pos)) for s, d in pairs]
        new, used = manipulate(tree, pairs, oid, keep_unmatched=op.type in _PATH_PRESERVING)
        if op.type is OpType.AGGREGATION:
            positional = {i for i, (_, d) in enumerate(pairs) if pos is not None and f"[{pos}]" in d}
            asks_nested = any(_is_prefix(n, p) for n in nested for p in tree)
            keep = bool(used & positional) if asks_nested and positional else bool(used)
            if not keep:
                return None
    accessed = op.inputs[k].accessed if k < len(op.inputs) else None
    flat_arrays = [s[: s.index(POS)] for m in (op.manipulated or ()) if POS in (s := split(m.src))]
    for a in accessed or ():
        path = split(a)
        if op.type is OpType.FLATTEN:
            for prefix in flat_arrays:
                path = _subst_pos(path, pos, prefix)
        access(new, path, oid)
    return new


# ---- the result ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TracedNode:
    path: str
    contributing: bool
    accessed: tuple[int, ...]
    manipulated: tuple[int, ...]

    @property
    def role(self) -> str:
        return "contributing" if self.contributing else "influencing"


class TracedItem(NamedTuple):  # a tuple: a trace of a large group makes one per member
    dataset: str
    item_id: int
    nodes: tuple[TracedNode, ...]  # every node, ancestors included, sorted by path

    def tree(self) -> dict:
        """The backtracing tree as nested JSON-able dicts."""
        root: dict = {"item": self.item_id, "dataset": self.dataset, "children": {}}
        for n in self.nodes:
            cur = root
            for seg in split(n.path):
                cur = cur["children"].setdefault(seg, {"children": {}})
            cur.update(role=n.role, accessed=list(n.accessed), manipulated=list(n.manipulated))
        return root


ROW_COLUMNS = ("dataset", "item_id", "path", "role", "accessed_by", "manipulated_by")  # Backtrace.rows()


@dataclass(frozen=True, slots=True)
class Backtrace:
    """The result of tracing: per input dataset, the traced items with their attribute trees."""

    items: tuple[TracedItem, ...]
    matched: int  # result items the pattern matched
    run: str | None = None  # the traced run (set by :func:`trace`)

    def datasets(self) -> list[str]:
        return sorted({i.dataset for i in self.items})

    def rows(self) -> list[tuple]:
        """One row per node (:data:`ROW_COLUMNS`): dataset, item id, path, role, accessing and
        manipulating operators."""
        return [(i.dataset, i.item_id, n.path, n.role, list(n.accessed), list(n.manipulated))
                for i in self.items for n in i.nodes]

    def paths(self, dataset: str, role: str | None = None) -> dict[int, set[str]]:
        """item id -> paths of that dataset (only ``role`` nodes, if given); leaves and inner nodes."""
        out: dict[int, set[str]] = {}
        for i in self.items:
            if i.dataset == dataset:
                out[i.item_id] = {n.path for n in i.nodes if role is None or n.role == role}
        return out

    def to_json(self) -> str:
        return json.dumps([i.tree() for i in self.items], indent=2)

    def render(self) -> str:
        """Indented trees, one per traced input item."""
        lines = []
        for item in self.items:
            lines.append(item_element_id(item.dataset, item.item_id))
            for n in item.nodes:
                depth = len(split(n.path))
                ops = []
                if n.accessed:
                    ops.append("accessed by " + ",".join(map(str, n.accessed)))
                if n.manipulated:
                    ops.append("manipulated by " + ",".join(map(str, n.manipulated)))
                extra = f"  ({'; '.join(ops)})" if ops else ""
                lines.append(f"{'  ' * depth}{split(n.path)[-1]}  [{n.role}]{extra}")
        return "\n".join(lines)


def _nodes(tree: Tree) -> tuple[TracedNode, ...]:
    """A traced item's nodes: the tree's, with every ancestor path, sorted by path."""
    full: Tree = {p: n.copy() for p, n in tree.items()}
    for p, n in tree.items():
        for i in range(1, len(p)):
            anc = full.setdefault(p[:i], _Node(False))
            anc.contrib = anc.contrib or n.contrib
    return tuple(
        TracedNode(join_path(p), n.contrib, tuple(sorted(n.accessed)), tuple(sorted(n.manipulated)))
        for p, n in sorted(full.items(), key=lambda kv: _sort_key(kv[0]))
    )


def _sort_key(path: Path) -> tuple:
    return tuple((0, int(s[1:-1]), "") if s[1:-1].isdigit() and s.startswith("[") else (1, 0, s) for s in path)


def _shape(tree: Tree) -> tuple:
    """A hashable value equal for equal trees (the key of step_back's memo)."""
    return tuple(sorted((p, n.contrib, tuple(sorted(n.accessed)), tuple(sorted(n.manipulated)))
                        for p, n in tree.items()))


def _uses_pos(op: OperatorProv) -> bool:
    """Whether :func:`step_back` through ``op`` depends on an association's position: only where
    a flatten's or an aggregation's paths hold a position segment (``[pos]`` or ``[n]``). Where
    it does not, the members of a group (every one at its own position) step back alike."""
    if op.type not in (OpType.FLATTEN, OpType.AGGREGATION) or op.manipulated is None:
        return False
    return any(seg.startswith("[") for m in op.manipulated for seg in (*split(m.src), *split(m.dst)))


# ---- Algorithm 1 ---------------------------------------------------------------------------
def backtrace(operators: Iterable[OperatorProv], result_oid: int, matched: Mapping[int, Iterable[str]],
              fetch: Fetch) -> Backtrace:
    """Trace the matched result items (id -> matched node paths, all contributing) back to every
    source dataset. ``fetch(oid, ids)`` returns ``(out_id, input, in_id, pos)`` rows of operator
    ``oid`` for exactly those output ids (only called for flatten, join, union, aggregation)."""
    ops = {o.oid: o for o in operators}
    if result_oid not in ops:
        raise ValueError(f"result operator {result_oid} is not among the operators")
    pending: dict[int, dict[int, Tree]] = {result_oid: {}}
    for item_id, paths in matched.items():
        pending[result_oid][item_id] = {split(p): _Node(True) for p in paths}
    done: dict[str, dict[int, Tree]] = {}  # dataset -> item id -> tree
    merged = _Merges()
    for oid in sorted(ops, reverse=True):  # predecessors always have smaller ids
        bag = pending.pop(oid, None)
        if not bag:
            continue
        op = ops[oid]
        if op.type is OpType.SOURCE:
            found = done.setdefault(op.dataset or f"op{oid}", {})
            if found.keys().isdisjoint(bag):
                found.update(bag)
                continue
            for item_id, tree in bag.items():
                found[item_id] = merged(found[item_id], tree) if item_id in found else tree
            continue
        # Many items have trees of the same shape, and many share one tree object (the members
        # of a group): step back once per (input, position, shape), and take each tree object's
        # shape once. The position only counts where the operator's paths use it; where it does
        # not, the items that reach one input from one tree go over together.
        memo: dict[tuple, Tree | None] = {}
        shapes: dict[int, tuple] = {}

        def stepped(k: int, pos: int | None, tree: Tree, op=op, memo=memo, shapes=shapes) -> Tree | None:
            shape = shapes.get(id(tree))
            if shape is None:
                shape = shapes[id(tree)] = _shape(tree)
            key = (k, pos, shape)
            if key not in memo:
                memo[key] = step_back(op, k, pos, tree)
            return memo[key]  # shared between items: trees are never changed once built

        together = _Together()  # (tree object, input) -> the ids it reaches there
        uses_pos = _uses_pos(op)  # never for an operator that keeps ids
        if op.type.keeps_ids:
            if len(set(map(id, bag.values()))) == 1:  # one tree for all (a group's members): no step per item
                together.ids(next(iter(bag.values())), 0).extend(bag)
            else:
                for item_id, tree in bag.items():
                    together.ids(tree, 0).append(item_id)
        elif not uses_pos and (groups := getattr(fetch, "groups", None)) is not None:
            for out_id, k, in_ids in groups(oid, sorted(bag)):  # a group's members at once
                if (tree := bag.get(out_id)) is not None:
                    together.ids(tree, k).extend(in_ids)
        else:
            for out_id, k, in_id, pos in fetch(oid, sorted(bag)):
                if (tree := bag.get(out_id)) is None:
                    continue
                if uses_pos:
                    _put(pending, op.inputs[k].pred, [in_id], stepped(k, pos, tree), merged)
                else:
                    together.ids(tree, k).append(in_id)
        for (tree, k), ids in together.groups():
            _put(pending, op.inputs[k].pred, ids, stepped(k, None, tree), merged)
    nodes: dict[int, tuple[TracedNode, ...]] = {}  # per tree object: items that share a tree share its nodes
    items: list[TracedItem] = []
    for d in sorted(done):  # by dataset, then item id; no Python step per item but the tuple
        found = done[d]
        ids = np.fromiter(found, dtype=np.int64, count=len(found))
        held = list(found.values())
        first, which = by_identity(held)
        shared = np.empty(len(first), dtype=object)
        for j, at in enumerate(first.tolist()):
            if id(held[at]) not in nodes:
                nodes[id(held[at])] = _nodes(held[at])
            shared[j] = nodes[id(held[at])]
        order = np.argsort(ids, kind="stable")
        fields = zip(repeat(d), ids[order].tolist(), shared[which[order]].tolist())
        items += map(tuple.__new__, repeat(TracedItem), fields)  # TracedItem(*f), without a Python call each
    return Backtrace(tuple(items), len(matched))


def by_identity(objects: list) -> tuple[np.ndarray, np.ndarray]:
    """The distinct objects of ``objects`` by identity (a group's members share one tree, and
    one node tuple): the index of each one's first place, and for every place the number of its
    object among them -- with numpy, not a Python step per place."""
    _, first, which = np.unique(np.fromiter(map(id, objects), dtype=np.int64, count=len(objects)),
                                return_index=True, return_inverse=True)
    return first, which.reshape(-1)


class _Together:
    """The items that reach one input of an operator from one tree object, gathered to step back
    once: ids per (tree object, input)."""

    def __init__(self) -> None:
        self._ids: dict[tuple[int, int], list[int]] = {}
        self._trees: dict[int, Tree] = {}

    def ids(self, tree: Tree, k: int) -> list[int]:
        """The list of ids that reach input ``k`` from ``tree`` (made on first use)."""
        ids = self._ids.get((id(tree), k))
        if ids is None:
            ids = self._ids[id(tree), k] = []
            self._trees[id(tree)] = tree
        return ids

    def groups(self) -> list[tuple[tuple[Tree, int], list[int]]]:
        return [((self._trees[t], k), ids) for (t, k), ids in self._ids.items()]


class _Merges:
    """merge_trees once per pair of tree objects: the items that reach an operator by the same
    two trees (the members of groups that meet again, e.g. a table's rows under several scalar
    subqueries) get one merged tree, shared as the trees it merges are. Each pair is held with its
    result, so no tree is freed and its id reused while the memo lives."""

    def __init__(self) -> None:
        self._done: dict[tuple[int, int], tuple[Tree, Tree, Tree]] = {}

    def __call__(self, a: Tree, b: Tree) -> Tree:
        hit = self._done.get((id(a), id(b)))
        if hit is None:
            hit = self._done[id(a), id(b)] = (a, b, merge_trees(a, b))
        return hit[2]


def _put(pending: dict[int, dict[int, Tree]], pred: int, ids: list[int], new: Tree | None, merged: _Merges) -> None:
    """Tree ``new`` (None: the items drop out) for items ``ids`` of operator ``pred``, merged into
    the trees they have there already."""
    if new is None:
        return
    target = pending.setdefault(pred, {})
    if target.keys().isdisjoint(ids):
        target.update(dict.fromkeys(ids, new))
        return
    for i in ids:
        target[i] = merged(target[i], new) if i in target else new


def below(ops: dict[int, OperatorProv], start: int) -> set[int]:
    """The ids of operator ``start`` and of every operator it reads from, directly or not."""
    seen, todo = set(), [start]
    while todo:
        oid = todo.pop()
        if oid in ops and oid not in seen:
            seen.add(oid)
            todo.extend(i.pred for i in ops[oid].inputs)
    return seen


def walk(operators: Iterable[OperatorProv], result_oid: int) -> list[tuple[OperatorProv, str]]:
    """The operators a backtrace from ``result_oid`` steps through (in that order), each with how:
    which ones read associations and which keep ids (their association rows are never read)."""
    ops = {o.oid: o for o in operators}
    seen = below(ops, result_oid)
    out = []
    for oid in sorted(seen, reverse=True):
        op = ops[oid]
        if op.type is OpType.SOURCE:
            how = f"source {op.dataset or f'op{oid}'}: traced items end here"
        elif op.type.keeps_ids:
            how = "keeps item ids: no associations read"
        else:
            how = "associations of the traced items only, from the matched rows' hidden columns"
        out.append((op, how))
    return out


# ---- from matched rows on the driver (both wings bring them) ----------------------------------
class GroupsFetcher:
    """A fetch over associations already on the driver, as :func:`assoc_groups` gives them
    (``oid, out_id, input, in_ids, positions``: those derived from the matched result rows).
    Called, it returns rows; :meth:`groups` returns each output item's members of one input as
    one list, for operators whose stepping back ignores positions."""

    def __init__(self, groups: Iterable[tuple]) -> None:
        self._by_op: dict[int, dict[int, list[tuple]]] = {}
        for oid, out_id, k, in_ids, pos in groups:
            self._by_op.setdefault(oid, {}).setdefault(out_id, []).append((k, in_ids, pos))

    def __call__(self, oid: int, ids: list[int]) -> list[AssocRow]:
        mine = self._by_op.get(oid, {})
        return [(i, k, in_id, p) for i in ids for k, in_ids, pos in mine.get(i, ())
                for in_id, p in zip(in_ids, pos, strict=True)]

    def groups(self, oid: int, ids: list[int]) -> list[tuple[int, int, list[int]]]:
        mine = self._by_op.get(oid, {})
        return [(i, k, in_ids) for i in ids for k, in_ids, _ in mine.get(i, ())]


def backtrace_rows(rows: list[dict], slots, operators, result_oid, t: dict) -> Backtrace:
    """Backtrace the matched rows of a run as either wing brings them to the driver (``id``,
    ``_paths`` and the hidden columns); records the ``associations`` and ``backtrace`` phases'
    seconds in ``t``."""
    with no_cyclic_gc():
        t1 = time.perf_counter()
        matched = {r["id"]: list(r["_paths"]) for r in rows}
        fetch = GroupsFetcher(assoc_groups(rows, slots))
        t["associations"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        out = backtrace(operators, result_oid, matched, fetch)
        t["backtrace"] = time.perf_counter() - t2
    return out


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused: a large trace builds hundreds of thousands of
    objects (items, trees, millions of rows; no cycles among them), and each collection would walk
    every one made so far (without the pause they took most of the time of a 150,000-item trace)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
