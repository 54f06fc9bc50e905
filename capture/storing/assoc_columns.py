"""Pebble's id associations P computed column-wise from a store copy read with pyarrow: what
``assoc_rows`` and ``identity_rows`` (capture/storing/associations.py) give for the same rows,
as one numpy array of ``(oid, out_id, input, in_id)`` rows, without a Python object per id.

The model of a run (capture/storing/to_model.py ``driver_items``) needs no positions, so they
are left out. Only slots read straight off the top level of the copy are computed so —
an aggregation's collected members, a join's or a flatten's id columns — which is what most
runs hold (TPC-H Q1: one aggregation over 600,000 rows at scale factor 0.1); a slot under a
nesting or a condition (a union's side, an aggregation of an aggregation) and a copy with
derived ids leave the run to the row-wise path (:func:`columnar` says which).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from capture.operators import OperatorProv, Slot
from capture.storing.associations import slot_conds


def columnar(slots: Iterable[Slot], derived: Iterable) -> bool:
    """Whether :func:`assoc_columns` computes these slots (no nesting, no conditions, no
    derived ids in the copy)."""
    return not tuple(derived) and all(not s.nest and not slot_conds(s, complete=True) for s in slots)


def _ints(a) -> np.ndarray:
    return np.asarray(a.to_numpy(zero_copy_only=False), np.int64)


def assoc_columns(table: pa.Table, slots: Iterable[Slot]) -> np.ndarray:
    """``assoc_rows`` of every row of ``table`` (the copy's hidden columns) for ``slots``
    (:func:`columnar` ones), as an ``(n, 4)`` int64 array of ``(oid, out_id, input, in_id)``,
    repeats possible."""
    parts = [np.empty((0, 4), np.int64)]
    for slot in dict.fromkeys(slots):
        out = table.column(slot.out_col).combine_chunks()
        if slot.array is not None:
            lists = table.column(slot.array).combine_chunks()
            members = pc.list_flatten(lists)  # the members of non-null lists, in order
            in_ids = pc.struct_field(members, slot.in_ref.id_col) if len(members) else pa.array([], pa.int64())
            out_ids = out.take(pc.list_parent_indices(lists))
        else:
            in_ids, out_ids = table.column(slot.in_ref.id_col).combine_chunks(), out
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
            u = np.unique(got)
            out.append(np.stack([np.full(len(u), k, np.int64), u, np.zeros(len(u), np.int64), u], axis=1))
    return np.concatenate(out)
