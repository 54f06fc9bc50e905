"""One pass over the annotated result writes both copies: the user's output and the store's.

For Parquet output the copy is *split*: the output's own files hold the visible columns
(capture/storing/commit.py links them into the store) and only the hidden ones are written here -- by
Strata's JVM writer where its jar is loaded (capture/jvm), else by :func:`sidecar`, through Python.
Otherwise :func:`teed` below sends every column through Python.

Spark has no two-sink write: without these writers a commit caches the annotated result, writes
the visible columns to the user's path and then the whole result again into the store (for T2 at
1M tweets the cache and second write are half of the captured run). On a local store the result
instead flows through one ``mapInArrow`` stage: each task writes its Arrow batches (every column,
hidden ones included) as one zstd Parquet file into the store's staged segment with pyarrow and
passes the visible columns on to Spark's writer of the user's output. The pipeline runs once, no
cache is built, and the store copy costs one Arrow hand-off and a C++ Parquet encode.

Files are named by partition and written under a hidden temporary name first, then renamed, so a
retried task replaces its partition's file instead of adding rows; a failed job leaves only files
in the staged folder, which the transaction's abort removes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from capture.storing.tables import part_of

# A Parquet row group is written when the buffered Arrow batches (10k rows each) reach either
# limit: enough rows to compress well, and bounded memory for wide nested rows (D3's lists).
ROW_GROUP_ROWS = 128 * 1024
ROW_GROUP_BYTES = 64 * 1024 * 1024
# No dictionary encoding: the hidden id columns are random 64-bit hashes, for which pyarrow tries a
# dictionary, gives up and rewrites the pages. Without it T2's 2.6M-row result (1M tweets) encodes
# in 0.54 s instead of 1.25 s and takes 67 MB instead of 87 MB (Spark's writer: 73 MB).


_ATOMIC = (BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, StringType,
           BinaryType, DecimalType, DateType, TimestampType, TimestampNTZType)


def supported(dtype: DataType) -> bool:
    """Whether values of ``dtype`` survive Spark -> Arrow -> Parquet -> Spark unchanged. Other
    types (intervals, variant, void, char/varchar, user-defined) take the cached two-write path."""
    if isinstance(dtype, StructType):
        return all(supported(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return supported(dtype.elementType)
    if isinstance(dtype, MapType):
        return supported(dtype.keyType) and supported(dtype.valueType)
    return type(dtype) in _ATOMIC


def _part_file(folder: str) -> Callable[[Iterator, Callable], Iterator]:
    """``write(batches, out)``: a generator that writes a task's Arrow record batches as one zstd
    Parquet file ``folder/part-<partition>.zstd.parquet`` and yields ``out(batch)`` for each. The
    file is written under a hidden temporary name and renamed at the end, so a retried task
    replaces its partition's file; a failed or stopped task leaves no partial file. (A closure, so
    it is pickled by value to the Python workers with its callers.)"""

    def write(batches, out):

        ctx = TaskContext.get()
        final = os.path.join(folder, f"part-{ctx.partitionId():05d}.zstd.parquet")
        tmp = os.path.join(folder, f".part-{ctx.partitionId():05d}-{ctx.attemptNumber()}.tmp")
        writer, pending, rows, size = None, [], 0, 0
        try:
            for batch in batches:
                if writer is None:
                    writer = pq.ParquetWriter(tmp, batch.schema, compression="zstd", use_dictionary=False)
                pending.append(batch)
                rows, size = rows + batch.num_rows, size + batch.nbytes
                if rows >= ROW_GROUP_ROWS or size >= ROW_GROUP_BYTES:
                    writer.write_table(pa.Table.from_batches(pending))
                    pending, rows, size = [], 0, 0
                yield out(batch)
            if writer is not None:
                if pending:
                    writer.write_table(pa.Table.from_batches(pending))
                writer.close()
                writer = None
                os.replace(tmp, final)
        finally:
            if writer is not None:  # the task failed or was stopped: no partial file remains
                writer.close()
                os.remove(tmp)

    return write


def _batches_writer(folder: str, visible: list[str]) -> Callable[[Iterator], Iterator]:
    """The per-partition function of the ``mapInArrow`` stage: every column into the part file,
    the visible ones on to Spark."""
    write = _part_file(folder)

    def tee(batches):
        return write(batches, lambda batch: batch.select(visible))

    return tee


def _hidden_udf(folder: str):
    """An iterator Arrow UDF over ``struct(<hidden columns>)``: writes the task's rows into the
    part file (as :func:`teed`) and returns true for every row. Nondeterministic, so the optimizer
    never moves its filter (below a sort, into a union's sides): it sees the rows in the order
    Spark's writer writes them."""

    write = _part_file(folder)

    def hidden(arrays):

        batches = (pa.RecordBatch.from_struct_array(arr) for arr in arrays)
        return write(batches, lambda batch: pa.repeat(True, batch.num_rows))

    hidden.__annotations__ = {"arrays": Iterator[pa.Array], "return": Iterator[pa.Array]}  # iterator form
    return F.arrow_udf(hidden, "boolean").asNondeterministic()


def sidecar(annotated: DataFrame, visible: list[str], hidden: list[str], folder: str) -> DataFrame:
    """``annotated``'s visible columns; computing them writes only the ``hidden`` columns into
    ``folder`` (one file per task, rows in the task's order). Spark's own writer then writes the
    visible columns: only the hidden ones cross to Python (capture/storing/commit.py, the split copy)."""

    flag = _hidden_udf(folder)(F.struct(*[F.col(f"`{h}`") for h in hidden]))
    return annotated.filter(flag).select(*[F.col(f"`{c}`") for c in visible])


def teed(annotated: DataFrame, visible: list[str], folder: str) -> DataFrame:
    """``annotated``'s visible columns; computing them writes every column into ``folder``."""
    out = StructType([annotated.schema[c] for c in visible])
    return annotated.mapInArrow(_batches_writer(folder, visible), out)


def part_rows(folder: str) -> dict[int, int]:
    """Rows per partition of the Parquet part files in ``folder``, from their footers."""

    return {p: pq.ParquetFile(os.path.join(folder, n)).metadata.num_rows
            for n in sorted(os.listdir(folder)) if n.endswith(".parquet") and (p := part_of(n)) is not None}


def finish(folder: str, schema: StructType, timezone: str) -> dict[int, int]:
    """After the job: the rows written to ``folder`` per partition (from the files' footers). A
    result with no rows still gets one empty file, so the table has a readable schema."""

    rows = part_rows(folder)
    if not rows:
        empty = pa.Table.from_pylist([], schema=to_arrow_schema(schema, timezone=timezone))
        pq.write_table(empty, os.path.join(folder, "part-00000.zstd.parquet"), compression="zstd")
        return {0: 0}
    return rows
