"""Replaying a captured run's program on chosen input items (the Spark side of
capture/tracing/checking.py, which decides what to replay and judges what comes out).

A run captured from a script records the script, its arguments, its working folder and which of
its writes made the run (table ``capture_programs``). :func:`replay` runs that script again in
this process, as ``strata capture`` ran it (``runpy``, ``sys.argv``, ``__name__ == "__main__"``),
with the capture hooks installed (capture/auto/hooks.py) but nothing written: every write before
the run's is skipped, and at the run's write the caller replays it as often as it asks
(:class:`Replayer`): each time the written DataFrame's analyzed plan is translated by a
:class:`ReplayTracker`, whose sources keep only the given item ids -- the ids are attached where
every source gets them (``Tracker._source``), so an item is kept by the same id the capture gave
it. The script stops there (the rest of it does not run); ``spark.stop()`` is a no-op meanwhile,
so the session stays up. What came out is returned as plain Python rows (dicts) for the caller to
compare.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from capture.auto.hooks import Capture, hooked, run_script
from capture.auto.plan import translate
from capture.ids import REPLAY_ID
from capture.storing.commit import output_name
from capture.storing.runs import RunHead
from capture.storing.stored import opened
from capture.tracking.frame import TrackedDataFrame
from capture.tracking.tracker import Tracker
from store.errors import StrataError, UserError

_MAX_ROWS = 10_000  # replayed rows brought back per request
_ISIN = 500  # at most this many ids are kept by an IN list; more by a broadcast semi join

Keep = Mapping[int, Collection[int] | None]  # source operator id -> the item ids it keeps (None: all)
T = TypeVar("T")


class ReplayFailed(StrataError):
    """The replayed script raised, or stopped before the run's write."""


class _Stop(BaseException):
    """Raised at the replayed write so that the rest of the script does not run (a BaseException:
    a script's ``except Exception`` does not swallow it)."""


class ReplayTracker(Tracker):
    """A tracker whose sources keep only the item ids of ``keep`` (source operator id -> ids,
    None for all; a source not named keeps nothing). Operator ids are given as the capture gave
    them (a fresh tracker per write, in plan order), so ``keep`` names the run's own sources."""

    def __init__(self, spark, keep: Keep):
        super().__init__(spark, None)
        self.keep = keep

    def _source(self, df: DataFrame, dataset: str, method: str, detail: str, ids, internal: tuple[str, ...] = (),
                locator=None) -> TrackedDataFrame:
        tdf = super()._source(df, dataset, method, detail, ids, internal, locator)
        if tdf.oid in self.keep and self.keep[tdf.oid] is None:
            return tdf  # read whole
        kept = sorted(self.keep.get(tdf.oid) or ())
        ann = tdf.annotated
        col = F.col(f"`{tdf.id_column}`")
        if len(kept) <= _ISIN:
            ann = ann.filter(col.isin(kept) if kept else F.lit(False))
        else:
            wanted = self.spark.createDataFrame([(i,) for i in kept], "__strata_keep long")
            ann = ann.join(F.broadcast(wanted), col == wanted["__strata_keep"], "left_semi")
        return TrackedDataFrame(self, ann, tdf.oid, tdf.id_column, ())


class Replayer:
    """The run's write, reached on replay: :meth:`run` replays it on chosen input items."""

    def __init__(self, build: Callable[[Keep], TrackedDataFrame], target: str, store, head: RunHead):
        self._build = build
        self.target = target  # the dataset the program's write goes to now (the run's own naming)
        self._stored = opened(store, head)
        self.visible: list[str] = self._stored.visible  # the result's visible columns
        self.operators: list[tuple] | None = None  # the replayed plan's (oid, type, method, dataset)

    def expected(self, ids: Collection[int]) -> dict[int, dict]:
        """The run's stored visible values of result items ``ids`` (one Spark job)."""
        st = self._stored
        if not ids:
            return {}
        rows = st.result.filter(F.col(f"`{st.id_col}`").isin(sorted(ids))).select(st.id_col, *self.visible).collect()
        return {r[0]: dict(zip(self.visible, (_py(v) for v in tuple(r)[1:]), strict=True)) for r in rows}

    def run(self, keep: Keep) -> tuple[list[dict], float]:
        """The written DataFrame's plan with each source keeping ``keep``'s ids (None: all its
        rows; a source not named: none): the rows that come out (at most 10,000; each with its
        item id under :data:`REPLAY_ID`) and the seconds it took."""
        t0 = time.perf_counter()
        tdf = self._build(keep)
        if self.operators is None:
            self.operators = [(o.oid, o.type.value, o.method, o.dataset) for o in tdf.tracker.operators(tdf)]
        rows = tdf.with_item_ids(REPLAY_ID).limit(_MAX_ROWS).collect()
        return [_plain(r, self.visible) for r in rows], time.perf_counter() - t0


