"""Item ids as Spark Column expressions (capture/ids.py holds the ids themselves, in plain Python):
a hidden column by name, an item's store element id, and the derived ids computed again
(:func:`hydrate`, the Spark form of ``capture.ids.hydrate_rows``). Tracking, storing and the
Spark side of reading runs use this module; tracing on the driver never does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from capture.ids import FLATTEN, JOIN, Derived, Level, arrays_below, levels_of


def named(name: str) -> Column:
    """The top-level column ``name`` as a Column, dots and backticks in it taken literally."""
    return F.col("`" + name.replace("`", "``") + "`")


def item_element_column(prefix: Column, item_id: Column) -> Column:
    """:func:`capture.ids.item_element_id` in Spark: ``prefix`` (a dataset element id) ``#`` the
    16 hex digits of the long column ``item_id``."""
    return F.concat(prefix, F.lit("#"), F.lpad(F.lower(F.hex(item_id)), 16, "0"))


def column(d: Derived, arg: Callable[[str], Column]) -> Column:
    """Derivation ``d`` as a Column, its arguments given by ``arg(name)``."""
    oid = F.lit(d.oid)
    if d.kind == FLATTEN:
        parent, pos = arg(d.args[0]), arg(d.args[1])
        cond, value = parent.isNotNull(), F.xxhash64(oid, parent, F.coalesce(pos, F.lit(-1)))
    elif d.kind == JOIN:
        left, right = arg(d.args[0]), arg(d.args[1])
        cond = left.isNotNull() | right.isNotNull()
        value = F.xxhash64(oid, F.coalesce(left, F.lit(-1)), F.coalesce(right, F.lit(-1)))
    else:
        side = arg(d.args[0]).cast("int")
        cond = side.isNotNull()
        value = F.xxhash64(oid, side, F.when(side == 0, arg(d.args[1])).otherwise(arg(d.args[2])))
    for c, v in d.when:
        cond = cond & (arg(c) == F.lit(v))
    return F.when(cond, value)


def resolver(level: Level, get: Callable[[str], Column],
             have: Callable[[str], bool] = lambda n: False) -> Callable[[str], Column]:
    """``resolve(name)``: column ``name`` of one level -- ``get(name)`` when it is stored (or
    ``have(name)``), else its derivation (each computed once, over the resolved arguments)."""
    done: dict[str, Column] = {}

    def resolve(name: str) -> Column:
        if name in done:
            return done[name]
        alts = level.get(name)
        if not alts or have(name):
            return get(name)
        cols = [column(d, resolve) for d in alts]  # a column from both sides of a union: either holds
        done[name] = cols[0] if len(cols) == 1 else F.coalesce(*cols)
        return done[name]

    return resolve


def hydrate(df, derived: Iterable[Derived]):
    """``df`` with every derived column it lacks added back: top-level columns at the end, fields
    of collected arrays appended to their structs (``transform``). Columns and fields ``df``
    already has are kept. No job runs."""
    levels = levels_of(derived)

    def fill(get: Callable[[str], Column], prefix: tuple[str, ...], schema: StructType) -> dict[str, Column]:
        level = levels.get(prefix, {})
        names = set(schema.fieldNames())
        resolve = resolver(level, get, lambda n: n in names)
        out = {name: resolve(name) for name in level if name not in names}
        for arr in arrays_below(levels, prefix):
            elem = schema[arr].dataType.elementType if arr in names else None
            if isinstance(elem, StructType) and _missing(elem, (*prefix, arr)):
                out[arr] = F.transform(get(arr), _member(prefix=(*prefix, arr), schema=elem))
        return out

    def _member(prefix: tuple[str, ...], schema: StructType) -> Callable[[Column], Column]:
        def struct_of(m: Column) -> Column:  # one argument: pyspark's transform counts them
            for name, c in fill(m.getField, prefix, schema).items():
                m = m.withField(name, c)
            return m

        return struct_of

    def _missing(schema: StructType, prefix: tuple[str, ...]) -> bool:
        names = set(schema.fieldNames())
        if any(n not in names for n in levels.get(prefix, {})):
            return True
        return any(arr in names and isinstance(e := schema[arr].dataType.elementType, StructType)
                   and _missing(e, (*prefix, arr)) for arr in arrays_below(levels, prefix))

    if not levels or not _missing(df.schema, ()):
        return df
    return df.withColumns(fill(lambda n: F.col(f"`{n}`"), (), df.schema))
