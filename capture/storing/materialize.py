"""Turn the hidden id columns of an annotated result into Pebble's id associations P.

One row per (output item, input item) pair of an operator:
``oid int, out_id long, input int, in_id long, pos int`` -- ``pos`` is the 1-based position
for flatten (in the flattened array), aggregation (in the group's collected list) and a semi
join's right items (among the row's collected matches, in no particular order), else null.
Slots at the same nesting level are read in one pass over the annotated result.

Operators that keep item identity (filter, select, map, sort, limit) have no slot: their
rows ⟨id, id⟩ are not stored but derived (:func:`identity_frame`) -- the ids an identity
operator passes on are exactly the input ids its successors' rows name (or, for the result
operator, the result's ids).

The same associations for rows already on the driver (``assoc_rows``, ``identity_rows``) are in
capture/storing/associations.py, without pyspark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from capture.operators import OperatorProv, Slot
from capture.storing.associations import IN_ID, INPUT, OID, OUT_ID, POS, Cond, slot_conds
from store.spark.frames import local_frame

ASSOC_SCHEMA = StructType(
    [
        StructField(OID, IntegerType(), False),
        StructField(OUT_ID, LongType(), False),
        StructField(INPUT, IntegerType(), False),
        StructField(IN_ID, LongType(), False),
        StructField(POS, IntegerType(), True),
    ]
)


def _cond(conds: Iterable[Cond], depth: int) -> Column | None:
    out = None
    for d, col, value in conds:
        if d == depth:
            c = F.coalesce(F.col(col), F.lit(0)) == F.lit(0) if value is None else F.col(col) == F.lit(value)
            out = c if out is None else out & c
    return out


def _descend(annotated: DataFrame, nest: tuple[str, ...], conds: tuple[Cond, ...]) -> DataFrame:
    """The rows at the nesting level of ``nest`` (conditions above that level applied)."""
    df = annotated
    for depth, arr in enumerate(nest):
        c = _cond(conds, depth)
        if c is not None:
            df = df.filter(c)
        df = df.select(F.explode(F.col(arr)).alias("_n")).select("_n.*")
    return df


def _array_rows(df: DataFrame, slot: Slot, complete: bool) -> DataFrame:
    """An aggregation slot: one row per member of each group's collected id list, with its position."""
    c = _cond(slot_conds(slot, complete), len(slot.nest))
    if c is not None:
        df = df.filter(c)
    bare = not isinstance(df.schema[slot.array].dataType.elementType, StructType)  # grouping.member
    df = df.select(F.col(slot.out_col).alias(OUT_ID), F.posexplode(F.col(slot.array)).alias("_p", "_e"))
    return df.select(
        F.lit(slot.oid).cast("int").alias(OID),
        OUT_ID,
        F.lit(slot.in_ref.input).cast("int").alias(INPUT),
        (F.col("_e") if bare else F.col("_e").getField(slot.in_ref.id_col)).alias(IN_ID),
        (F.col("_p") + 1).cast("int").alias(POS),
    )


def _flat_rows(df: DataFrame, slots: list[Slot], complete: bool) -> DataFrame:
    """Several flat slots of one nesting level in ONE pass: each row yields one association
    per slot whose condition holds (an explode over an array of per-slot structs)."""
    depth = len(slots[0].nest)
    structs = []
    for slot in slots:
        pos = (F.col(slot.pos_col) + 1).cast("int") if slot.pos_col else F.lit(None).cast("int")
        row = F.struct(
            F.lit(slot.oid).cast("int").alias(OID),
            F.col(slot.out_col).alias(OUT_ID),
            F.lit(slot.in_ref.input).cast("int").alias(INPUT),
            F.col(slot.in_ref.id_col).alias(IN_ID),
            pos.alias(POS),
        )
        c = _cond(slot_conds(slot, complete), depth)
        structs.append(F.when(c, row) if c is not None else row)
    if len(structs) == 1:
        return df.select(structs[0].alias("_a")).select("_a.*")
    return df.select(F.explode(F.array(*structs)).alias("_a")).select("_a.*")


def _level_rows(level: DataFrame, slots: list[Slot], array: bool, complete: bool) -> list[DataFrame]:
    """The associations of ``slots`` of one nesting level, without null ids: a pass per
    aggregation slot, one for the flat slots together."""
    parts = [_array_rows(level, m, complete) for m in slots] if array else \
        [_flat_rows(level, slots, complete)] if slots else []
    return [r.filter(F.col(OUT_ID).isNotNull() & F.col(IN_ID).isNotNull()) for r in parts]


