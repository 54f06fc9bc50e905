"""Plain data of Pebble's lightweight operator provenance (Definition 5.1), no Spark here.

An operator's provenance is the 5-tuple <oid, type, I, M, P>:

* ``oid`` and ``type`` (an :class:`OpType`),
* ``I``: one :class:`OpInput` per input -- the predecessor operator and the schema-level
  paths the operator *accessed* on that input (``None`` = undefined, the paper's ⊥),
* ``M``: the *manipulated* path pairs (input path -> output path; ``None`` = ⊥),
* ``P``: the item-level id associations. They live in Spark (the hidden id columns of a
  tracked DataFrame); :class:`Slot` says where to find them. Operators that keep item
  identity (:data:`IDENTITY_TYPES`) have no slot: their ⟨id, id⟩ rows are derived.

Paths are dotted strings over the schema; ``[pos]`` stands for "every position" of an
array (the paper's placeholder) and ``[n]`` for a literal 1-based position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum

POS = "[pos]"
AGAIN = "~"  # column_paths: the n-th column of a name an operator's output already has is `name~n`
_AGAIN = re.compile(r"(.+)~([2-9]|[1-9][0-9]+)")


def column_paths(names: Iterable[str]) -> list[str]:
    """The top-level path of each column of an operator's output, by position: the column's name,
    but for a name an earlier column already has (the two sides of a join both have an ``a``):
    ``a~2`` for the second column named ``a``, ``a~3`` for the third …, skipping a name another
    column has. Spark tells such columns apart by their attribute ids; the paths do by position."""
    names = list(names)
    taken, seen, last = set(names), set(), {}
    out = []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
            continue
        k = last.get(n, 1) + 1
        while f"{n}{AGAIN}{k}" in taken:
            k += 1
        last[n] = k
        taken.add(f"{n}{AGAIN}{k}")
        out.append(f"{n}{AGAIN}{k}")
    return out


def named_path(path: str) -> str:
    """A path under its column's name (``a~2.x`` -> ``a.x``: :func:`column_paths`)."""
    top, dot, rest = path.partition(".")
    m = _AGAIN.fullmatch(top)
    return f"{m.group(1)}{dot}{rest}" if m else path


class OpType(str, Enum):
    """Pebble's operator types (Table 5), plus the DataFrame operators Spark adds."""

    SOURCE = "source"
    FILTER = "filter"
    SELECT = "select"
    MAP = "map"  # opaque: Python UDFs, mapInPandas (access and manipulation undefined)
    FLATTEN = "flatten"
    JOIN = "join"
    UNION = "union"
    AGGREGATION = "aggregation"  # grouping + aggregation/nesting; also distinct
    SORT = "sort"
    LIMIT = "limit"

    @property
    def keeps_ids(self) -> bool:
        """Output id = input id for every item (filter, select, map, sort, limit). Their
        associations ⟨id, id⟩ are not stored: they are derived (capture/storing/materialize.py)."""
        return self in IDENTITY_TYPES


IDENTITY_TYPES = frozenset({OpType.FILTER, OpType.SELECT, OpType.MAP, OpType.SORT, OpType.LIMIT})


@dataclass(frozen=True, slots=True)
class Access:
    """A schema-level path accessed on input number ``input`` of an operator."""

    input: int
    path: str

    def __post_init__(self) -> None:
        if self.input < 0 or not self.path:
            raise ValueError(f"bad access path {self!r}")


@dataclass(frozen=True, slots=True)
class Manipulation:
    """Input path ``src`` (on input ``input``) becomes output path ``dst``."""

    input: int
    src: str
    dst: str


@dataclass(frozen=True, slots=True)
class OpInput:
    """One entry of the paper's bag I: the predecessor and the paths accessed on it."""

    pred: int
    accessed: tuple[str, ...] | None  # None = undefined (⊥)


# what a join's detail ends with when capture records none of its right items: a semi or
# existence join's, the join of a filter's uncorrelated scalar subquery (capture/tracking/binary.py;
# the replay check reads such a join's right side whole)
UNRECORDED_RIGHT = " [right items not recorded]"


