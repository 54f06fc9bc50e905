"""Runs captured without the model (``Tracker(model=False)``, ``strata capture --no-model``) mapped
into the multi-granularity model afterwards (``strata model``), one commit per run, as their
capture would have: on the driver (capture/storing/driver_model.py) or, for a run over its limit
or a store on a cluster path, with Spark (capture/storing/commit.py ``model_stored``, imported
only then). docs/capture.md, "Multi-granularity mapping".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from capture.storing import driver_model
from capture.storing.runs import RUNS, local_rows, read_head
from capture.storing.tables import result_table
from store import schema as S
from store.errors import UserError
from store.segments import segment_files


@dataclass(frozen=True)
class Modelled:
    """One run :func:`model_runs` mapped into the model: the store version it committed, the
    elements (items, and the run's operators and datasets) and edges it added, its seconds, and
    whether Spark computed it."""

    run: str
    version: int
    elements: int
    edges: int
    seconds: float
    spark: bool


def unmodelled(store) -> list[str]:
    """The store's captured runs whose items are not in the model (captured with ``model=False``),
    in the order they were committed."""
    if not store.has_table(RUNS):
        return []
    files = _files(store, RUNS)
    if files is not None:  # the segments in commit order, each file's rows in order
        runs = [r for f in files for r in pq.read_table(f, columns=["run"]).column("run").to_pylist()]
    else:
        runs = [r["run"] for r in store.table(RUNS).orderBy("started", "run").select("run").collect()]
    have = _modelled(store, runs)
    return [r for r in runs if r not in have]


def _modelled(store, runs: list[str]) -> set[str]:
    """Those of ``runs`` that are elements of the store (a run's model adds the run itself)."""
    if not runs or not store.has_table(S.ELEMENTS):
        return set()
    if store.storage.on_this_machine:
        local = store.local()
        probe = local.con.from_arrow(pa.table({S.ID: pa.array(runs, pa.string())}))
        return {r for r, in local.relation(S.ELEMENTS).join(probe, S.ID, how="semi").select(S.ID).fetchall()}
    return {r[S.ID] for r in store.table(S.ELEMENTS).filter(store.table(S.ELEMENTS)[S.ID].isin(runs))
            .select(S.ID).collect()}


def _files(store, table: str) -> list[str] | None:
    """The Parquet files of a committed table on this machine, or None on a cluster path."""
    if not store.storage.on_this_machine:
        return None
    return segment_files(store.storage, store.manifest.tables[table].segments)


def _rows(store, table: str) -> int:
    if not store.has_table(table):
        return 0
    return store.local().rows(table) if store.storage.on_this_machine else store.table(table).count()


def model_runs(store, runs: Iterable[str] | None = None,
               each: Callable[[Modelled], None] | None = None) -> list[Modelled]:
    """Map captured runs into the model, one commit per run: ``runs`` (default: every run
    :func:`unmodelled` names). A run already in the model is refused (UserError), so the model
    never holds a run twice. On a local store a run of at most ``driver_model.DRIVER_MODEL_IDS``
    ids is modelled on the driver (no JVM), a larger one (or any on a cluster path) with Spark, as at
    capture. ``each`` is called after every commit (progress)."""
    todo = unmodelled(store) if runs is None else list(dict.fromkeys(runs))
    if runs is not None:
        have = _modelled(store, todo)
        if have:
            raise UserError(f"run {sorted(have)[0]!r} is already in the model",
                            hint="`strata model` with no run names models every run captured with --no-model")
    done = []
    for run in todo:
        store = store.refresh()
        if _modelled(store, [run]):  # modelled meanwhile (another `strata model`)
            if runs is not None:
                raise UserError(f"run {run!r} is already in the model", hint="another process modelled it meanwhile")
            continue
        t0 = time.perf_counter()
        head = read_head(store, run)  # a UserError naming the known runs when there is no such run
        rows = local_rows(store, RUNS, run)
        row = rows[0] if rows else store.table(RUNS).filter(store.table(RUNS)["run"] == run).first().asDict()
        run_attrs = {"started": row["started"], "finished": row["finished"], "output": row["output_path"],
                     "format": row["output_format"]}
        info_out = {"path": row["output_path"], "format": row["output_format"]}
        files = _files(store, result_table(run))
        spark = files is None or driver_model.stored_ids(files) > driver_model.DRIVER_MODEL_IDS
        before = _rows(store, S.ELEMENTS), _rows(store, S.EDGES)
        with store.transaction(f"model {run}") as tx:  # from the version just checked, else it fails to commit
            if tx.version != store.version + 1:
                raise UserError(f"the store changed while modelling {run!r}", hint="run `strata model` again")
            if spark:
                from capture.storing.commit import model_stored  # deferred: pyspark only when needed

                model_stored(tx, store, head, row["pipeline"], run_attrs, info_out)
            else:
                driver_model.model_files(tx, files, head, list(head.operators), run, row["pipeline"], run_attrs,
                                         info_out)
        store = store.refresh()
        got = Modelled(run, store.version, _rows(store, S.ELEMENTS) - before[0], _rows(store, S.EDGES) - before[1],
                       time.perf_counter() - t0, spark)
        done.append(got)
        if each is not None:
            each(got)
    return done
