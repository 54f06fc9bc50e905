"""Connected sets: Algorithm 3 (Partition-Large-Component) and set dependencies, on DataFrames.

Set-at-a-time: every large component is refined in the same pass. At level L each active vertex
is grouped by (its set at level L-1, the split of its table at level L); connected components of
the triples inside each group are the candidate sets. A candidate with fewer than θ nodes, or
whose split is a leaf, is final; the others go on to the next level with their sub-splits.
A set's id is its smallest member id, so set ids never collide and a component that is not
partitioned is its own single set (csid = ccid).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from store.index.layout import CCID, CSID, DST_CSID, LEVEL, SPLIT, SRC_CSID, TABLE
from store.index.params import CCEngine
from store.index.splits import SplitRow
from store.schema import DST, ID, SRC
from store.spark.frames import local_frame
from store.spark.index.components import COMPONENT, checkpoint, connected_components

_GROUP = "grp"
_LEAF = "leaf"
_N = "n"

_SPLIT_SCHEMA = StructType([
    StructField(TABLE, StringType(), False),
    StructField(LEVEL, IntegerType(), False),
    StructField(SPLIT, StringType(), False),
    StructField(_LEAF, BooleanType(), False),
])


def partition_sets(
    nodes: DataFrame,
    triples: DataFrame,
    rows: Sequence[SplitRow],
    theta: int,
    engine: CCEngine = CCEngine.AUTO,
) -> DataFrame:
    """Assign every node a connected set.

    nodes: DataFrame[id, table, ccid]; triples: DataFrame[src, dst]; rows: the split plan
    (`splits.split_rows`); theta: components (and sets) with at least this many nodes are split.
    Returns DataFrame[id, csid, level, split] (level 0 and split '' for unsplit components).
    """
    spark = nodes.sparkSession
    sizes = nodes.groupBy(CCID).agg(F.count(F.lit(1)).alias(_N))
    large = sizes.where(F.col(_N) >= theta).select(CCID)
    finals = [
        nodes.join(large, CCID, "left_anti").select(
            ID, F.col(CCID).alias(CSID), F.lit(0).alias(LEVEL), F.lit("").alias(SPLIT)
        )
    ]
    active = nodes.join(large, CCID, "left_semi").select(ID, TABLE, F.col(CCID).alias(_GROUP))
    plan = local_frame(spark, [(r.table, r.level, r.split, r.leaf) for r in rows], _SPLIT_SCHEMA)
    max_level = max((r.level for r in rows), default=0)
    pairs = triples.select(SRC, DST)
    for level in range(1, max_level + 1):
        if active.limit(1).count() == 0:
            break
        at = F.broadcast(plan.where(F.col(LEVEL) == level).drop(LEVEL))
        grouped = active.join(at, TABLE).select(
            ID, TABLE, F.concat_ws("|", _GROUP, SPLIT).alias(_GROUP), SPLIT, _LEAF
        )
        g = grouped.select(ID, _GROUP)
        inner = (
            pairs.join(g.withColumnRenamed(ID, SRC).withColumnRenamed(_GROUP, "gs"), SRC)
            .join(g.withColumnRenamed(ID, DST).withColumnRenamed(_GROUP, "gd"), DST)
            .where(F.col("gs") == F.col("gd"))
            .select(SRC, DST)
        )
        cc = connected_components(g.select(ID), inner, engine)
        labelled = grouped.join(cc, ID)
        counts = labelled.groupBy(COMPONENT).agg(F.count(F.lit(1)).alias(_N))
        labelled = checkpoint(labelled.join(counts, COMPONENT))
        done = (F.col(_N) < theta) | F.col(_LEAF)
        finals.append(
            labelled.where(done).select(
                ID, F.col(COMPONENT).alias(CSID), F.lit(level).alias(LEVEL), SPLIT
            )
        )
        active = labelled.where(~done).select(ID, TABLE, F.col(COMPONENT).alias(_GROUP))
    out = finals[0]
    for part in finals[1:]:
        out = out.unionByName(part)
    return out


def set_dependencies(indexed: DataFrame) -> DataFrame:
    """Distinct (ccid, src_csid, dst_csid) over triples that cross sets (CSProv Table 8)."""
    return (
        indexed.where(F.col(SRC_CSID) != F.col(DST_CSID))
        .select(CCID, SRC_CSID, DST_CSID)
        .distinct()
    )
