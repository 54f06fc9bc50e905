"""The triples file format (docs/triples.md): its columns, the granularities its rows become,
and where a triples file's table mapping sits. Both engines' loaders read it
(store/duckdb/triples.py, store/spark/triples.py)."""

from __future__ import annotations

from pathlib import Path

from store.bundle import line_count, parquet_rows

VALUE = "Value"
TABLE = "Table"
TRANSFORMATION = "Transformation"
GSETS = {
    "data": {"contains": [[VALUE, TABLE]]},
    "process": {"granularities": [TRANSFORMATION]},
}
REQUIRED = ("src", "dst", "op")
OPTIONAL = ("src_table", "dst_table")
ITEM = "item"


def sibling_tables(path: Path) -> Path | None:
    """The table mapping placed next to a triples file (`<name>.tables.csv|.parquet`), if any."""
    for suffix in (".csv", ".parquet"):
        candidate = path.with_name(path.stem + ".tables" + suffix)
        if candidate.exists():
            return candidate
    return None


def count_triples(path: Path) -> int:
    """Rows of a triples file and of its sibling table mapping (line counts, Parquet footers)."""
    n = 0
    for p in (path, sibling_tables(path)):
        if p is None or not p.exists():
            continue
        n += max(line_count(p) - 1, 0) if p.suffix == ".csv" else parquet_rows(p)
    return n
