"""Checking a trace by replay (:func:`check`): does each traced result item come out again when
the run's program runs on exactly the input items its trace names?

Per matched result item: its whole row is traced (every visible column a matched node, so the
trace names what the item's every value came from), the input items its trace names --
contributing and influencing, per source operator -- are what the replay's sources keep, and the
run's program is run again on them (capture/auto/replay.py: the script up to the run's write,
translated as at the capture). The replayed row with the item's id is compared with the stored
one, column by column. Where the program's meaning makes the replay not exact (a LIMIT, a sample,
a value drawn at random, an anti join: :func:`exactness`), the check says so and what it checks
instead. A failed item is replayed again with each source read whole in turn, to say
whose items its trace misses.

Verdicts: ``ok``; ``weaker`` (passed the weaker statement the plan allows); ``differs`` (the item
came out with other values: which columns, expected and got); ``missing`` (no row with its id:
the inputs given and what came out instead); ``not checkable`` (why). This module runs no Spark
itself: the replay does (imported when a check runs).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal

from capture.ids import REPLAY_ID, item_hex
from capture.operators import UNRECORDED_RIGHT, OperatorProv, OpType
from capture.storing.runs import RunHead, read_head, read_program
from capture.tracing.backtrace import backtrace_rows, below
from capture.tracing.entry import wing
from capture.tracing.pattern import Pattern
from store.engine import Engine
from store.errors import UserError

OK, WEAKER, DIFFERS, MISSING, NOT_CHECKABLE = "ok", "weaker", "differs", "missing", "not checkable"
FAILED = (DIFFERS, MISSING)
_MARK = "\x00op"  # a source operator's dataset while tracing for a replay: the operator, not the dataset

# values computed anew every run: a replay cannot give them again
_RANDOM = re.compile(r"(?<![\w.])(rand|randn|random|uuid|shuffle|monotonically_increasing_id|spark_partition_id)\(")

Keep = dict[int, set[int] | None]  # source operator id -> item ids (None: all its rows)
# joins whose right rows the trace does not name: anti joins, and semi/existence joins and the
# left outer joins of a filter's uncorrelated scalar subqueries that record no right item (their
# detail ends with UNRECORDED_RIGHT; docs/capture.md, "Semi and anti joins")
_WHOLE_RIGHT = re.compile(
    rf"Join (LeftAnti\b|(LeftSemi|ExistenceJoin|LeftOuter)\b.*{re.escape(UNRECORDED_RIGHT.strip())}$)")

# what each of those joins is, by its kind (the regex's second group; None: an anti join)
_SEMI_WHY = "a semi join that records no right item (no condition, or right rows that carry their own inputs' arrays)"
_WHY_WHOLE = {
    "LeftAnti": "a left anti join (NOT EXISTS, NOT IN, EXCEPT): it keeps a row because no right row matches",
    "LeftSemi": _SEMI_WHY,
    "ExistenceJoin": _SEMI_WHY,
    "LeftOuter": "the join of a filter's uncorrelated scalar subquery (WHERE/HAVING x > (SELECT …)), which records "
                 "no right item",
}


@dataclass(frozen=True)
class ItemCheck:
    """One result item checked: its id, the verdict and what backs it."""

    item_id: int
    verdict: str  # OK, WEAKER, DIFFERS, MISSING or NOT_CHECKABLE
    expected: dict | None  # its stored values
    got: dict | None  # the replayed row with its id (None: none came out)
    inputs: dict[str, int]  # dataset -> input items given to the replay (-1: read whole)
    notes: tuple[str, ...] = ()  # the differing columns, what came out instead, the reason
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.verdict in FAILED

    def line(self) -> str:
        given = ", ".join(f"{_short(d)}: {'all' if n < 0 else n}" for d, n in sorted(self.inputs.items()))
        head = f"{self.verdict:<13} item {item_hex(self.item_id)}"
        if self.expected is not None:
            head += f" {_cut(_show(self.expected), 70)}"
        if self.verdict != NOT_CHECKABLE:
            head += f"  <- {sum(n for n in self.inputs.values() if n > 0)} input items ({given or 'none'})"
        return "\n".join([head, *("    " + n for n in self.notes)])


@dataclass(frozen=True)
class Check:
    """A replay check of a run's traced items (:func:`check`)."""

    run: str
    program: dict | None
    items: tuple[ItemCheck, ...]
    matched: int
    weaker: tuple[str, ...] = ()  # why the replay is not exact, and what is checked instead
    seconds: float = 0.0
    seed: int | None = None  # the items are a sample drawn with this seed (None: the first matched)

    def count(self, verdict: str) -> int:
        return sum(i.verdict == verdict for i in self.items)

    @property
    def failed(self) -> int:
        return sum(i.failed for i in self.items)

    @property
    def passed(self) -> bool:
        """No item failed (not checkable items do not fail)."""
        return self.failed == 0

    def summary(self) -> str:
        return (f"{len(self.items)} checked: {self.count(OK)} ok, {self.count(WEAKER)} weaker check, "
                f"{self.failed} failed, {self.count(NOT_CHECKABLE)} not checkable ({self.seconds:.1f} s)")

    def lines(self) -> list[str]:
        drawn = "" if self.seed is None else f", a sample of {len(self.items)} checked (seed {self.seed})"
        out = [f"check run {self.run!r}: {self.matched} result items matched{drawn}"]
        if self.program is not None:
            args = " ".join(self.program["args"])
            out.append(f"  replaying write {self.program['write']} of {self.program['script']}"
                       f"{' ' + args if args else ''} on each item's traced input items")
        out += ["  not exact: " + w for w in self.weaker]
        out += [i.line() for i in self.items]
        out.append(self.summary())
        return out

    def render(self) -> str:
        return "\n".join(self.lines())

    def as_json(self) -> dict:
        """The check as JSON-ready values (`strata trace --check --format json`; docs/tracing.md).
        Values JSON has no type for (dates, decimals, bytes) are given as their text."""
        def plain(value):
            if isinstance(value, dict):  # a row: the replay's own id column left out
                value = {k: v for k, v in value.items() if k != REPLAY_ID}
            return json.loads(json.dumps(value, default=str, ensure_ascii=False))

        return {"run": self.run, "program": self.program, "matched": self.matched, "seed": self.seed,
                "notExact": list(self.weaker),
                "seconds": round(self.seconds, 3), "passed": self.passed,
                "counts": {"ok": self.count(OK), "weaker": self.count(WEAKER), "failed": self.failed,
                           "notCheckable": self.count(NOT_CHECKABLE)},
                "items": [{"item": item_hex(i.item_id), "verdict": i.verdict, "expected": plain(i.expected),
                           "got": plain(i.got), "inputs": i.inputs, "notes": list(i.notes)} for i in self.items]}


