"""Joins and unions: two inputs, output ids derived from both (Pebble Table 6: <id1, id2, id_o>)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from capture.errors import UnsupportedOperation
from capture.id_columns import named
from capture.ids import JOIN, UNION, Derived, is_hidden
from capture.operators import (
    UNRECORDED_RIGHT,
    InRef,
    Manipulation,
    OperatorProv,
    OpInput,
    OpType,
    Slot,
    column_paths,
)
from capture.tracking.grouping import collect
from capture.tracking.paths import (
    accesses,
    analyzed,
    attr_map,
    cls,
    frame_of,
    has_udf,
    names_ids,
    out_pairs,
    project_output,
    seq,
    visible_names_ids,
)
from capture.tracking.project import column_of, visible_columns

if TYPE_CHECKING:
    from capture.tracking.frame import TrackedDataFrame

_HOW = {
    "inner": "inner", "cross": "cross", "outer": "full", "full": "full", "fullouter": "full",
    "left": "left", "leftouter": "left", "right": "right", "rightouter": "right",
    "semi": "semi", "leftsemi": "semi", "anti": "anti", "leftanti": "anti",
}


def _tracked(other, method: str, left: TrackedDataFrame) -> TrackedDataFrame:
    """`other` when it is tracked like `left` (a TrackedDataFrame), else a named refusal."""
    if not isinstance(other, type(left)):
        raise UnsupportedOperation.named(
            method, "the other DataFrame is not tracked; wrap it with tracker.track(df, name=...) first"
        )
    return other


def join(left: TrackedDataFrame, other, on, how: str | None) -> TrackedDataFrame:
    right = _tracked(other, "join", left)
    kind = _HOW.get((how or "inner").lower().replace("_", ""))
    if kind is None:
        raise UnsupportedOperation.named(f"join(how={how!r})", f"known join types: {', '.join(sorted(_HOW))}")
    oid = left.tracker._new_oid()
    clash = set(left.hidden()) & set(right.hidden())
    # an inner join of two inputs whose hidden columns differ leaves its id pending (frame.raw):
    # computed above the chain of inner joins and filters it starts, not between them
    lazy = kind in ("inner", "cross") and not clash and (on is None or isinstance(on, Column))
    rename = {h: f"{h}_j{oid}" for h in clash}
    ldf, rdf = (left.raw, right.raw) if lazy else (left.annotated, right.annotated)
    if rename:
        rdf = rdf.withColumnsRenamed(rename)
    rslots = tuple(s.renamed(rename) for s in right._slots)
    rcur = rename.get(right._cur, right._cur)
    new = ldf.join(rdf, on, how) if how is not None else ldf.join(rdf, on)
    op = _join_op(oid, left, right, *_join_node(new))
    if kind in ("semi", "anti"):  # a filter of the left input by the right one
        slots = (*(s.filtered() for s in left._slots), Slot(oid, left._cur, InRef(left._cur)))
        if kind == "anti":  # kept because no right row matches: no right item is recorded (docs/capture.md)
            return left._next(new, op, slots=slots)
        return _semi_next(left, right, new, op, on, slots)
    idk = f"__strata_id_{oid}"
    lid, rid = (left.id_value(), right.id_value()) if lazy else (F.col(left._cur), F.col(rcur))
    value = F.xxhash64(F.lit(oid), F.coalesce(lid, F.lit(-1)), F.coalesce(rid, F.lit(-1)))
    slots = (
        *(s.repeated() for s in left._slots),
        *(s.repeated() for s in rslots),
        Slot(oid, idk, InRef(left._cur, 0)),
        Slot(oid, idk, InRef(rcur, 1)),
    )
    derived = (*left._derived, *(d.renamed(rename) for d in right._derived), Derived(idk, JOIN, oid, (left._cur, rcur)))
    if not lazy:
        return left._next(new.withColumn(idk, value), op, cur=idk, slots=slots, derived=tuple(dict.fromkeys(derived)))
    lay, ray = left.layout(), right.layout()
    n = sum(isinstance(k, int) for k in lay)
    layout = (*lay, *(k + n if isinstance(k, int) else k for k in ray), idk)
    return left._next(new, op, cur=idk, slots=slots, derived=tuple(dict.fromkeys(derived)),
                      pending={**left.pending, **right.pending, idk: value}, layout=layout)


def compared_scalar(left: TrackedDataFrame, other) -> TrackedDataFrame:
    """The join that brings a ``Filter``'s uncorrelated scalar subquery (``WHERE x > (SELECT
    avg(x) FROM …)``, a ``HAVING``'s) to every row of the filter's input ``left``: a left outer
    join with no condition to ``other``, the subquery's plan (at most one row: capture/auto/plan.py
    makes it so). Its row is compared with every left row and carries the ids of every row it was
    computed from (an aggregation's members), so recording it would copy all of them into every
    row, n × m ids: no right item is recorded, as for a semi join without a condition
    (:func:`_matches_recordable`). The right side's visible columns alone are joined; the left id
    is kept (the join's input 0), the operator's detail ends with ``UNRECORDED_RIGHT`` (the replay
    check reads the right side whole) and the right side influences through the filter's
    condition over the joined column (docs/capture.md, "Semi and anti joins")."""
    right = _tracked(other, "join", left)
    oid = left.tracker._new_oid()
    new = left.annotated.join(right.untracked(), None, "left")
    op = _join_op(oid, left, right, *_join_node(new))
    # at most one right row: the left rows are neither repeated nor dropped
    slots = (*left._slots, Slot(oid, left._cur, InRef(left._cur)))
    return left._next(new, replace(op, detail=op.detail + UNRECORDED_RIGHT), slots=slots)


def _join_node(new: DataFrame) -> tuple:
    """The Join node of ``new`` (a DataFrame join: the node, or a Project over it), its visible
    output's (name, id) pairs, and the items computing them: a Project's item where it computes
    one (a full outer USING join's coalesce), None where the column is an input's attribute."""
    plan = analyzed(new)
    jnode, top = plan, cls(plan)
    kind = top  # of jnode
    while kind != "Join":
        kids = seq(jnode.children())
        if len(kids) != 1:
            raise UnsupportedOperation.named("join", f"unexpected plan node {jnode.nodeName()}")
        jnode = kids[0]
        kind = cls(jnode)
    if top == "Project":
        named, computed = project_output(plan)
    else:
        named, computed = names_ids(jnode.output()), []
    items: list = [None] * len(named)
    listed = plan.projectList() if computed else None
    for k in computed:
        items[k] = listed.apply(k)
    visible = [k for k, (n, _) in enumerate(named) if not is_hidden(n)]
    return jnode, [named[k] for k in visible], [items[k] for k in visible]


def _join_op(oid: int, left: TrackedDataFrame, right: TrackedDataFrame, jnode, named: list[tuple[str, int]],
             items: list | None = None) -> OperatorProv:
    """A join's operator: A per side = the condition's paths; M = each output column (named
    ``named``, computed by ``items``: None, or None at a position, for an input's attribute
    itself) from its side's columns."""
    attrs = attr_map([jnode.left(), jnode.right()])
    cond = [jnode.condition().get()] if jnode.condition().isDefined() else []
    udf = any(has_udf(c) for c in cond)
    acc = accesses(cond, attrs)
    inputs = tuple(
        OpInput(t.oid, None if udf else tuple(a.path for a in acc if a.input == i))
        for i, t in enumerate((left, right))
    )
    # a right column named as a left one is output path `name~2` (column_paths): two columns
    manipulated = []
    for (_, i), item, dst in zip(named, items or [None] * len(named), column_paths(n for n, _ in named),
                                 strict=True):
        if item is not None:
            manipulated.extend(out_pairs(item, dst, attrs, {}))
        elif i in attrs:
            manipulated.append(Manipulation(attrs[i].input, attrs[i].name, dst))
    return OperatorProv(oid, OpType.JOIN, "join", inputs, tuple(manipulated), detail=str(jnode.simpleString(25)))


def existence(left: TrackedDataFrame, right: TrackedDataFrame, build, on: Column | None) -> TrackedDataFrame:
    """Spark's existence join (``EXISTS`` under an ``OR``, as RewritePredicateSubquery plans it):
    every left row once, plus a boolean column saying whether a right row matched the condition
    ``on``. ``build(left annotated, right annotated)`` is the join over the two (Spark's own
    node). As a left semi join: the left id is kept, the left columns copied, the right side's
    condition paths accessed, and the right items that match a row recorded as its input 1
    (:func:`_with_matches`; none for a row no right row matches; none at all where
    :func:`_matches_recordable` says no); the boolean column is built
    from no input path (nothing is copied into it)."""
    right = _tracked(right, "join", left)
    oid = left.tracker._new_oid()
    new = build(left.annotated, right.annotated)
    jnode = analyzed(new)
    op = _join_op(oid, left, right, jnode, visible_names_ids(jnode.left()))
    return _semi_next(left, right, new, op, on, (*left._slots, Slot(oid, left._cur, InRef(left._cur))),
                      every_row=True)


def _matches_recordable(right: TrackedDataFrame, on) -> bool:
    """Whether a semi (or existence) join records the right items matching each row. Not without
    a condition (every right row matches every left row: n × m ids), nor when the right side's
    rows carry arrays of their own inputs (an aggregation's members, earlier matches): each left
    row would hold a copy of every matching right row's arrays, e.g. all the sales behind the
    per-state totals an `IN (SELECT state … GROUP BY state …)` compares with (TPC-DS Q70). Then the
    right side influences through the condition's paths only (docs/capture.md, "Semi and anti
    joins")."""
    return on is not None and not any(s.array or s.nest for s in right._slots)


def _semi_next(left: TrackedDataFrame, right: TrackedDataFrame, new: DataFrame, op: OperatorProv, on,
               slots: tuple[Slot, ...], every_row: bool = False) -> TrackedDataFrame:
    """The output of semi (or existence) join ``op``: with the right items that match each row
    (:func:`_with_matches`) where :func:`_matches_recordable`, else with none and the operator's
    detail saying so (the replay check reads such a join's right side whole)."""
    if not _matches_recordable(right, on):
        return left._next(new, replace(op, detail=op.detail + UNRECORDED_RIGHT), slots=slots)
    new, more, derived = _with_matches(left, right, new, on, op.oid, every_row)
    return left._next(new, op, slots=(*slots, *more), derived=derived)


def _with_matches(left: TrackedDataFrame, right: TrackedDataFrame, new: DataFrame, on, oid: int,
                  every_row: bool = False) -> tuple[DataFrame, tuple[Slot, ...], tuple[Derived, ...]]:
    """A left semi (or existence) join's output ``new`` -- Spark's own join, one row per kept left
    row -- with the right items that match each row: a hidden array ``__strata_match_<oid>`` of
    the stored hidden columns (or bare ids: ``grouping.member``) of every right row that meets
    the condition ``on`` with it, in no particular order; null where none matches (``on`` is a
    condition, never None: without one every pair matches and nothing is recorded). Returns that
    DataFrame, the slots to add (the join's input 1, and the right side's own slots seen inside
    the array, de-duplicated: a right row may match several left rows) and every derived id.

    Where ``on`` is equalities between left and right expressions (Spark's equi-join keys, as
    ``IN`` and most ``EXISTS`` give) and Spark estimates the right side no larger than the left,
    a row's matches depend on its key alone: the right rows are grouped by their key and joined
    to ``new`` on the row's key, so the left side is computed once (TPC-DS Q58: 3.5 s of its 5 s
    overhead was the left side computed again). Otherwise the two annotated sides are joined on
    ``on`` and grouped by the left id: the join keeps only the right rows that match, where
    grouping a large right side whole would cost more than reading a small left side twice
    (TPC-H Q4: 37 MB of orders against 150 MB of lineitem). A semi join's rows are then the left
    rows whose id has a group (an inner join of the left side with the groups: the rows Spark's
    semi join keeps, each copy of a repeated row too), so the right side is read once, not once
    for Spark's semi join and again for the matches (TPC-DS Q16, Q94: `EXISTS` over all of
    catalog_sales or web_sales with a `<>` beside the key); an existence join keeps every row (``every_row``),
    so its groups are joined back to ``new``. Either way the rows of a semi join are those of
    ``new`` (:func:`_keyed_matches`)."""
    arr, key = f"__strata_match_{oid}", f"__strata_key_{oid}"
    rename = {h: f"{h}_j{oid}" for h in set(left.hidden()) & set(right.hidden())}
    rdf = right.annotated.withColumnsRenamed(rename) if rename else right.annotated
    pairs = left.annotated.join(rdf, on, "inner")
    matched = collect(right, lambda h: named(rename.get(h, h)).alias(h))  # the right rows' members, collected
    keyed = _keyed_matches(pairs)
    if keyed is not None:
        spark, (lkeys, rkeys, rplan) = new.sparkSession, keyed
        names = [f"{key}_{i}" for i in range(len(lkeys))]
        by = [column_of(spark, k).alias(n) for k, n in zip(rkeys, names, strict=True)]
        matches = frame_of(spark, rplan).groupBy(*by).agg(matched.alias(arr))
        cond = None
        for k, n in zip(lkeys, names, strict=True):
            eq = column_of(spark, k) == matches[n]
            cond = eq if cond is None else cond & eq
        out = new.join(matches, cond, "left").drop(*[matches[n] for n in names])
    else:
        matches = pairs.groupBy(named(left._cur).alias(key)).agg(matched.alias(arr))
        if every_row:
            out = new.join(matches, named(left._cur) == named(key), "left").drop(key)
        else:
            out = left.annotated.join(_built(matches), named(left._cur) == named(key), "inner").drop(key)
    slots = (*(s.repeated().nested_in(arr) for s in right._slots),
             Slot(oid, left._cur, InRef(right._cur, 1), array=arr))
    return out, slots, (*left._derived, *(d.nested_in(arr) for d in right._derived))


def _built(matches: DataFrame) -> DataFrame:
    """``matches`` as the side Spark builds its join with the left rows from, where it is small
    enough to broadcast: the rows then keep the order and partitioning of the left side, as
    Spark's own semi join keeps them (an inner join would build the smaller side, often the left)."""
    limit = matches.sparkSession._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold()
    size = int(str(analyzed(matches).stats().sizeInBytes()))
    return matches.hint("broadcast") if 0 <= size <= limit else matches


def _keyed_matches(pairs: DataFrame) -> tuple[list, list, object] | None:
    """``(left keys, right keys, right plan)`` of the inner join ``pairs`` when its condition is
    equalities between left-only and right-only expressions and nothing else (Spark's
    ``ExtractEquiJoinKeys``; a null-safe equality becomes keys that compare nulls alike) and
    Spark's size estimate of its right side (``stats().sizeInBytes``: file sizes, narrowed by the
    columns kept) is no larger than its left side's; the right keys over the join's right plan
    (its attributes as the join sees them). Else None."""
    jnode = analyzed(pairs)
    if cls(jnode) != "Join" or jnode.right().stats().sizeInBytes() > jnode.left().stats().sizeInBytes():
        return None
    extract = getattr(getattr(pairs.sparkSession._jvm, "org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys$"),
                      "MODULE$")
    got = extract.unapply(jnode)
    if got.isEmpty():
        return None
    found = got.get()
    lkeys, rkeys = seq(found._2()), seq(found._3())
    if found._4().isDefined() or not lkeys:  # a condition beyond the keys: matches depend on more than a key
        return None
    return lkeys, rkeys, jnode.right()


def union(left: TrackedDataFrame, other, method: str, by_name: bool, allow_missing: bool = False) -> TrackedDataFrame:
    """Spark itself matches the visible columns (by position, or by name as the session's case
    sensitivity says, with ``allowMissingColumns``); each side carries every hidden column (null
    where it has none), its side number and the union id."""
    right = _tracked(other, method, left)
    oid = left.tracker._new_oid()
    side, idk = f"__strata_side_{oid}", f"__strata_id_{oid}"
    lh, rh = left.hidden(), right.hidden()
    hidden = list(dict.fromkeys(lh + rh))
    types = {h: (left.annotated.schema[h] if h in lh else right.annotated.schema[h]).dataType for h in hidden}

    def side_cols(t: TrackedDataFrame, n: int) -> list[Column]:
        have = set(t.hidden())
        return [*visible_columns(t.annotated),  # by attribute: a side may repeat a name (a join's two a)
                *(named(h) if h in have else F.lit(None).cast(types[h]).alias(h) for h in hidden),
                F.lit(n).cast("byte").alias(side), F.xxhash64(F.lit(oid), F.lit(n), F.col(t._cur)).alias(idk)]

    lsel, rsel = left.annotated.select(*side_cols(left, 0)), right.annotated.select(*side_cols(right, 1))
    try:
        new = lsel.unionByName(rsel, allow_missing) if by_name else lsel.union(rsel)
    except AnalysisException:
        # the same union of the visible columns alone raises Spark's own error, without ours
        lplain, rplain = left.untracked(), right.untracked()
        lplain.unionByName(rplain, allow_missing) if by_name else lplain.union(rplain)
        raise
    lvis, rvis = left.visible(), right.visible()
    if by_name:  # a right column renamed only where the match ignored case
        same = (lambda a, b: a == b) if _case_sensitive(new) else (lambda a, b: a.lower() == b.lower())
        pairs = [(c, next((o for o in lvis if same(o, c)), c)) for c in rvis]
    else:  # by position; a name repeated on a side is path `name~n` there (column_paths)
        pairs = list(zip(column_paths(rvis), column_paths(lvis), strict=True))
    renames = tuple(Manipulation(1, c, o) for c, o in pairs if c != o)
    op = OperatorProv(oid, OpType.UNION, method, (OpInput(left.oid, ()), OpInput(right.oid, ())), renames,
                      detail=str(analyzed(new).simpleString(25)))
    slots = (
        *(s.only_when(side, 0) for s in left._slots),
        *(s.only_when(side, 1) for s in right._slots),
        Slot(oid, idk, InRef(left._cur, 0), when=((0, side, 0),)),
        Slot(oid, idk, InRef(right._cur, 1), when=((0, side, 1),)),
    )
    both = set(left._derived) & set(right._derived)  # from a common ancestor: valid on both sides
    derived = (
        *(d if d in both else d.only_when(side, 0) for d in left._derived),
        *(d.only_when(side, 1) for d in right._derived if d not in both),
        Derived(idk, UNION, oid, (side, left._cur, right._cur)),
    )
    return left._next(new, op, cur=idk, slots=slots, derived=derived)


def _case_sensitive(df) -> bool:
    return df.sparkSession.conf.get("spark.sql.caseSensitive", "false").lower() == "true"
