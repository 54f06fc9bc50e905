"""Names and the on-disk layout of the component index tables (the Spark writers of this layout:
store/spark/index/layout.py).

Every index table is Parquet partitioned by `bucket = pmod(xxhash64(key), buckets)` and sorted
inside each file by its lookup key, written with small row groups. A point query on one
component/set names its bucket with a constant expression (partition pruning: one folder) and
its key (row-group statistics: few row groups of that folder's file).

| table | columns | bucket key, sort |
|---|---|---|
| index_nodes | id, table, ccid, csid | id; sorted by id |
| index_triples | src, dst, op, ccid, src_csid, dst_csid | ccid; sorted by ccid, dst_csid, dst |
| index_setdeps | ccid, src_csid, dst_csid | ccid; sorted by ccid, dst_csid |
| index_sets | csid, ccid, level, split, n_nodes, n_triples | ccid; sorted by ccid, csid |
| index_components | ccid, n_nodes, n_triples, n_sets | ccid; sorted by ccid |
| index_scope_nodes | id, scope, scope_rows | id; sorted by id |
| index_scope_rows | scope, rel, a, b, c, d | scope; sorted by scope, rel |
"""

from __future__ import annotations

from store.schema import EDGES

CCID = "ccid"
CSID = "csid"
SRC_CSID = "src_csid"
DST_CSID = "dst_csid"
TABLE = "table"
OP = "op"
BUCKET = "bucket"
LEVEL = "level"
SPLIT = "split"
N_NODES = "n_nodes"
N_TRIPLES = "n_triples"
N_SETS = "n_sets"

NODES = "index_nodes"
TRIPLES = "index_triples"
SETDEPS = "index_setdeps"
SETS = "index_sets"
COMPONENTS = "index_components"
SCOPE_NODES = "index_scope_nodes"  # influence scopes for IQL (scopes.py)
SCOPE_ROWS_TABLE = "index_scope_rows"
INDEX_TABLES = (NODES, TRIPLES, SETDEPS, SETS, COMPONENTS, SCOPE_NODES, SCOPE_ROWS_TABLE)

META_KEY = "index"  # manifest meta: parameters, split plan, counts, covered edge segments

# (bucket key, sort columns) per table.
LAYOUT: dict[str, tuple[str, tuple[str, ...]]] = {
    NODES: ("id", ("id",)),
    TRIPLES: (CCID, (CCID, DST_CSID, "dst")),
    SETDEPS: (CCID, (CCID, DST_CSID)),
    SETS: (CCID, (CCID, CSID)),
    COMPONENTS: (CCID, (CCID,)),
    SCOPE_NODES: ("id", ("id",)),
    SCOPE_ROWS_TABLE: ("scope", ("scope", "rel")),
}

ROW_GROUP_BYTES = 1 << 20  # small row groups: statistics then skip most of a large file


def bucket_of_value(value: str, buckets: int) -> int:
    """The bucket of one key, computed on the driver: Spark's `xxhash64` is XXH64 with seed 42
    over the UTF-8 bytes (tests/index/test_index_local.py checks it against Spark)."""
    import xxhash  # deferred: only this path needs xxhash

    h = xxhash.xxh64_intdigest(value.encode("utf-8"), seed=42)
    if h >= 1 << 63:  # Spark's hash is a signed long
        h -= 1 << 64
    return h % buckets  # Python's % is pmod for a positive divisor


def edge_segments(st) -> tuple[str, ...]:
    """The committed segments of the edges table: the index covers exactly these."""
    entry = st.manifest.tables.get(EDGES)
    return tuple(entry.segments) if entry is not None else ()
