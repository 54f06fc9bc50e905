"""Check the traces of captured TPC runs by replay (`capture.tracing.check`), in one process.

    python check.py [--limit N | --sample N [--seed S]] [--master local[2]] [--tamper]
                    [--trace-time [--trace-only]] STORE [STORE ...]

For every run of every store (benchmarks/tpc/run.py captures job.py into them): the first N
result items (pattern ``/*``: any item with a non-null column), or N drawn from all of them by a
seed (``--sample``, as `strata trace --check --sample`), are traced and the query replayed on
each item's traced input items. One line per run: the query (its output folder ``qN``), the
items checked, how many passed (ok), passed the weaker check, failed or were not checkable, and
the seconds; then the totals, and every failed or not checkable item's lines (then the exit
code is 1, unless ``--tamper``). With ``--trace-time`` each run's first result item is also traced
to its input records with their sources and values (``strata trace --limit 1``'s rows), twice:
the first and the warm seconds (the second, the store's tables cached); with ``--trace-only``
nothing is checked by replay. With
``--tamper`` each item's replay leaves one of its traced input items out (a damaged trace): the
failed items are then the damage the check caught.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from capture.tracing import check, parse_pattern, trace, trace_table
from store import Store
from strata.spark import job_session, job_spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+")
    parser.add_argument("--limit", type=int, help="the first N result items checked per run [default: 3]")
    parser.add_argument("--sample", type=int, metavar="N", help="N result items per run drawn by --seed instead")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed [default: 0]")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--trace-time", action="store_true",
                        help="also time the trace of each run's first item with sources and values (first, warm)")
    parser.add_argument("--trace-only", action="store_true",
                        help="with --trace-time: only time the traces, check nothing by replay")
    parser.add_argument("--tamper", action="store_true",
                        help="leave one traced input item out of each item's replay (the first of its largest "
                             "source's): how many of these damaged traces the check catches")
    args = parser.parse_args()
    if args.limit is None and args.sample is None:
        args.limit = 3
    tamper = _drop_one if args.tamper else None
    pattern = parse_pattern("/*")
    totals = {"runs": 0, "items": 0, "ok": 0, "weaker": 0, "failed": 0, "not checkable": 0}
    trouble: list[str] = []
    warm: list[float] = []
    t_all = time.perf_counter()
    print(f"{'query':>5}  {'items':>5}  {'ok':>3}  {'weaker':>6}  {'failed':>6}  {'n/c':>3}  {'s':>6}  "
          f"{'trace s' if args.trace_time else ''}  note")
    with job_spark(args.master, {}):
        for path in args.stores:
            store = Store.open(path, spark=job_session)
            if not store.has_table("capture_runs"):
                continue
            runs = store.table("capture_runs").select("run", "output_path").collect()
            for run, output in sorted(runs, key=lambda r: _query_key(r[1])):
                timed = ""
                if args.trace_time:
                    times = [_trace_one(store, run, pattern) for _ in range(2)]
                    if times[1] is not None:
                        warm.append(times[1])
                        timed = f"{times[0]:.2f}/{times[1]:.2f}"
                if args.trace_only:
                    print(f"{os.path.basename(output):>5}  trace s (first/warm) {timed or '-'}", flush=True)
                    continue
                t0 = time.perf_counter()
                try:
                    done = check(store, run, pattern, args.limit, sample=args.sample, seed=args.seed, tamper=tamper)
                except Exception as e:  # noqa: BLE001 - a benchmark reports and goes on
                    print(f"{os.path.basename(output):>5}  error: {type(e).__name__}: {str(e).splitlines()[0][:150]}",
                          flush=True)
                    totals["runs"] += 1
                    trouble.append(f"{os.path.basename(output)}: {type(e).__name__}: {e}")
                    continue
                took = time.perf_counter() - t0
                counts = {v: done.count(v) for v in ("ok", "weaker", "not checkable")}
                totals["runs"] += 1
                totals["items"] += len(done.items)
                totals["failed"] += done.failed
                for v, k in counts.items():
                    totals[v] += k
                note = "; ".join(done.weaker)[:60] or next((i.notes[0][:60] for i in done.items if i.notes), "")
                print(f"{os.path.basename(output):>5}  {len(done.items):>5}  {counts['ok']:>3}  {counts['weaker']:>6}  "
                      f"{done.failed:>6}  {counts['not checkable']:>3}  {took:6.1f}  {timed}  {note}", flush=True)
                trouble += [f"{os.path.basename(output)}: {i.line()}" for i in done.items
                            if i.failed or i.verdict == "not checkable"]
    if not args.trace_only:
        print(f"{totals['runs']} runs, {totals['items']} items checked: {totals['ok']} ok, {totals['weaker']} weaker "
              f"check, {totals['failed']} failed, {totals['not checkable']} not checkable "
              f"({time.perf_counter() - t_all:.0f} s)")
    if warm:
        print(f"trace of one item with sources and values, warm: median {statistics.median(warm):.2f} s, "
              f"max {max(warm):.2f} s over {len(warm)} runs")
    for line in trouble:
        print(line)
    if trouble and tamper is None:
        raise SystemExit(1)


def _trace_one(store, run: str, pattern) -> float | None:
    """Seconds to trace the run's first matched item to its input records with sources and values
    (None: nothing matched)."""
    t0 = time.perf_counter()
    bt = trace(store, run, pattern, 1)
    if not bt.items:
        return None
    trace_table(store, bt, where=True, values=True)  # TRACE's rows, as IQL's TRACE scan takes them
    return time.perf_counter() - t0


def _drop_one(item_id: int, keep: dict) -> dict:
    """``keep`` with the first id of its largest traced source left out (sources read whole stay)."""
    traced = [o for o, ids in keep.items() if ids]
    if not traced:
        return keep
    oid = max(traced, key=lambda o: (len(keep[o]), -o))
    return {**keep, oid: set(sorted(keep[oid])[1:])}


def _query_key(output: str) -> tuple:
    name = os.path.basename(output)
    return (0, int(name[1:])) if name[1:].isdigit() else (1, name)


if __name__ == "__main__":
    main()