@dataclass
class _Replay(Capture):
    """The hooks' target while a script is replayed: writes are counted, none is made."""

    target: int = 0
    on_write: Callable | None = None
    result: object = None
    error: BaseException | None = None

    def write(self, df, target, fmt, mode, options, table=None, sink=None, source=None):
        self.writes += 1
        if self.writes != self.target:
            return None  # an earlier write of the program: not made
        spark = df.sparkSession

        def build(keep: Keep) -> TrackedDataFrame:
            tracker = ReplayTracker(spark, keep)
            return translate(tracker, df) if source is None else source(tracker)

        try:
            self.result = self.on_write(build, spark, output_name(spark, str(target), table))
        except BaseException as e:  # noqa: BLE001 - handed back past the script's own handlers
            self.error = e
        raise _Stop


def run_write(program: Mapping, on_write: Callable) -> object:
    """Run ``program``'s script (``script``, ``args``, ``cwd``) as ``strata capture`` ran it, up to
    its write number ``write``; there call ``on_write(build, spark, target)`` -- ``build(keep)``
    translates the written DataFrame with sources keeping ``keep``'s ids, ``target`` names where
    the write goes -- and return what it returns. The script's stdout goes to stderr."""
    script, args, cwd = str(program["script"]), list(program["args"]), str(program["cwd"])
    if not os.path.isfile(script):
        raise UserError(f"the run's program {script} is not there any more: it cannot be replayed",
                        hint="restore the script where it was captured from")
    if not os.path.isdir(cwd):
        raise UserError(f"the folder the run's program ran in, {cwd}, is not there any more")
    rep = _Replay(Tracker(None), target=int(program["write"]), on_write=on_write)
    argv, path, here, stop = sys.argv, list(sys.path), os.getcwd(), SparkSession.stop
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script))
    os.chdir(cwd)
    SparkSession.stop = lambda self: None  # the replay ends at the write; the session stays up
    try:
        with hooked(rep), contextlib.redirect_stdout(sys.stderr):
            try:
                run_script(script, ReplayFailed, f" on replay, before its write {rep.target}")
            except _Stop:
                pass
    finally:
        sys.argv, sys.path[:] = argv, path
        os.chdir(here)
        SparkSession.stop = stop
    if rep.error is not None:
        raise rep.error
    if rep.writes < rep.target:
        raise ReplayFailed(f"{script} made {rep.writes} writes on replay: the run was made by its write {rep.target}",
                           hint="the script or its inputs changed since the run")
    return rep.result


def replay(program: Mapping, store, head: RunHead, session: Callable[[Replayer], T]) -> T:
    """Run ``program``'s script up to run ``head``'s write and there return ``session(replayer)``:
    the caller replays the write as often as it likes (:class:`Replayer`)."""

    def on_write(build, spark, target: str):
        return session(Replayer(build, target, store, head))

    return run_write(program, on_write)


def _plain(row, visible: list[str]) -> dict:
    """A replayed row as a dict: the visible values by position (a name may repeat) and its id."""
    values = tuple(row)
    d = dict(zip(visible, (_py(v) for v in values[:-1]), strict=True))
    d[REPLAY_ID] = values[-1]
    return d


def _py(v):
    """A Spark value as plain Python (Rows to dicts, recursively)."""
    if hasattr(v, "asDict"):
        return {k: _py(x) for k, x in v.asDict().items()}
    if isinstance(v, list):
        return [_py(x) for x in v]
    if isinstance(v, dict):
        return {k: _py(x) for k, x in v.items()}
    return v
