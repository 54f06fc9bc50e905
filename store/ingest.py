"""Ingest, engine-neutral: what a commit's ingest counts, and the sources of an ingest counted
before any is read (`plan`), so that `Store.ingest_choice` can pick the engine that ingests
them all (docs/engines.md, "Ingest"). Each engine's ingest is in its wing:
store/duckdb/ingest.py and store/duckdb/triples.py, store/spark/ingest.py and
store/spark/triples.py."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.bundle import SECTIONS, count_records, read_json
from store.triples import count_triples


@dataclass(frozen=True)
class IngestCounts:
    elements: int
    vertices: int
    edges: int

    def __add__(self, other: IngestCounts) -> IngestCounts:
        return IngestCounts(self.elements + other.elements, self.vertices + other.vertices,
                            self.edges + other.edges)


def is_dataframe(value: Any) -> bool:
    """Whether ``value`` is a Spark DataFrame (told by its type's name: pyspark is not imported)."""
    return type(value).__name__ == "DataFrame" and type(value).__module__.startswith("pyspark")


def is_triples(src: str | os.PathLike[str], fmt: str | None = None) -> bool:
    """Triples files are .csv or .parquet files (bundle sections come as folders or .json/.jsonl)."""
    if fmt:
        return fmt == "triples"
    p = Path(src)
    return p.suffix == ".csv" or (p.suffix == ".parquet" and not (p.parent / "bundle.json").exists())


@dataclass
class Planned:
    """One source of an ingest: what it is, how many records it holds (None: it cannot be read
    without Spark) and what was already read of it."""

    source: Any
    triples: bool
    records: int | None
    loaded: Any = None  # a parsed .json document


def plan(source: Any, triples: bool) -> Planned:
    """Count a source's records cheaply: list lengths of a dict, a .json document's records (it
    is parsed once, here, and kept), line counts of JSON Lines and CSV, Parquet footers."""
    if isinstance(source, Mapping):
        if any(is_dataframe(source.get(s)) for s in SECTIONS):
            return Planned(source, False, None)
        return Planned(source, False, sum(len(v) for s in SECTIONS
                                          if isinstance(v := source.get(s), list)))
    if not isinstance(source, (str, os.PathLike)):
        return Planned(source, triples, None)  # a loaded Spark Bundle
    p = Path(source)
    if not p.exists():
        return Planned(source, triples, 0)  # the loader reports it
    if triples:
        return Planned(source, True, count_triples(p))
    if p.is_dir() or p.suffix == ".jsonl":
        return Planned(source, False, count_records(p))
    doc = read_json(p, str(p))
    n = sum(len(v) for s in SECTIONS if isinstance(v := (doc or {}).get(s), list)) \
        if isinstance(doc, dict) else 0
    return Planned(source, False, n, doc)