@dataclass(frozen=True, slots=True)
class OperatorProv:
    """Schema-level operator provenance; the id associations are materialized at write time."""

    oid: int
    type: OpType
    method: str  # the DataFrame method the user called, e.g. "withColumn"
    inputs: tuple[OpInput, ...]
    manipulated: tuple[Manipulation, ...] | None  # None = undefined (⊥)
    detail: str = ""  # human-readable: the analyzed Spark plan node, the source path
    dataset: str | None = None  # for sources: the dataset name ids are derived from

    def __post_init__(self) -> None:
        if self.oid < 1:
            raise ValueError(f"operator id must be >= 1, got {self.oid}")
        if self.type is OpType.SOURCE and self.inputs:
            raise ValueError(f"a source operator has no inputs, operator {self.oid} has {self.inputs}")

    @property
    def opaque(self) -> bool:
        return any(i.accessed is None for i in self.inputs) or self.manipulated is None


@dataclass(frozen=True, slots=True)
class InRef:
    """Where a slot finds the input id: column ``id_col`` of input number ``input``."""

    id_col: str
    input: int = 0


@dataclass(frozen=True, slots=True)
class Slot:
    """Where the id associations of operator ``oid`` sit in a tracked DataFrame.

    Rows are reached by exploding the hidden array columns in ``nest`` in order (one per
    aggregation, or semi join's matches, downstream of the operator); a condition ``(depth,
    column, value)`` in ``when`` keeps the rows of nesting level ``depth`` (0 = top) where the
    column has that value (the side of a union). Each row gives ``(out_id, input, in_id, pos)``.
    With ``array`` set the input ids are the ``in_ref.id_col`` fields of that hidden array of
    structs and ``pos`` is the 1-based array position (an aggregation's members, a semi join's
    matching right items); otherwise ``pos`` is column ``pos_col`` plus one (flatten) or null.
    ``distinct`` is set once a downstream
    operator may repeat rows. When only downstream flattens repeated them (no join, and no
    filter/limit/semi join after the repeating flatten), ``first`` names those flattens'
    position columns as ``(depth, column)``: the first copy of a row is the one where each is
    0 (or null: the ``_outer`` row of an empty array), so copies are dropped without a shuffle;
    ``first=None`` means they must be de-duplicated (``distinct``).
    """

    oid: int
    out_col: str
    in_ref: InRef
    nest: tuple[str, ...] = ()
    when: tuple[tuple[int, str, int], ...] = ()
    array: str | None = None
    pos_col: str | None = None
    distinct: bool = False
    first: tuple[tuple[int, str], ...] | None = ()

    def nested_in(self, array_col: str) -> Slot:
        """This slot, seen from the output of an aggregation that collected its rows."""
        return replace(
            self,
            nest=(array_col, *self.nest),
            when=tuple((d + 1, c, v) for d, c, v in self.when),
            first=None if self.first is None else tuple((d + 1, c) for d, c in self.first),
        )

    def repeated(self) -> Slot:
        """A downstream join may repeat the rows: de-duplicate them."""
        return self if (self.distinct and self.first is None) else replace(self, distinct=True, first=None)

    def repeated_by(self, pos_col: str) -> Slot:
        """A downstream flatten repeats the rows, once per position in ``pos_col``."""
        if self.distinct and self.first is None:
            return self
        return replace(self, distinct=True, first=(*(self.first or ()), (0, pos_col)))

    def filtered(self) -> Slot:
        """A downstream operator may drop rows (maybe a first copy): de-duplicate instead."""
        return replace(self, first=None) if self.distinct and self.first else self

    def only_when(self, col: str, value: int) -> Slot:
        return replace(self, when=((0, col, value), *self.when))

    def renamed(self, mapping: dict[str, str]) -> Slot:
        """Rename top-level hidden columns (the right side of a self-join)."""

        def r(name: str | None) -> str | None:
            return mapping.get(name, name) if name is not None else None

        when = tuple((d, r(c) if d == 0 else c, v) for d, c, v in self.when)
        first = None if self.first is None else tuple((d, r(c) if d == 0 else c) for d, c in self.first)
        if self.nest:
            return replace(self, nest=(r(self.nest[0]), *self.nest[1:]), when=when, first=first)
        return replace(
            self,
            first=first,
            out_col=r(self.out_col),
            in_ref=replace(self.in_ref, id_col=r(self.in_ref.id_col)),
            when=when,
            array=r(self.array),
            pos_col=r(self.pos_col),
        )