# ---- what a replay can promise -------------------------------------------------------------
@dataclass(frozen=True)
class Exactness:
    """What a replay of the plan can promise: ``not_checkable`` (why, or None), ``weaker`` (why
    the replay is not exact, each with what is checked instead) and ``whole``: the source
    operators the replay reads whole (the right side of anti joins)."""

    not_checkable: str | None = None
    weaker: tuple[str, ...] = ()
    whole: frozenset[int] = frozenset()


def exactness(operators: tuple[OperatorProv, ...], result_oid: int) -> Exactness:
    """What a replay of the plan below ``result_oid`` can promise. A sample or a value drawn at
    random cannot be replayed on other rows (not checkable). After a LIMIT the item comes out of
    its own inputs, but that it is among the first n is not checked (the rows before it are not in
    its trace): the weaker statement, its row with the same values, is. A left anti join (NOT
    EXISTS, NOT IN, EXCEPT) keeps a left row because no right row matches, and capture records
    the left item only: its right side's sources are read whole. A left semi join and an
    existence join (EXISTS, IN, INTERSECT) record the right items that match a row, so their
    replay is exact on the trace alone, except where their detail says they record none; so
    does the join of a filter's uncorrelated scalar subquery, always: there too the right side's
    sources are read whole."""
    ops = {o.oid: o for o in operators}
    weaker: list[str] = []
    whole: set[int] = set()
    for oid in sorted(below(ops, result_oid)):
        op = ops[oid]
        text = (op.detail or "").lower()
        if op.method == "sample":
            return Exactness(f"operator {oid} is a sample: which rows it keeps is drawn per partition, so on "
                             "other rows it keeps others")
        drawn = sorted(set(_RANDOM.findall(text)))
        if drawn and op.type is not OpType.SOURCE:
            return Exactness(f"operator {oid} ({op.method}) computes values with {', '.join(drawn)}(): drawn "
                             "anew every run")
        if op.type is OpType.LIMIT:
            weaker.append(f"operator {oid} ({op.method}) keeps the first rows only: the rows ranked before an "
                          "item (or tied with it) are not in its trace, so that it is among them is not checked; "
                          "checked: its row comes out of its own inputs with the same values")
        kind = _WHOLE_RIGHT.match((op.detail or "").strip())
        if op.type is OpType.JOIN and kind and len(op.inputs) == 2:
            right = sorted(o for o in below(ops, op.inputs[1].pred) if ops[o].type is OpType.SOURCE)
            whole.update(right)
            names = ", ".join(f"{_short(ops[o].dataset or f'op{o}')} (operator {o})" for o in right)
            what = _WHY_WHOLE[kind.group(2) or "LeftAnti"]
            weaker.append(f"operator {oid} is {what}, and the trace names no right row (capture records the "
                          f"left item only); checked: the item comes out of its traced inputs with its right side "
                          f"read whole: {names or 'no source'}")
    return Exactness(None, tuple(weaker), frozenset(whole))


