"""Hidden id columns that are functions of other hidden columns of the same row.

The id a flatten, join or union gives a row is a hash of hidden columns the row carries anyway:

* flatten ``xxhash64(oid, input id, coalesce(pos, -1))``   (capture/project.py)
* join    ``xxhash64(oid, coalesce(left id, -1), coalesce(right id, -1))``   (capture/binary.py)
* union   ``xxhash64(oid, side, id of that side)``   (capture/binary.py)

An aggregation collects ``struct(<hidden columns>)`` of every member, and that list is what its
shuffle moves; the derivable ids are left out of it and computed again from the collected fields
right after the aggregation (capture/grouping.py), so the shuffle carries the source ids,
positions and union sides only (T4 at 1M tweets: 4 of the 7 fields) while every reader still sees
the same struct. A derived id is null where the original was: on the other side of a union (the
slot's ``when``) and where the operator's input id is null (the missing side of an outer join).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from capture.model import OperatorProv, OpType, Slot

Getter = Callable[[str], Column]
Derivation = Callable[[Getter], Column]


def _guard(slot: Slot, get: Getter) -> Column | None:
    out = None
    for depth, col, value in slot.when:
        if depth == 0:
            c = get(col) == F.lit(value)
            out = c if out is None else out & c
    return out


def _flatten(slot: Slot) -> Derivation:
    def expr(get: Getter) -> Column:
        cur = get(slot.in_ref.id_col)
        value = F.xxhash64(F.lit(slot.oid), cur, F.coalesce(get(slot.pos_col), F.lit(-1)))
        cond = cur.isNotNull()
        side = _guard(slot, get)
        return F.when(cond if side is None else side & cond, value)

    return expr


def _join(left: Slot, right: Slot) -> Derivation:
    def expr(get: Getter) -> Column:
        lcur, rcur = get(left.in_ref.id_col), get(right.in_ref.id_col)
        value = F.xxhash64(F.lit(left.oid), F.coalesce(lcur, F.lit(-1)), F.coalesce(rcur, F.lit(-1)))
        cond = lcur.isNotNull() | rcur.isNotNull()
        side = _guard(left, get)
        return F.when(cond if side is None else side & cond, value)

    return expr


def _union(sides: list[Slot]) -> Derivation:
    def expr(get: Getter) -> Column:
        out = None
        for s in sides:
            n = s.in_ref.input
            value = F.xxhash64(F.lit(s.oid), F.lit(n), get(s.in_ref.id_col))
            cond = _guard(s, get)
            out = F.when(cond, value) if out is None else out.when(cond, value)
        return out

    return expr


def derivations(slots: tuple[Slot, ...], ops: Mapping[int, OperatorProv],
                hidden: list[str]) -> dict[str, Derivation]:
    """The top-level hidden columns of a tracked DataFrame that can be computed from its other
    hidden columns, in an order where each one's inputs come first (operator order)."""
    groups: dict[tuple[int, str], list[Slot]] = {}
    for s in slots:
        if not s.nest and s.array is None and s.out_col in hidden and s.out_col != s.in_ref.id_col:
            groups.setdefault((s.oid, s.out_col), []).append(s)
    out: dict[str, Derivation] = {}
    for (oid, col), group in sorted(groups.items()):
        kind = ops[oid].type
        group = sorted(group, key=lambda s: s.in_ref.input)
        if kind is OpType.FLATTEN and len(group) == 1 and group[0].pos_col in hidden:
            out[col] = _flatten(group[0])
        elif kind is OpType.JOIN and len(group) == 2:
            out[col] = _join(*group)
        elif kind is OpType.UNION and len(group) == 2 and all(s.when and s.when[-1][0] == 0 for s in group):
            out[col] = _union(group)
    needed = {c: {s.in_ref.id_col for s in slots if s.out_col == c} for c in out}
    # keep a derivation only when everything it reads is carried or derived before it
    kept: dict[str, Derivation] = {}
    for c, fn in out.items():
        if all(n in kept or (n in hidden and n not in out) for n in needed[c]):
            kept[c] = fn
    return kept


def rebuilt(member: Column, hidden: list[str], derived: Mapping[str, Derivation]) -> Column:
    """``struct(<hidden>)`` of a collected member whose struct holds only the carried fields."""
    values: dict[str, Column] = {}

    def get(name: str) -> Column:
        return values[name] if name in values else member.getField(name)

    for name, fn in derived.items():
        values[name] = fn(get)
    return F.struct(*[get(h).alias(h) for h in hidden])
