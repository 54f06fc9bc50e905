"""Turn the hidden id columns of an annotated result into Pebble's id associations P.

One row per (output item, input item) pair of an operator:
``oid int, out_id long, input int, in_id long, pos int`` -- ``pos`` is the 1-based position
for flatten (in the flattened array) and aggregation (in the group's collected list), else null.
Slots that differ only in their operator id (a self-join's two sides over the same ids)
are read once.

Operators that keep item identity (filter, select, map, sort, limit) have no slot: their
rows ⟨id, id⟩ are not stored but derived (:func:`identity_frame`) -- the ids an identity
operator passes on are exactly the input ids its successors' rows name (or, for the result
operator, the result's ids).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from capture.model import OperatorProv, Slot

OID, OUT_ID, INPUT, IN_ID, POS = "oid", "out_id", "input", "in_id", "pos"
ASSOC_SCHEMA = StructType(
    [
        StructField(OID, IntegerType(), False),
        StructField(OUT_ID, LongType(), False),
        StructField(INPUT, IntegerType(), False),
        StructField(IN_ID, LongType(), False),
        StructField(POS, IntegerType(), True),
    ]
)


def _level(df: DataFrame, conds: Iterable[tuple[int, str, int]], depth: int) -> DataFrame:
    for d, col, value in conds:
        if d == depth:
            df = df.filter(F.col(col) == F.lit(value))
    return df


def _rows(annotated: DataFrame, slot: Slot) -> DataFrame:
    df = annotated
    for depth, arr in enumerate(slot.nest):
        df = _level(df, slot.when, depth).select(F.explode(F.col(arr)).alias("_n")).select("_n.*")
    df = _level(df, slot.when, len(slot.nest))
    ref = slot.in_ref
    if slot.array is not None:
        df = df.select(F.col(slot.out_col).alias(OUT_ID), F.posexplode(F.col(slot.array)).alias("_p", "_e"))
        df = df.select(
            OUT_ID,
            F.lit(ref.input).alias(INPUT),
            F.col("_e").getField(ref.id_col).alias(IN_ID),
            (F.col("_p") + 1).cast("int").alias(POS),
        )
    else:
        pos = (F.col(slot.pos_col) + 1).cast("int") if slot.pos_col else F.lit(None).cast("int")
        df = df.select(
            F.col(slot.out_col).alias(OUT_ID),
            F.lit(ref.input).alias(INPUT),
            F.col(ref.id_col).alias(IN_ID),
            pos.alias(POS),
        )
    df = df.filter(F.col(OUT_ID).isNotNull() & F.col(IN_ID).isNotNull())
    return df.distinct() if slot.distinct else df


def assoc_frame(annotated: DataFrame, slots: Iterable[Slot]) -> DataFrame:
    """All id associations recorded in ``annotated`` (columns as ``ASSOC_SCHEMA``)."""
    groups: dict[Slot, list[int]] = {}
    for s in slots:
        groups.setdefault(replace(s, oid=0), []).append(s.oid)
    spark = annotated.sparkSession
    out: DataFrame | None = None
    for key, oids in groups.items():
        rows = _rows(annotated, key)
        oids = sorted(set(oids))
        if len(oids) == 1:
            rows = rows.select(F.lit(oids[0]).alias(OID), "*")
        else:
            rows = rows.select(F.explode(F.array(*[F.lit(o) for o in oids])).alias(OID), "*")
        rows = rows.select(F.col(OID).cast("int"), OUT_ID, F.col(INPUT).cast("int"), IN_ID, POS)
        out = rows if out is None else out.unionByName(rows)
    if out is None:
        return spark.createDataFrame([], ASSOC_SCHEMA)
    return out


def identity_frame(stored: DataFrame, operators: Iterable[OperatorProv], result_oid: int,
                   result_ids: DataFrame) -> DataFrame:
    """The derived ⟨id, id⟩ rows of every identity operator (columns as ``ASSOC_SCHEMA``).

    ``stored`` holds the rows of the other operators (:func:`assoc_frame`, or a run's
    ``capture_assoc``), ``result_ids`` one column of result item ids. The ids out of an identity
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
