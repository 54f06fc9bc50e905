"""Pebble's id associations P computed column-wise from a store copy read with pyarrow: what
``hydrate_rows`` (capture/ids.py), ``assoc_rows`` and ``identity_rows``
(capture/storing/associations.py) give for the same rows, as one numpy array of
``(oid, out_id, input, in_id)`` rows, without a Python object per id.

* :func:`hydrate_columns` adds the derived ids the copy left out (docs/capture.md, "Derived ids")
  at every nesting level: Spark's ``xxhash64`` over numpy arrays (:func:`mix_columns`, the
  ``xxhash`` package's XXH64 for 4- and 8-byte inputs written out for whole columns).
* :func:`assoc_columns` reads each slot's rows: the top level or, for a slot under aggregations,
  the members of their collected arrays, with the slot's conditions (a union's side) applied at
  each level.
* :func:`identity_columns` derives the identity operators' ⟨id, id⟩ rows.

The model of a run (capture/storing/to_model.py ``driver_items``) needs no positions, so they
are left out.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from capture.ids import FLATTEN, JOIN, SEED, Derived, arrays_below, levels_of, mix
from capture.operators import OperatorProv, Slot
from capture.storing.associations import slot_conds
from store.arrays import unique

# ---- Spark's xxhash64, column-wise ---------------------------------------------------------------
_P1, _P2, _P3 = np.uint64(11400714785074694791), np.uint64(14029467366897019727), np.uint64(1609587929392839161)
_P4, _P5 = np.uint64(9650029242287828579), np.uint64(2870177450012600261)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def mix_columns(seed: np.ndarray, values: np.ndarray, valid: np.ndarray, width: str) -> np.ndarray:
    """``capture.ids.mix`` for arrays: per row, XXH64 of the value's 4 (``"<i"``) or 8 (``"<q"``)
    little-endian bytes seeded with ``seed`` (uint64); where ``valid`` is false the seed is kept
    (a null leaves Spark's hash as it is). uint64 arithmetic wraps, as XXH64's does."""
    with np.errstate(over="ignore"):
        v = values.astype(np.int64).view(np.uint64)
        if width == "<i":
            h = seed + _P5 + np.uint64(4)
            h ^= (v & np.uint64(0xFFFFFFFF)) * _P1
            h = _rotl(h, 23) * _P2 + _P3
        else:
            h = seed + _P5 + np.uint64(8)
            h ^= _rotl(v * _P2, 31) * _P1
            h = _rotl(h, 27) * _P1 + _P4
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return np.where(valid, h, seed)


# ---- derived ids, column-wise --------------------------------------------------------------------
Col = tuple[np.ndarray, np.ndarray]  # (int64 values, validity)


def _col(arr: pa.Array) -> Col:
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), np.int64), valid


class _Level:
    """One nesting level's columns: the stored ones (a struct array's fields) and the derived
    ones, computed on first use (an argument may be derived too: a join of a join)."""

    def __init__(self, fields: dict[str, pa.Array], derived: dict[str, tuple[Derived, ...]], n: int):
        self.fields, self.derived, self.n, self.done = fields, derived, n, {}

    def value(self, name: str) -> Col:
        if name in self.done:
            return self.done[name]
        if name in self.fields:
            got = _col(self.fields[name])
        elif name in self.derived:
            got = None
            for d in self.derived[name]:  # the first alternative that holds a value
                v, ok = self._derive(d)
                got = (v, ok) if got is None else (np.where(got[1], got[0], v), got[1] | ok)
        else:
            got = (np.zeros(self.n, np.int64), np.zeros(self.n, bool))
        self.done[name] = got
        return got

    def _derive(self, d: Derived) -> Col:
        holds = np.ones(self.n, bool)
        for c, want in d.when:
            v, ok = self.value(c)
            holds &= ok & (v == want)
        args = [self.value(a) for a in d.args]
        h = np.full(self.n, mix(SEED, d.oid, "<i"), np.int64).view(np.uint64)  # the same for every row
        (v0, ok0), every = args[0], np.ones(self.n, bool)
        if d.kind == FLATTEN:
            v1, ok1 = args[1]
            h = mix_columns(mix_columns(h, v0, every, "<q"), np.where(ok1, v1, -1), every, "<i")
            valid = ok0
        elif d.kind == JOIN:
            (v1, ok1) = args[1]
            h = mix_columns(mix_columns(h, np.where(ok0, v0, -1), every, "<q"), np.where(ok1, v1, -1), every, "<q")
            valid = ok0 | ok1
        else:  # union: the side, then that side's id (a null id leaves the hash as it is)
            (v1, ok1), (v2, ok2) = args[1], args[2]
            left = v0 == 0
            h = mix_columns(mix_columns(h, v0, every, "<i"), np.where(left, v1, v2), np.where(left, ok1, ok2), "<q")
            valid = ok0
        return h.view(np.int64), valid & holds


def _fields(arr: pa.StructArray) -> dict[str, pa.Array]:
    return {arr.type.field(i).name: arr.field(i) for i in range(arr.type.num_fields)}


def _hydrate_struct(arr: pa.StructArray, levels, prefix: tuple[str, ...]) -> pa.StructArray:
    fields = _fields(arr)
    for name in arrays_below(levels, prefix):
        lists = fields.get(name)
        if lists is None:
            continue
        values = _hydrate_struct(lists.values, levels, (*prefix, name))
        fields[name] = type(lists).from_arrays(lists.offsets, values, mask=lists.is_null())
    level = levels.get(prefix, {})
    at = _Level(fields, level, len(arr))
    added = {}
    for name in level:
        if name not in fields:
            v, ok = at.value(name)
            added[name] = pa.array(v, pa.int64(), mask=~ok)
    fields.update(added)
    return pa.StructArray.from_arrays(list(fields.values()), names=list(fields), mask=arr.is_null())


def hydrate_columns(table: pa.Table, derived: Iterable[Derived]) -> pa.Table:
    """``hydrate_rows`` for a whole table: ``table`` with every derived id column added (inside
    the collected arrays too), as ``capture.id_columns.hydrate`` adds them in Spark."""
    levels = levels_of(derived)
    if not levels:
        return table
    top = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], names=table.column_names)
    return pa.Table.from_struct_array(_hydrate_struct(top, levels, ()))


def _ints(a) -> np.ndarray:
    return np.asarray(a.to_numpy(zero_copy_only=False), np.int64)


def _holds(level: pa.StructArray, conds, depth: int) -> pa.Array | None:
    """The rows of ``level`` (at nesting ``depth``) meeting the conditions of that depth
    (``associations.holds``), or None when there are none."""
    mask = None
    for d, col, value in conds:
        if d != depth:
            continue
        got = _field(level, col)
        c = pc.is_null(got) if value is None else pc.fill_null(pc.equal(got, value), False)
        mask = c if mask is None else pc.and_(mask, c)
    return mask


def _field(level: pa.StructArray, name: str) -> pa.Array:
    i = level.type.get_field_index(name)
    return level.field(i) if i >= 0 else pa.nulls(len(level), pa.int64())


def assoc_columns(table: pa.Table, slots: Iterable[Slot]) -> np.ndarray:
    """``assoc_rows`` of every row of ``table`` (the copy's hidden columns, derived ids added by
    :func:`hydrate_columns`) for ``slots``, as an ``(n, 4)`` int64 array of
    ``(oid, out_id, input, in_id)``, repeats possible."""
    top = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], names=table.column_names)
    parts = [np.empty((0, 4), np.int64)]
    for slot in dict.fromkeys(slots):
        conds = slot_conds(slot, complete=True)
        level = top
        for depth, arr in enumerate((None, *slot.nest)):
            if arr is not None:  # the next level: the non-null members of the collected arrays
                members = pc.list_flatten(_field(level, arr))
                level = members.filter(pc.is_valid(members))
            if (keep := _holds(level, conds, depth)) is not None:
                level = level.filter(keep)
        out = _field(level, slot.out_col)
        if slot.array is not None:
            lists = _field(level, slot.array)
            members = pc.list_flatten(lists)  # the members of non-null lists, in order
            parents = pc.list_parent_indices(lists)
            valid = pc.is_valid(members)
            members, parents = members.filter(valid), parents.filter(valid)
            if not pa.types.is_struct(members.type):  # bare ids (capture/tracking/grouping.py member)
                in_ids = members
            else:
                in_ids = _field(members, slot.in_ref.id_col) if len(members) else pa.array([], pa.int64())
            out_ids = out.take(parents)
        else:
            in_ids, out_ids = _field(level, slot.in_ref.id_col), out
        keep = pc.and_(pc.is_valid(in_ids), pc.is_valid(out_ids))
        in_ids, out_ids = _ints(in_ids.filter(keep)), _ints(out_ids.filter(keep))
        n = len(in_ids)
        parts.append(np.stack([np.full(n, slot.oid, np.int64), out_ids, np.full(n, slot.in_ref.input, np.int64),
                               in_ids], axis=1))
    return np.concatenate(parts)


def identity_columns(stored: np.ndarray, operators: Iterable[OperatorProv], result_oid: int,
                     result_ids) -> np.ndarray:
    """``identity_rows`` for :func:`assoc_columns`' array and the result ids (a pyarrow array):
    each identity operator's ⟨id, id⟩ rows, each id once per operator."""
    ops = {o.oid: o for o in operators}
    succ: dict[int, list[tuple[int, int]]] = {}
    for o in ops.values():
        for j, inp in enumerate(o.inputs):
            succ.setdefault(inp.pred, []).append((o.oid, j))
    ids = result_ids.combine_chunks() if isinstance(result_ids, pa.ChunkedArray) else result_ids
    result = _ints(ids.filter(pc.is_valid(ids)))
    memo: dict[int, np.ndarray | None] = {}

    def fed(s: int, j: int) -> np.ndarray:
        return stored[(stored[:, 0] == s) & (stored[:, 2] == j), 3]

    def ids_of(k: int) -> np.ndarray | None:  # the ids out of identity op k (None: no successor says)
        if k not in memo:
            parts = [result] if k == result_oid else []
            for s, j in succ.get(k, []):
                sub = ids_of(s) if ops[s].type.keeps_ids else fed(s, j)
                if sub is not None:
                    parts.append(sub)
            memo[k] = np.concatenate(parts) if parts else None
        return memo[k]

    out = [np.empty((0, 4), np.int64)]
    for k in sorted(ops):
        got = ids_of(k) if ops[k].type.keeps_ids else None
        if got is not None and len(got):
            u = unique(got)
            out.append(np.stack([np.full(len(u), k, np.int64), u, np.zeros(len(u), np.int64), u], axis=1))
    return np.concatenate(out)
