"""A captured run mapped into the multi-granularity model on the driver, without Spark: at capture
(capture/storing/commit.py, for a small run on a local store) or later, for runs captured without
the model (``strata capture --no-model``; capture/storing/model_later.py, ``strata model``).

The store copy's hidden columns are read with pyarrow, the associations computed from them
column-wise (capture/storing/assoc_columns.py), and the items and edges made of them
(capture/storing/to_model.py ``driver_parts``) staged in parts with
``StoreTransaction.ingest_items``. No pyspark here: ``strata model`` of a small run starts no JVM.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from capture.ids import is_hidden
from capture.operators import OperatorProv
from capture.storing import assoc_columns, to_model
from store import schema as S
from store.duckdb.ingest import TxTables

# The most ids a store copy may hold for the driver to map the run into the model itself; a run
# with more is modelled with Spark (capture/storing/commit.py ``_spark_model``). The ids stay int64
# arrays until the items and edges are staged in parts of at most MODEL_PART_ROWS rows, each part's
# element ids formatted as it is staged (TPC-H Q1 at scale factor 1, 5.9M ids, is modelled so with a
# 4 GB driver beside it). Below it the driver is also much the faster, and the Spark model of some
# shapes needs far more memory than the run: TPC-DS Q47 at sf 0.01 (492,000 ids in 100 rows from
# three windowed copies of a CTE) exhausted a 1 GB driver heap there and ran 45 minutes in a 2 GB
# one.
DRIVER_MODEL_IDS = 8_000_000
MODEL_PART_ROWS = 1_000_000


def stored_ids(files: Iterable[str]) -> int:
    """About how many ids the store copy in ``files`` holds: per file and hidden column, the most
    values any of its Parquet leaf columns has (an id array's ids; a plain id column's rows), read
    from the files' footers alone."""
    total = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            per_column: dict[str, int] = {}
            for c in range(group.num_columns):
                chunk = group.column(c)
                top = chunk.path_in_schema.split(".")[0]
                if is_hidden(top):
                    per_column[top] = max(per_column.get(top, 0), chunk.num_values)
            total += sum(per_column.values())
    return total


def model_files(tx, files: Sequence[str], head, ops: list[OperatorProv], run: str, pipeline: str,
                run_attrs: dict[str, Any], info_out: dict[str, Any]) -> None:
    """Stage the model of ``run`` in ``tx`` from its store copy's Parquet ``files``; ``head`` says
    where the ids sit (``slots``, ``derived``, ``result_oid``, ``id_col``: a ``Captured`` or a
    :class:`capture.storing.runs.RunHead`). The few elements (pipeline, run, operators, datasets)
    go through the bundle ingest, the items and edges column-wise."""
    parts = [pq.read_table(f, columns=[n for n in pq.read_schema(f).names if is_hidden(n)]) for f in files]
    table = assoc_columns.hydrate_columns(pa.concat_tables(parts, promote_options="permissive"), head.derived)
    stored = assoc_columns.assoc_columns(table, head.slots)
    assoc = np.concatenate([stored, assoc_columns.identity_columns(stored, ops, head.result_oid,
                                                                   table.column(head.id_col))])
    del table, parts
    known = TxTables(tx)

    def existing(ids):
        rel = known.matching(S.VERTICES, ids)
        return set() if rel is None else {r[0] for r in rel.select(S.ID).fetchall()}

    small, staged = to_model.driver_parts(run, pipeline, ops, assoc, existing, run_attrs, info_out, MODEL_PART_ROWS)
    for n, (items, edges) in enumerate(staged):
        bundle = small if n == 0 else {**small, "elements": []}
        if tx.ingest_items(bundle, items, edges, to_model.ITEM, source=run) is None:
            if bundle["elements"]:
                tx.ingest(bundle)
            tx.ingest(to_model.items_bundle(items, edges, existing(items.column("id").to_pylist())))
