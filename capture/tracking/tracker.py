"""The entry point: ``Tracker(spark, store)`` reads or wraps inputs and writes captured runs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from capture import jvm
from capture.errors import UnsupportedOperation
from capture.id_columns import hydrate
from capture.ids import Derived, is_hidden, top
from capture.locator import Locator
from capture.operators import OperatorProv, OpType, Slot
from capture.storing.commit import write_and_commit
from capture.storing.materialize import assoc_frame, identity_frame
from capture.tracking.frame import TrackedDataFrame
from capture.tracking.paths import column_names
from capture.tracking.sources import (
    file_line_ids,
    file_row_ids,
    item_ids,
    layout_key,
    locator,
    program_locator,
)


@dataclass(frozen=True)
class Captured:
    """The provenance of one tracked DataFrame, before it is committed."""

    operators: tuple[OperatorProv, ...]
    slots: tuple[Slot, ...]
    result_oid: int
    built: DataFrame  # the tracked DataFrame's own columns (derived ids inside collected lists left out)
    id_col: str  # the hidden column of ``annotated`` holding each result item's id
    compact: DataFrame  # what a commit stores: ``annotated`` without its derived id columns
    derived: tuple[Derived, ...] = ()  # how to compute those again (capture/ids.py)

    @cached_property
    def annotated(self) -> DataFrame:
        """Visible columns and every hidden id column, derived ones included (built on first
        use: a commit stores ``compact`` and does not need it)."""
        return hydrate(self.built, self.derived)

    def stored_associations(self, annotated: DataFrame | None = None) -> DataFrame:
        """P for the operators that change ids: ``oid, out_id, input, in_id, pos``
        (flatten, join, union, aggregation); the rest of P is derived (:meth:`associations`).
        ``annotated`` may be the stored (compact) form: derived ids are computed again."""
        return assoc_frame(self._full(annotated), self.slots)

    def _full(self, annotated: DataFrame | None) -> DataFrame:
        return self.annotated if annotated is None else hydrate(annotated, self.derived)

    def associations(self, annotated: DataFrame | None = None) -> DataFrame:
        """Pebble's P for every operator (Table 6), the identity operators' ⟨id, id⟩ rows
        derived from the stored ones."""
        df = self._full(annotated)
        stored = assoc_frame(df, self.slots)
        derived = identity_frame(stored, self.operators, self.result_oid, df.select(self.id_col))
        return stored.unionByName(derived)

    def operator(self, oid: int) -> OperatorProv:
        return next(o for o in self.operators if o.oid == oid)


def line_delimited(spark, options: dict) -> bool:
    """Whether a JSON read with ``options`` reads files one record per line: not ``multiLine``,
    and not entries of archives (Spark's ``spark.sql.files.archive.reader.enabled``)."""
    if spark.conf.get("spark.sql.files.archive.reader.enabled", "false").lower() == "true":
        return False
    return not any(k.lower() == "multiline" and str(v).lower() == "true" for k, v in options.items())


class _Reader:
    def __init__(self, tracker: Tracker):
        self._tracker = tracker

    def _read(self, fmt: str, path, name: str | None, options) -> TrackedDataFrame:
        """As ``spark.read.<fmt>(path, schema=..., **options)``. A given ``schema`` (a StructType
        or DDL string) is applied, not passed on as an option; ids do not depend on it (nor on a
        layout key): it does not change which rows a file holds, so the same rows keep their ids."""
        options = dict(options)
        schema = options.pop("schema", None)
        spark = self._tracker.spark
        reader = spark.read.options(**options)
        if schema is not None:
            reader = reader.schema(schema)
        df = reader.format(fmt).load(path)
        paths = [path] if isinstance(path, str) else list(path)
        dataset = name or ",".join(os.path.abspath(p) if "://" not in p else p for p in paths)
        detail = f"{fmt} {', '.join(paths)}"
        if fmt == "json" and line_delimited(spark, options) and jvm.available(spark) \
                and not any(is_hidden(c) for c in df.columns):  # (reserved names: _source's error)
            # the same records, plus each line's offset (capture/jvm): the schema is the one just
            # inferred or given, so no second inference runs
            fields = [*df.schema.fields, StructField(jvm.OFFSET, LongType(), False)]
            df = spark.read.options(**options).schema(StructType(fields)).format(jvm.CLASS).load(path)
            return self._tracker._source(df, dataset, "read.json", detail, file_line_ids(df, dataset), (jvm.OFFSET,),
                                         locator(df, "offset", fmt, options))
        if fmt == "parquet":
            return self._tracker._source(df, dataset, "read.parquet", detail, file_row_ids(df, dataset),
                                         locator=locator(df, "row_index", fmt, options))
        lopts = {"format": fmt, **options}
        layout = layout_key(df, lopts)
        return self._tracker._source(df, dataset, f"read.{fmt}", detail, item_ids(dataset, layout),
                                     locator=locator(df, "position", fmt, options, layout=layout, layout_options=lopts))

    def json(self, path, name: str | None = None, **options) -> TrackedDataFrame:
        return self._read("json", path, name, options)

    def parquet(self, path, name: str | None = None, **options) -> TrackedDataFrame:
        return self._read("parquet", path, name, options)

    def csv(self, path, name: str | None = None, **options) -> TrackedDataFrame:
        return self._read("csv", path, name, options)


class Tracker:
    """Records the structural provenance of the DataFrame pipelines built from its inputs."""

    def __init__(self, spark, store=None, pipeline: str = "pipeline", model: bool = True):
        """``model=False`` commits only the capture tables, not the item-level elements and
        edges of the multi-granularity model (much cheaper to commit; IQL then does not see
        the run)."""
        self.spark = spark
        self.store = store
        self.pipeline = pipeline
        self.model = model
        self._ops: dict[int, OperatorProv] = {}
        self._locators: dict[int, Locator] = {}  # source operator id -> where its items live
        self._oid = 0
        # the script a run is captured from (capture_programs): script, args, cwd, write number
        self.program: dict | None = None

    @property
    def read(self) -> _Reader:
        return _Reader(self)

    def track(self, df: DataFrame, name: str) -> TrackedDataFrame:
        """Start tracking an existing DataFrame; ``name`` identifies the dataset (and its ids)."""
        if isinstance(df, TrackedDataFrame):
            raise UnsupportedOperation.named("track", "the DataFrame is already tracked")
        if not name:
            raise UnsupportedOperation.named("track", "a dataset name is required: track(df, name='tweets')")
        return self._source(df, name, "track", f"track {name}", item_ids(name, layout_key(df)),
                            locator=program_locator("track"))

    def _source(self, df: DataFrame, dataset: str, method: str, detail: str, ids: F.Column,
                internal: tuple[str, ...] = (), locator: Locator | None = None) -> TrackedDataFrame:
        """A source operator over ``df`` with item ids ``ids``; ``internal`` names the reader's
        own columns the ids are computed from (dropped after); ``locator`` says where its items
        live (committed with the run: a trace reads values back through it)."""
        bad = [c for c in column_names(df) if is_hidden(c) and c not in internal]
        if bad:
            raise UnsupportedOperation.named(method, f"column names {bad} use the reserved prefix '__strata_'")
        oid = self._new_oid()
        idk = f"__strata_id_{oid}"
        op = OperatorProv(oid, OpType.SOURCE, method, (), (), detail=detail, dataset=dataset)
        self._register(op)
        if locator is not None:
            self._locators[oid] = locator
        annotated = df.withColumn(idk, ids)
        return TrackedDataFrame(self, annotated.drop(*internal) if internal else annotated, oid, idk, ())

    def _new_oid(self) -> int:
        self._oid += 1
        return self._oid

    def _register(self, op: OperatorProv) -> None:
        self._ops[op.oid] = op

    def operators(self, tdf: TrackedDataFrame) -> tuple[OperatorProv, ...]:
        """The operators ``tdf`` was built from, in id order."""
        seen: dict[int, OperatorProv] = {}
        stack = [tdf.oid]
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen[oid] = self._ops[oid]
            stack.extend(i.pred for i in seen[oid].inputs)
        return tuple(seen[o] for o in sorted(seen))

    def capture(self, tdf: TrackedDataFrame) -> Captured:
        """The in-memory provenance of ``tdf`` (nothing is computed until you ask for rows)."""
        if not isinstance(tdf, TrackedDataFrame) or tdf.tracker is not self:
            raise UnsupportedOperation.named("capture", "expects a DataFrame tracked by this Tracker")
        derived = top(tdf._derived)
        gone = [c for c in column_names(tdf.annotated) if c in derived]
        compact = tdf.annotated.drop(*gone) if gone else tdf.annotated  # drop: one py4j call, not one per column
        return Captured(self.operators(tdf), tdf._slots, tdf.oid, tdf.annotated, tdf.id_column,
                        compact, tdf._derived)

    def write(self, tdf: TrackedDataFrame, path: str, /, format: str = "parquet", mode: str = "errorifexists",
              message: str | None = None, table: tuple[str, str] | None = None, sink=None, **options):
        """Write the result and commit its provenance in one store commit (capture/storing/commit.py).
        ``table=("saveAsTable" | "insertInto", name)`` writes into that catalog table instead;
        ``sink(df)`` writes the result's visible columns ``df`` instead of ``df.write`` (zero-change
        capture: the program's own write, e.g. partitioned, or its SQL statement). ``tdf`` and
        ``path`` are positional, so that a writer option named ``path`` (``saveAsTable`` at a
        location) is one of ``options``."""

        return write_and_commit(self, tdf, path, format, mode, message, options, table, sink)
