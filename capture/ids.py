"""Item ids, shared by tracking, storing and tracing: the hidden columns that carry them, their
names as store elements, and the ids computed again on read instead of stored.

* Hidden columns: a tracked DataFrame carries each item's id (and positions, union sides,
  collected member ids) in columns named ``__strata_*`` (:func:`is_hidden`) beside the visible ones.
* Element ids: in the multi-granularity model a source dataset is the element
  ``dataset:<name>`` (:func:`dataset_element_id`) and its item with id ``i`` the element
  ``dataset:<name>#<i as 16 hex digits>`` (:func:`item_element_id`, unsigned 64-bit; read back
  by :func:`parse_item_element_id`); an operator's output items are named the same way under
  the prefix of its output dataset (``capture.id_columns.item_element_column``, in Spark).
* Derived ids (PROVision's lazy provenance, docs/capture.md "Derived ids"): a flatten's, join's
  and union's output id is a hash of columns the annotated result already carries:
  ``xxhash64(oid, parent id, position)``, ``xxhash64(oid, left id, right id)``,
  ``xxhash64(oid, side, the side's id)``. Only the coordinates that cannot be recomputed --
  source ids, positions, union sides, aggregation ids -- are stored, and collected into an
  aggregation's member structs. A :class:`Derived` says how to compute one of the others;
  ``capture.id_columns.hydrate`` adds them back to a DataFrame (inside collected arrays too) and
  :func:`hydrate_rows` to rows on the driver (Spark's ``xxhash64`` with the ``xxhash`` package;
  capture/storing/assoc_columns.py ``hydrate_columns`` to whole Arrow tables),
  so the readers of the hidden columns (``capture.storing.materialize``, the backtracer) see
  every id column as the tracked pipeline defined it.

Plain Python: no pyspark here (the DuckDB engine's trace reads ids through this module); the
same ids as Spark Column expressions are in capture/id_columns.py.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass, replace

# ---- hidden columns ------------------------------------------------------------------------------
HIDDEN_PREFIX = "__strata_"


REPLAY_ID = "__strata_check_id"  # a replayed row's item id (capture/auto/replay.py, capture/tracing/checking.py)


def is_hidden(name: str) -> bool:
    """Whether column ``name`` is one of the hidden provenance columns."""
    return name.startswith(HIDDEN_PREFIX)


# ---- element ids ---------------------------------------------------------------------------------
DATASET_PREFIX = "dataset:"
_MASK = (1 << 64) - 1
_ITEM = re.compile(r"dataset:(?P<name>.+)#(?P<hex>[0-9a-fA-F]{16})")


def dataset_element_id(name: str) -> str:
    """The store element of source dataset ``name``: ``dataset:<name>``."""
    return DATASET_PREFIX + name


def item_hex(item_id: int) -> str:
    """The id part of an item element id: 16 lower-case hex digits, the id read as an unsigned
    64-bit number (where a dataset is already named, e.g. the rows of a heatmap)."""
    return f"{item_id & _MASK:016x}"


def item_element_ids(datasets, ids):
    """:func:`item_hex` for arrays: ``<dataset>#<16 hex digits>`` for each pair of ``datasets``
    (a pyarrow string array) and ``ids`` (a numpy int64 array of the same length), as a pyarrow
    string array, without a Python call per id."""
    import numpy as np  # deferred: the driver model alone needs numpy here
    import pyarrow as pa  # deferred: and pyarrow
    import pyarrow.compute as pc  # deferred: and pyarrow

    digits = np.frombuffer(b"".join(f"{b:02x}".encode() for b in range(256)), np.uint8).reshape(256, 2)
    big_endian = np.ascontiguousarray(np.asarray(ids, np.int64)).astype(">u8").view(np.uint8).reshape(-1, 8)
    text = np.ascontiguousarray(digits[big_endian].reshape(-1, 16))
    hexes = pa.array(text.view("S16").ravel(), pa.binary()).cast(pa.string())
    return pc.binary_join_element_wise(datasets, hexes, "#")


def operator_id(run: str, oid: int) -> str:
    """The store element of operator ``oid`` of captured run ``run``: ``<run>/op<oid>``
    (capture/storing/to_model.py; its output items are ``<run>/op<oid>/out#<hex>``)."""
    return f"{run}/op{oid}"


def item_element_id(dataset: str, item_id: int) -> str:
    """The store element of item ``item_id`` of source dataset ``dataset``:
    ``dataset:<name>#<16 lower-case hex digits>`` (:func:`item_hex`)."""
    return f"{dataset_element_id(dataset)}#{item_hex(item_id)}"


def parse_item_element_id(text: str) -> tuple[str, int]:
    """``(dataset, item id)`` of an :func:`item_element_id`; the id as Spark holds it (a signed
    64-bit long). Raises ValueError when ``text`` is not ``dataset:<name>#<16 hex digits>``."""
    m = _ITEM.fullmatch(text)
    if m is None:
        raise ValueError(f"not an item id: {text!r} (expected dataset:<name>#<16 hex digits>)")
    value = int(m["hex"], 16)
    return m["name"], value - (1 << 64) if value >= 1 << 63 else value


# ---- derived ids ---------------------------------------------------------------------------------
FLATTEN, JOIN, UNION = "flatten", "join", "union"


@dataclass(frozen=True, slots=True)
class Derived:
    """Hidden column ``col`` = ``xxhash64(oid, ...)`` over ``args`` (column names at its level):

    * flatten ``(parent, pos)``: ``xxhash64(oid, parent, coalesce(pos, -1))``;
    * join ``(left, right)``: ``xxhash64(oid, coalesce(left, -1L), coalesce(right, -1L))``;
    * union ``(side, left, right)``: ``xxhash64(oid, side, left if side = 0 else right)``.

    The value is null where the tracked pipeline held a null: on the other side's rows of a union
    the operator is below (``when``: the union's side column must hold this side's value), and
    where its input id is null (the missing side of an outer join). ``nest`` names the collected
    arrays it lives in, outermost first (as :class:`capture.operators.Slot`); ``when`` columns are at
    its own level."""

    col: str
    kind: str
    oid: int
    args: tuple[str, ...]
    nest: tuple[str, ...] = ()
    when: tuple[tuple[str, int], ...] = ()

    def nested_in(self, array_col: str) -> Derived:
        return replace(self, nest=(array_col, *self.nest))

    def only_when(self, side: str, value: int) -> Derived:
        """Below one side of a union: null on the other side's rows. (A field of a collected array
        needs no condition: on those rows the whole array is null.)"""
        return replace(self, when=((side, value), *self.when)) if not self.nest else self

    def renamed(self, mapping: dict[str, str]) -> Derived:
        """Rename top-level hidden columns (the right side of a self-join)."""
        if self.nest:
            return replace(self, nest=(mapping.get(self.nest[0], self.nest[0]), *self.nest[1:]))
        return replace(self, col=mapping.get(self.col, self.col), args=tuple(mapping.get(a, a) for a in self.args),
                       when=tuple((mapping.get(c, c), v) for c, v in self.when))


Level = dict[str, tuple[Derived, ...]]  # one level's derived columns: the alternatives for each


def top(derived: Iterable[Derived]) -> Level:
    """The top-level derivations by column name."""
    return levels_of(derived).get((), {})


def levels_of(derived: Iterable[Derived]) -> dict[tuple[str, ...], Level]:
    """The derivations by nesting (``Derived.nest``: () for the top level) and column name."""
    out: dict[tuple[str, ...], Level] = {}
    for d in dict.fromkeys(derived):
        level = out.setdefault(d.nest, {})
        level[d.col] = (*level.get(d.col, ()), d)
    return out


def arrays_below(levels: dict[tuple[str, ...], Level], prefix: tuple[str, ...]) -> list[str]:
    """The arrays one level below ``prefix`` that hold derived fields (at some depth)."""
    return list(dict.fromkeys(n[len(prefix)] for n in levels if len(n) > len(prefix) and n[:len(prefix)] == prefix))


# ---- on the driver -------------------------------------------------------------------------------
SEED = 42  # Spark's xxhash64 seed


def mix(seed: int, value: int | None, width: str) -> int:
    """One column of Spark's ``xxhash64``: XXH64 of the value's little-endian bytes (4 for
    byte/short/int, 8 for long) seeded with the hash so far; a null leaves the hash as it is."""
    import xxhash  # deferred: only this path needs xxhash

    if value is None:
        return seed
    h = xxhash.xxh64_intdigest(struct.pack(width, value), seed=seed & ((1 << 64) - 1))
    return h - (1 << 64) if h >= 1 << 63 else h


def _row_value(name: str, level: Level, row: dict) -> int | None:
    alts = level.get(name)
    if not alts or name in row:
        return row.get(name)
    return next((v for d in alts if (v := _derive(d, level, row)) is not None), None)


def _derive(d: Derived, level: Level, row: dict) -> int | None:
    if any(_row_value(c, level, row) != value for c, value in d.when):
        return None
    v = [_row_value(a, level, row) for a in d.args]
    h = mix(SEED, d.oid, "<i")
    if d.kind == FLATTEN:
        return None if v[0] is None else mix(mix(h, v[0], "<q"), -1 if v[1] is None else v[1], "<i")
    if d.kind == JOIN:
        if v[0] is None and v[1] is None:
            return None
        return mix(mix(h, -1 if v[0] is None else v[0], "<q"), -1 if v[1] is None else v[1], "<q")
    if v[0] is None:
        return None
    return mix(mix(h, v[0], "<i"), v[1] if v[0] == 0 else v[2], "<q")


def hydrate_rows(rows: list[dict], derived: Iterable[Derived]) -> list[dict]:
    """``capture.id_columns.hydrate`` for rows on the driver (dicts, nested structs as dicts), in place."""
    levels = levels_of(derived)
    if not levels:
        return rows

    def fill(objs: Iterable[dict], prefix: tuple[str, ...]) -> None:
        objs = [o for o in objs if o is not None]
        level = levels.get(prefix, {})
        for o in objs:
            for name in level:
                if name not in o:
                    o[name] = _row_value(name, level, o)
        for arr in arrays_below(levels, prefix):
            fill((e for o in objs for e in (o.get(arr) or ())), (*prefix, arr))

    fill(rows, ())
    return rows


# ---- as JSON (capture_runs.slots) ---------------------------------------------------------------
def to_json(derived: Iterable[Derived]) -> list[dict]:
    return [{"col": d.col, "kind": d.kind, "oid": d.oid, "args": list(d.args), "nest": list(d.nest),
             "when": [list(w) for w in d.when]} for d in derived]


def from_json(items: list[dict]) -> tuple[Derived, ...]:
    return tuple(Derived(i["col"], i["kind"], i["oid"], tuple(i["args"]), tuple(i["nest"]),
                         tuple((w[0], w[1]) for w in i["when"])) for i in items)