def assoc_frame(annotated: DataFrame, slots: Iterable[Slot], complete: bool = False) -> DataFrame:
    """All id associations recorded in ``annotated`` (columns as ``ASSOC_SCHEMA``).

    Slots at the same nesting level are read in one pass. Rows a later flatten repeated keep
    only their first copy (a filter); rows a later join repeated (or a flatten followed by a
    filter) are de-duplicated, in one shuffle per level. An operator whose rows reach the result
    along several paths (a DataFrame joined with itself, a CTE read twice: its slots are there
    once per path) has the rows of those slots de-duplicated together, in one more shuffle.

    ``complete=True`` is for a *subset* of the result rows (the backtracer's matched items): no
    copy is dropped and nothing is de-duplicated, so the rows hold every association those
    result rows derive from (possibly repeated), and no shuffle runs.
    """
    groups: dict[tuple, list[Slot]] = {}
    unique = list(dict.fromkeys(slots))
    paths = Counter((s.oid, s.in_ref.input) for s in unique)
    for s in unique:
        above = tuple(c for c in slot_conds(s, complete) if c[0] < len(s.nest))
        shuffle = s.distinct and s.first is None and not complete
        key = (s.nest, above, shuffle, s.array if s.array is not None else "")
        groups.setdefault(key, []).append(s)
    spark = annotated.sparkSession
    out: DataFrame | None = None
    repeated: DataFrame | None = None  # the rows of slots of an operator reached along several paths
    for (nest, above, distinct, array), members in groups.items():
        level = _descend(annotated, nest, above)
        shared = [m for m in members if not complete and paths[m.oid, m.in_ref.input] > 1]
        for rows in (r for m in shared for r in _level_rows(level, [m], bool(array), complete)):
            repeated = rows if repeated is None else repeated.unionByName(rows)
        for rows in _level_rows(level, [m for m in members if m not in shared], bool(array), complete):
            if distinct:
                rows = rows.distinct()
            out = rows if out is None else out.unionByName(rows)
    if repeated is not None:
        repeated = repeated.distinct()
        out = repeated if out is None else out.unionByName(repeated)
    if out is None:
        return local_frame(spark, [], ASSOC_SCHEMA)
    return out


def identity_frame(stored: DataFrame, operators: Iterable[OperatorProv], result_oid: int,
                   result_ids: DataFrame) -> DataFrame:
    """The derived ⟨id, id⟩ rows of every identity operator (columns as ``ASSOC_SCHEMA``).

    ``stored`` holds the rows of the other operators (:func:`assoc_frame`, or a run's
    ``StoredRun.stored_associations()``), ``result_ids`` one column of result item ids. The ids out of an identity
    operator k are the ``in_id``s of the rows of each successor s for the input fed by k (or, when
    s keeps ids too, s's own ids), and the result ids when k produced the result.
    """
    ops = {o.oid: o for o in operators}
    succ: dict[int, list[tuple[int, int]]] = {}
    for o in ops.values():
        for j, inp in enumerate(o.inputs):
            succ.setdefault(inp.pred, []).append((o.oid, j))
    ids_col = result_ids.columns[0]
    memo: dict[int, DataFrame | None] = {}

    def ids_of(k: int) -> DataFrame | None:  # one column "id": the ids out of identity op k
        if k in memo:
            return memo[k]
        parts = [result_ids.select(F.col(ids_col).alias("id"))] if k == result_oid else []
        for s, j in succ.get(k, []):
            if ops[s].type.keeps_ids:
                sub = ids_of(s)
                if sub is not None:
                    parts.append(sub)
            else:
                parts.append(stored.filter((F.col(OID) == F.lit(s)) & (F.col(INPUT) == F.lit(j)))
                             .select(F.col(IN_ID).alias("id")))
        out = None
        for p in parts:
            out = p if out is None else out.unionByName(p)
        memo[k] = out
        return out

    spark = stored.sparkSession
    frames = []
    for k in sorted(ops):
        if not ops[k].type.keeps_ids:
            continue
        ids = ids_of(k)
        if ids is None:
            continue
        frames.append(ids.filter(F.col("id").isNotNull()).distinct().select(
            F.lit(k).cast("int").alias(OID), F.col("id").alias(OUT_ID), F.lit(0).cast("int").alias(INPUT),
            F.col("id").alias(IN_ID), F.lit(None).cast("int").alias(POS)))
    out = None
    for f in frames:
        out = f if out is None else out.unionByName(f)
    return out if out is not None else spark.createDataFrame([], ASSOC_SCHEMA)
