"""Pebble's id associations P on the driver: the rows of ``assoc_frame`` and ``identity_frame``
(capture/storing/materialize.py, in Spark) computed from result rows already in this process,
plain Python (no pyspark: the DuckDB engine's trace backtraces through these).

One association: ``(oid, out_id, input, in_id, pos)`` -- ``pos`` the 1-based position for
flatten (in the flattened array), aggregation (in the group's collected list) and a semi join's
right items (among the row's collected matches, in no particular order), else None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from capture.operators import OperatorProv, Slot

OID, OUT_ID, INPUT, IN_ID, POS = "oid", "out_id", "input", "in_id", "pos"

Cond = tuple[int, str, int | None]  # (depth, column, value); value None: 0 or null (a first copy)


def slot_conds(slot: Slot, complete: bool = False) -> tuple[Cond, ...]:
    """The slot's row conditions: union sides, and first copies when only flattens repeated it
    (not when ``complete``: every copy is kept, so any subset of result rows yields all its rows)."""
    first = slot.first if slot.distinct and slot.first and not complete else ()
    return (*slot.when, *((d, c, None) for d, c in first))


def identity_rows(stored: Iterable[tuple], operators: Iterable[OperatorProv], result_oid: int,
                  result_ids: Iterable[int]) -> list[tuple]:
    """``capture.storing.materialize.identity_frame`` on the driver: ``stored`` holds the other operators' associations
    as :func:`assoc_rows` tuples, ``result_ids`` the result item ids; the identity operators'
    ⟨id, id⟩ rows as such tuples, each id once per operator."""
    ops = {o.oid: o for o in operators}
    succ: dict[int, list[tuple[int, int]]] = {}
    for o in ops.values():
        for j, inp in enumerate(o.inputs):
            succ.setdefault(inp.pred, []).append((o.oid, j))
    fed: dict[tuple[int, int], list[int]] = {}
    for oid, _out, k, in_id, _pos in stored:
        fed.setdefault((oid, k), []).append(in_id)
    result_ids = list(result_ids)
    memo: dict[int, list[int] | None] = {}

    def ids_of(k: int) -> list[int] | None:  # the ids out of identity op k (None: no successor says)
        if k not in memo:
            parts = [result_ids] if k == result_oid else []
            for s, j in succ.get(k, []):
                sub = ids_of(s) if ops[s].type.keeps_ids else fed.get((s, j), [])
                if sub is not None:
                    parts.append(sub)
            memo[k] = [i for part in parts for i in part] if parts else None
        return memo[k]

    out: list[tuple] = []
    for k in sorted(ops):
        ids = ids_of(k) if ops[k].type.keeps_ids else None
        out += [(k, i, 0, i, None) for i in dict.fromkeys(ids or ()) if i is not None]
    return out


def assoc_rows(rows: Iterable[Mapping], slots: Iterable[Slot]) -> list[tuple]:
    """``assoc_frame(df, slots, complete=True)`` for result rows already on the driver (dicts of
    the annotated result's columns, nested structs as dicts): every association those rows derive
    from, as ``(oid, out_id, input, in_id, pos)`` tuples (repeats possible)."""
    return [(oid, out_id, k, i, p) for oid, out_id, k, ids, pos in assoc_groups(rows, slots)
            for i, p in zip(ids, pos, strict=True)]


def assoc_groups(rows: Iterable[Mapping], slots: Iterable[Slot]) -> list[tuple]:
    """:func:`assoc_rows` grouped: ``(oid, out_id, input, in_ids, positions)`` per output item
    and slot, ``positions`` the ``pos`` of each of ``in_ids``. A group's members come as one list
    (the backtracer, which runs this over the matched rows only, steps them back together where
    positions do not count), not a tuple each."""
    out: list[tuple] = []
    for slot in dict.fromkeys(slots):
        conds = slot_conds(slot, complete=True)
        level = [r for r in rows if holds(r, conds, 0)]
        for depth, arr in enumerate(slot.nest, start=1):
            level = [e for r in level for e in (r.get(arr) or ()) if e is not None and holds(e, conds, depth)]
        k, id_col = slot.in_ref.input, slot.in_ref.id_col
        for r in level:
            out_id = r.get(slot.out_col)
            if out_id is None:
                continue
            if slot.array is not None:
                ids = r.get(slot.array) or ()  # bare ids, or structs (capture/tracking/grouping.py member)
                if isinstance(next((e for e in ids if e is not None), None), Mapping):
                    ids = [None if e is None else e.get(id_col) for e in ids]
                if None not in ids:  # the common case: every member at its position 1..n
                    out.append((slot.oid, out_id, k, ids, range(1, len(ids) + 1)))
                elif kept := [(p, i) for p, i in enumerate(ids, 1) if i is not None]:
                    out.append((slot.oid, out_id, k, [i for _, i in kept], [p for p, _ in kept]))
            elif (in_id := r.get(id_col)) is not None:
                pos = r.get(slot.pos_col) if slot.pos_col else None
                out.append((slot.oid, out_id, k, [in_id], [None if pos is None else pos + 1]))
    return out


def holds(row: Mapping, conds: tuple[Cond, ...], depth: int) -> bool:
    """Whether ``row`` (at nesting ``depth``) meets the conditions of that depth."""
    return all(row.get(col) == value for d, col, value in conds if d == depth)