# ---- the inputs of one item ------------------------------------------------------------------
def item_inputs(row: dict, head: RunHead, visible: list[str]) -> Keep:
    """The input items the trace of matched row ``row``'s whole item names (every visible column
    a matched node), per source operator: contributing and influencing alike."""
    ops = tuple(replace(o, dataset=f"{_MARK}{o.oid}") if o.type is OpType.SOURCE else o for o in head.operators)
    bt = backtrace_rows([{**row, "_paths": list(visible)}], head.slots, ops, head.result_oid, {})
    keep: Keep = {}
    for item in bt.items:
        keep.setdefault(int(item.dataset[len(_MARK):]), set()).add(item.item_id)
    return keep


# ---- comparing values ------------------------------------------------------------------------
def same(a, b, unordered: bool = False) -> bool:
    """Equal values: floats within a relative 1e-9 (a sum of other rows' order), lists in order
    (as multisets when ``unordered``), structs field by field."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], unordered) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if unordered:
            rest = list(b)
            for x in a:
                hit = next((j for j, y in enumerate(rest) if same(x, y, True)), None)
                if hit is None:
                    return False
                rest.pop(hit)
            return True
        return all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _verdict(item_id: int, expected: dict | None, rows: list[dict], inputs: dict[str, int], visible: list[str],
             weaker: bool, seconds: float) -> ItemCheck:
    if expected is None:
        return ItemCheck(item_id, NOT_CHECKABLE, None, None, inputs, ("its stored row was not found",), seconds)
    mine = [r for r in rows if r.get(REPLAY_ID) == item_id]
    if not mine:
        alike = [r for r in rows if all(same(expected[c], r.get(c)) for c in visible)]
        if alike:
            return ItemCheck(item_id, WEAKER, expected, alike[0], inputs,
                             ("its values came out again, under another item id",), seconds)
        instead = "; ".join(_cut(_show(_visible(r, visible)), 100) for r in rows[:3])
        more = f" (and {len(rows) - 3} more rows)" if len(rows) > 3 else ""
        return ItemCheck(item_id, MISSING, expected, None, inputs, (
            "did not come out of the replay on its traced inputs; came out instead: "
            + (instead + more if rows else "nothing"),), seconds)
    for got in mine:
        if all(same(expected[c], got.get(c)) for c in visible):
            return ItemCheck(item_id, WEAKER if weaker else OK, expected, got, inputs, (), seconds)
    got = mine[0]
    if all(same(expected[c], got.get(c), unordered=True) for c in visible):
        return ItemCheck(item_id, WEAKER, expected, got, inputs,
                         ("the same values, a collected list in another order (Spark does not order them)",),
                         seconds)
    notes = tuple(f"column {c}: expected {_cut(_show(expected[c]), 60)}, got {_cut(_show(got.get(c)), 60)}"
                  for c in visible if not same(expected[c], got.get(c)))
    return ItemCheck(item_id, DIFFERS, expected, got, inputs, notes, seconds)


# ---- the entry point -------------------------------------------------------------------------
def check(store, run: str | None, pattern: Pattern, limit: int | None = None, *, sample: int | None = None,
          seed: int = 0, engine: Engine | None = None, tamper: Callable[[int, Keep], Keep] | None = None) -> Check:
    """Check the trace of the (first ``limit``) result items of run ``run`` (None: the store's
    last) that ``pattern`` matches by replaying the run's program on each item's traced inputs
    (module docstring). ``sample``: instead of the first, ``sample`` items drawn from all the
    matched ones (:func:`drawn`: the same for a seed on either engine; every matched row is read
    to draw them). The run must have been captured from a script (``strata capture``):
    otherwise, a UserError says so. ``tamper(item_id, keep)`` (tests only) changes what an item's
    replay keeps, to see the check fail. Runs Spark (the script's session) for the replay."""
    if sample is not None and limit is not None:
        raise UserError("a check takes the first LIMIT items or a sample of them, not both",
                        hint="drop --limit or --sample")
    t0 = time.perf_counter()
    head = read_head(store, run)
    program = read_program(store, head.run)
    if program is None:
        raise UserError(f"run {head.run!r} records no program to replay: only runs captured from a script with "
                        "`strata capture` can be checked (runs captured before programs were recorded cannot)",
                        hint="capture the script again with strata capture -- SCRIPT.py [ARGS...]")
    rows = wing(store, head, engine).matched_rows(store, head, pattern, limit, True)  # None with a sample
    matched = len(rows)
    if sample is not None:
        rows = drawn(rows, sample, seed)
    if not rows:
        return Check(head.run, program, (), 0, seconds=time.perf_counter() - t0)
    plan = exactness(head.operators, head.result_oid)
    used = None if sample is None else seed

    def none(why: str, weaker: tuple[str, ...] = ()) -> Check:
        items = tuple(ItemCheck(r["id"], NOT_CHECKABLE, None, None, {}, (why,)) for r in rows)
        return Check(head.run, program, items, matched, weaker, time.perf_counter() - t0, used)

    if plan.not_checkable is not None:
        return none(plan.not_checkable)
    from capture.auto.replay import replay  # deferred: the replay runs Spark

    items = replay(program, store, head, lambda replayer: _session(replayer, head, rows, plan, tamper))
    if isinstance(items, str):
        return none(items, plan.weaker)
    return Check(head.run, program, items, matched, plan.weaker, time.perf_counter() - t0, used)


def drawn(rows: list[dict], size: int, seed: int) -> list[dict]:
    """``size`` of the matched ``rows``, drawn by ``seed``: those whose item id hashes lowest with
    it (BLAKE2b of "seed:id"), in that order. Depends on the ids only, not on the order the
    engine read the rows in."""
    def key(row: dict) -> bytes:
        return hashlib.blake2b(f"{seed}:{row['id']}".encode(), digest_size=8).digest()

    return sorted(rows, key=key)[:size]


def _session(replayer, head: RunHead, rows: list[dict], plan: Exactness,
             tamper: Callable[[int, Keep], Keep] | None) -> tuple[ItemCheck, ...] | str:
    """At the run's write: each item replayed on its traced inputs and judged; a failed one
    replayed again with each source read whole in turn, to say whose items its trace misses.
    A string: why nothing can be checked (the script changed)."""
    if replayer.target != head.output[0]:
        return (f"the program's write goes to {replayer.target} now, the run wrote {head.output[0]}: the script "
                "or its arguments changed")
    sources = {o.oid: o.dataset or f"op{o.oid}" for o in head.operators if o.type is OpType.SOURCE}
    expected = replayer.expected([r["id"] for r in rows])
    stored = [(o.oid, o.type.value, o.method, o.dataset) for o in sorted(head.operators, key=lambda o: o.oid)]
    out = []
    for r in rows:
        keep: Keep = item_inputs(r, head, replayer.visible)
        keep.update(dict.fromkeys(plan.whole))
        if tamper is not None:
            keep = tamper(r["id"], keep)
        got, took = replayer.run(keep)
        if replayer.operators != stored:
            return "the program's plan is not the run's any more (other operators): the script or its inputs changed"
        inputs: dict[str, int] = {}
        for oid, ids in keep.items():
            name = sources.get(oid, f"op{oid}")
            inputs[name] = -1 if ids is None or inputs.get(name) == -1 else inputs.get(name, 0) + len(ids)
        one = _verdict(r["id"], expected.get(r["id"]), got, inputs, replayer.visible, bool(plan.weaker), took)
        if one.failed:
            one = replace(one, notes=one.notes + (_needed(replayer, one, keep, sources),))
        out.append(one)
    return tuple(out)


def _needed(replayer, item: ItemCheck, keep: Keep, sources: dict[int, str]) -> str:
    """Which inputs the item needs beyond its trace: the sources that, read whole (the others as
    traced), give the item back; else whether all inputs read whole do."""
    fixes = []
    for oid in sorted(sources):
        if keep.get(oid, ()) is None:
            continue
        got, _ = replayer.run({**keep, oid: None})
        if _verdict(item.item_id, item.expected, got, {}, replayer.visible, False, 0).verdict in (OK, WEAKER):
            fixes.append(f"{_short(sources[oid])} (operator {oid})")
    if fixes:
        return ("it comes out right when the whole input of " + " or of ".join(fixes)
                + " is given: its trace misses items of it")
    got, _ = replayer.run(dict.fromkeys(sources))
    if _verdict(item.item_id, item.expected, got, {}, replayer.visible, False, 0).verdict in (OK, WEAKER):
        return "it comes out right only when more than one input is given whole: its trace misses items of several"
    return "it does not come out right even from the whole input: the program or its inputs changed since the run"


# ---- rendering -------------------------------------------------------------------------------
def _visible(row: dict, visible: list[str]) -> dict:
    return {c: row.get(c) for c in visible}


def _show(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Decimal):
        return str(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def _short(dataset: str) -> str:
    """A dataset name for a line: a path's last part."""
    return os.path.basename(dataset.rstrip("/")) if "/" in dataset else dataset
