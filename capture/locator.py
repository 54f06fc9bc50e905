"""Where a captured source's items live (table ``capture_sources``): a :class:`Locator`, plain
data written when tracking reads an input (capture/tracking/sources.py ``locator``) and read when
tracing finds traced items again (capture/tracing/locate.py). No pyspark here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Locator:
    """Where a source operator's items live, recorded when the input is read, so that a trace can
    say where each traced input item is (file and line, file and row index, catalog table) and
    read its value back while the input is unchanged (capture/tracing/locate.py).

    ``ids`` says how the item ids were made, hence how to find an item again:

    * ``offset``: JSON Lines through the offset reader (``capture.tracking.sources.file_line_ids``);
    * ``row_index``: Parquet by file and row index (``file_row_ids`` there);
    * ``position``: any other file format, by row position under ``layout`` (``item_ids``,
      ``layout_key`` called with ``layout_options``): finding an item again reads the input
      with Spark and checks that it is cut the same way;
    * ``split``: a Hive-format table read through its SerDe (``hive_split_ids``), by file, the
      start of the Hadoop split that read the record and the record's index in that split;
      ``splits`` holds every file's split starts, so a text table's records are found again by
      their lines;
    * ``program``: rows the program made (``createDataFrame``, ``range``, literal rows, a
      DataFrame handed to ``Tracker.track``): nothing to read back.

    ``files`` are the input's files when it was read: Hadoop path, length and modification time
    (milliseconds), the test of "unchanged"."""

    ids: str
    format: str
    files: tuple[tuple[str, int, int], ...] = ()
    paths: tuple[str, ...] = ()  # the read's root paths
    options: tuple[tuple[str, str], ...] = ()  # the reader's options
    schema: str | None = None  # the read's schema (Spark JSON), to read a positional input again
    table: str | None = None  # the catalog table read, if any
    layout: str | None = None
    layout_options: tuple[tuple[str, str], ...] | None = None
    splits: tuple[tuple[str, tuple[int, ...]], ...] = ()  # ids ``split``: per file, its splits' starts

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v not in (None, (), [])}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Locator:
        d = json.loads(text)
        return cls(d["ids"], d["format"], tuple(tuple(f) for f in d.get("files", ())), tuple(d.get("paths", ())),
                   tuple(tuple(o) for o in d.get("options", ())), d.get("schema"), d.get("table"),
                   d.get("layout"), tuple(tuple(o) for o in d["layout_options"]) if "layout_options" in d else None,
                   tuple((f, tuple(s)) for f, s in d.get("splits", ())))
