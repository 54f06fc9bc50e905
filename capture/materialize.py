"""Turn the hidden id columns of an annotated result into Pebble's id associations P.

One row per (output item, input item) pair of an operator:
``oid int, out_id long, input int, in_id long, pos int`` -- ``pos`` is the 1-based position
for flatten (in the flattened array) and aggregation (in the group's collected list), else null.
Slots that differ only in their operator id (a chain of filters/selects over the same ids)
are read once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from capture.model import Slot

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
