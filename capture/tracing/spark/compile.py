"""Tree patterns compiled to Spark Column expressions (no Python worker runs while matching).

:func:`compile_pattern` turns a parsed :class:`~capture.tracing.pattern.Pattern` and the static
schema of the result items into ONE Column: the sorted, distinct matched node paths of an item
(``array<string>``), or null when the item does not match -- exactly what
:func:`capture.tracing.pattern.match` returns for the same item, so the Python matcher stays the
reference (and the fallback).

How: a set of pattern nodes is, at compile time, a list of *groups*; a group is one static data
type ``T`` and, at run time, an ``array<struct<p: string, v: T>>`` (node path, node value).

* child step ``/name``: arrays are stepped through (``transform`` + ``flatten``, positions go into
  the path as ``[i]``), then the struct field ``name`` of every node whose value is not null;
  ``/*`` makes one group per field;
* descendant step ``//name``: expanded over the schema into every field named ``name`` below;
* ``[n]``: ``element_at`` on array-typed groups; other groups drop out;
* ``[rel cmp lit]`` and ``[count(rel) cmp n]``: ``filter`` with the number of nodes ``rel`` reaches
  (``size`` of ``filter``, summed over groups); comparisons are typed statically: a string
  literal only ever equals string nodes, a number only numbers, ``true``/``false`` only booleans.

Pure apart from building Column objects (no action runs here).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.types import ArrayType, StringType

from capture.tracing.pattern import (
    Branch,
    Cmp,
    Count,
    Pattern,
    Position,
    Rel,
    Step,
    match,
    parse_pattern,
    required_literals,
)
from store.errors import UserError

MAX_GROUPS = 400  # a pattern whose node sets would need more groups is matched in Python


class NotCompilable(UserError):
    """This pattern cannot be compiled for this schema (the caller falls back to Python)."""


@dataclass(frozen=True)
class Group:
    dtype: object  # pyspark DataType of the node values
    nodes: object  # Column: array<struct<p: string, v: dtype>>
    field: str | None = None  # the field name the group's nodes sit at (for '//name')


def _F():

    return F


def _T():

    return T


def _node(p, v):
    return _F().struct(p.alias("p"), v.alias("v"))


def _join(p, seg, with_paths: bool):
    F = _F()
    if not with_paths:
        return F.lit(None).cast("string")
    return F.concat_ws(".", p, seg if not isinstance(seg, str) else F.lit(seg))


def _elements(group: Group, with_paths: bool) -> Group:
    """Arrays stepped through, recursively (nested arrays flatten; null elements stay as nodes)."""
    F, T = _F(), _T()
    if not isinstance(group.dtype, T.ArrayType):
        return group
    elem = group.dtype.elementType

    def one(n):
        def element(e, i):
            return _node(_join(n["p"], F.concat(F.lit("["), (i + 1).cast("string"), F.lit("]")), with_paths), e)
        return F.transform(F.coalesce(n["v"], F.array().cast(group.dtype)), element)

    inner = Group(elem, F.flatten(F.transform(group.nodes, one)))
    if isinstance(elem, T.ArrayType):
        leaf = _elements(Group(elem, F.array().cast(T.ArrayType(_struct(elem)))), with_paths).dtype

        def expand(n):  # a null inner array is one null node (as in the Python matcher)
            deeper = _elements(Group(elem, F.array(n)), with_paths).nodes
            null = F.array(_node(n["p"], F.lit(None).cast(leaf)))
            return F.when(n["v"].isNull(), null).otherwise(deeper)
        return Group(leaf, F.flatten(F.transform(inner.nodes, expand)))
    return inner


def _bind(f, *bound):
    """A one-argument lambda for Spark's higher-order functions (which count the parameters,
    so closures must not use default arguments)."""
    return lambda n: f(n, *bound)


def _struct(dtype):
    T = _T()
    return T.StructType([T.StructField("p", T.StringType()), T.StructField("v", dtype)])


def _reaches(dtype, name: str) -> bool:
    """Whether a field called ``name`` sits at or below ``dtype`` (through structs and arrays)."""
    T = _T()
    while isinstance(dtype, T.ArrayType):
        dtype = dtype.elementType
    return isinstance(dtype, T.StructType) and any(f.name == name or _reaches(f.dataType, name) for f in dtype.fields)


def _children(group: Group, name: str, with_paths: bool, below: str | None = None) -> list[Group]:
    """The ``name`` (or every, for '*') child groups; with ``below``, only the children that are
    called ``below`` or lead to such a field (the schema prunes '//below' early)."""
    F, T = _F(), _T()
    g = _elements(group, with_paths)
    if not isinstance(g.dtype, T.StructType):
        return []
    out = []
    for f in g.dtype.fields:
        if name != "*" and f.name != name:
            continue
        if below not in (None, "*") and f.name != below and not _reaches(f.dataType, below):
            continue
        fname = f.name

        def pick(n, fname):
            return _node(_join(n["p"], fname, with_paths), n["v"].getField(fname))
        kids = F.filter(F.transform(g.nodes, _bind(pick, fname)), lambda n: n["v"].isNotNull())
        out.append(Group(f.dataType, kids, fname))
    return out


_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType")


def _compare(v, dtype, cmp: Cmp):
    """``v cmp literal`` for a node of static type ``dtype`` (false when the kinds differ)."""
    F = _F()
    kind = type(dtype).__name__
    w = cmp.value
    if isinstance(w, bool):
        ok = kind == "BooleanType"
    elif isinstance(w, (int, float)):
        ok = kind in _NUMERIC
    else:
        ok = kind == "StringType"
    if not ok:
        return F.lit(False)
    lit = F.lit(w)
    return {"=": v == lit, "!=": v != lit, "<": v < lit, "<=": v <= lit, ">": v > lit, ">=": v >= lit}[cmp.op]


def _test(n, dtype, cmp: Cmp):
    return _compare(n["v"], dtype, cmp)


def _has_position(n, k: int):
    F = _F()
    return (F.size(n["v"]) >= k) & F.element_at(n["v"], k).isNotNull()


def _at_position(n, k: int):
    return _node(_join(n["p"], f"[{k}]", True), _F().element_at(n["v"], k))


def _compare_int(n, cmp: Cmp):
    lit = _F().lit(cmp.value)
    return {"=": n == lit, "!=": n != lit, "<": n < lit, "<=": n <= lit, ">": n > lit, ">=": n >= lit}[cmp.op]


class _Compiler:
    def __init__(self, pattern: Pattern):
        self.pattern = pattern

    def children(self, groups: list[Group], name: str, descendant: bool, with_paths: bool) -> list[Group]:
        out: list[Group] = []
        for g in groups:
            out.extend(self._desc(g, name, with_paths) if descendant else _children(g, name, with_paths))
        if len(out) > MAX_GROUPS:
            raise NotCompilable(f"a step reaches more than {MAX_GROUPS} schema positions")
        return out

    def _desc(self, group: Group, name: str, with_paths: bool) -> list[Group]:
        out, stack = [], [group]
        while stack:
            cur = stack.pop()
            for kid in _children(cur, "*", with_paths, below=name):
                stack.append(kid)
                if name == "*" or kid.field == name:
                    out.append(kid)
            if len(out) > MAX_GROUPS:
                raise NotCompilable(f"'//{name}' reaches more than {MAX_GROUPS} schema positions")
        return out

    def count(self, group_of_one: Group, rel: Rel):
        """The number of nodes ``rel`` reaches from a single node (summed over groups)."""
        F = _F()
        groups = [group_of_one]
        for name in rel.names:
            groups = self.children(groups, name, False, with_paths=False)
        sizes = []
        for g in groups:
            e = _elements(g, with_paths=False)
            nodes = e.nodes if rel.cmp is None else F.filter(e.nodes, _bind(_test, e.dtype, rel.cmp))
            sizes.append(F.size(nodes))
        if not sizes:
            return F.lit(0)
        total = sizes[0]
        for s in sizes[1:]:
            total = total + s
        return total

    def step(self, groups: list[Group], step: Step) -> list[Group]:
        F, T = _F(), _T()
        groups = self.children(groups, step.name, step.descendant, with_paths=True)
        for cond in step.preds:
            if isinstance(cond, Position):
                k = cond.n
                out = []
                for g in groups:
                    if not isinstance(g.dtype, T.ArrayType):
                        continue
                    kept = F.filter(g.nodes, _bind(_has_position, k))
                    picked = F.transform(kept, _bind(_at_position, k))
                    out.append(Group(g.dtype.elementType, picked))
                groups = out
            else:
                groups = [Group(g.dtype, F.filter(g.nodes, _bind(self.holds, g.dtype, cond)))
                          for g in groups]
        return groups

    def holds(self, n, dtype, cond):
        F = _F()
        single = Group(dtype, F.array(n))
        if isinstance(cond, Rel):
            return self.count(single, cond) > 0
        if isinstance(cond, Count):
            return _compare_int(self.count(single, cond.rel), cond.cmp)
        raise NotCompilable(f"unknown condition {cond!r}")

    def branch(self, root: Group, branch: Branch):
        """array<string> of the branch's final node paths (empty: the branch does not match)."""
        F = _F()
        groups = [root]
        for step in branch.steps:
            groups = self.step(groups, step)
        paths = []
        for g in groups:
            nodes = g.nodes
            if branch.cmp is not None:
                e = _elements(g, with_paths=True)
                nodes = F.filter(e.nodes, _bind(_test, e.dtype, branch.cmp))
            paths.append(F.transform(nodes, lambda n: n["p"]))
        if not paths:
            return F.array().cast("array<string>")
        return paths[0] if len(paths) == 1 else F.concat(*paths)


def compile_pattern(pattern: Pattern, schema, item):
    """The matched-paths Column for ``item`` (a struct Column of type ``schema``): sorted distinct
    paths when the item matches, else null. Raises :class:`NotCompilable`."""
    F = _F()
    root = Group(schema, F.array(_node(F.lit(None).cast("string"), item)))
    comp = _Compiler(pattern)
    branches = [comp.branch(root, b) for b in pattern.branches]
    every = branches[0] if len(branches) == 1 else F.concat(*branches)
    matched = F.lit(True)
    for b in branches:
        matched = matched & (F.size(b) > 0)
    return F.when(matched, F.array_sort(F.array_distinct(every)))


# ---- Spark edges: the schema of the result items, the matching plan ----------------------------
_SCHEMAS: dict[tuple, object] = {}  # (store root, run, pre-filter literals) -> StructType


def docs_schema(docs, key: tuple | None = None):
    """The static schema of the JSON items in ``docs`` (column ``doc``): Spark's JSON schema
    inference over all of them, in the JVM (one job). JSON omits null fields, so the schema has
    every field some item has a value for -- all a pattern can match. Cached under ``key``."""
    if key is not None and key in _SCHEMAS:
        return _SCHEMAS[key]
    reader = docs.sparkSession.read.options(inferTimestamp="false", prefersDecimal="false")
    schema = reader.json(docs.select("doc")).schema
    if key is not None:
        _SCHEMAS[key] = schema
    return schema


@dataclass(frozen=True)
class MatchPlan:
    """How a pattern is matched: compiled to a Spark expression, or by the Python matcher."""

    pattern: str
    compiled: bool
    prefilter: tuple[str, ...]  # literals every matching item's JSON contains (JVM-side pruning)
    reason: str = ""  # why not compiled
    schema_from: str = ""  # where the items' schema came from
    over: str = "from_json(doc)"  # what the compiled expression reads

    def describe(self) -> list[str]:
        lines = [f"match {self.pattern!r}"]
        if self.prefilter:
            lines.append("  pre-filter (JVM): item JSON contains " + ", ".join(repr(f'"{x}"') for x in self.prefilter))
        if self.compiled:
            lines.append(f"  compiled: Spark higher-order functions over {self.over} "
                         "(transform/filter/size/element_at); no Python worker")
        if self.schema_from:
            lines.append(f"  items' schema: {self.schema_from}")
        else:
            lines.append(f"  NOT compiled ({self.reason}): Python matcher in a UDF over each item's JSON")
        return lines


def match_column(pattern: Pattern, schema, doc_col: str = "doc"):
    """(Column or None, MatchPlan): the compiled matched-paths Column over ``doc_col``, or None
    (with the reason in the plan) when the pattern cannot be compiled for ``schema``."""
    F, T = _F(), _T()
    pre = tuple(required_literals(pattern))
    if not isinstance(schema, T.StructType) or not schema.fields:
        return None, MatchPlan(pattern.text, False, pre, "the result items have no fields")
    try:
        col = compile_pattern(pattern, schema, F.from_json(F.col(doc_col), schema))
    except NotCompilable as e:
        return None, MatchPlan(pattern.text, False, pre, e.message)
    return col, MatchPlan(pattern.text, True, pre)


def json_view(dtype):
    """The type a field has in the result items' JSON (``to_json`` of the result row), as Spark's
    JSON schema inference would see it: integers -> long, floats/decimals -> double, strings,
    dates, timestamps and binary -> string. Raises NotCompilable for maps and other types."""
    T = _T()
    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f.name, json_view(f.dataType)) for f in dtype.fields])
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(json_view(dtype.elementType))
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return T.LongType()
    if isinstance(dtype, (T.FloatType, T.DoubleType, T.DecimalType)):
        return T.DoubleType()
    if isinstance(dtype, T.BooleanType):
        return T.BooleanType()
    if isinstance(dtype, (T.StringType, T.DateType, T.TimestampType, T.TimestampNTZType, T.BinaryType)):
        return T.StringType()
    raise NotCompilable(f"result column type {dtype.simpleString()} has no fixed JSON schema")


# ---- matching result items in Spark -------------------------------------------------------------
def match_docs(docs, pattern, limit: int | None = None, schema_key: tuple | None = None,
               compiled: bool = True) -> dict[int, list[str]]:
    """Match a tree pattern against a DataFrame of ``id long, doc string`` (each item as JSON) in
    Spark; only the matching items' ids and matched paths come back to the driver. The pattern is
    compiled to Spark expressions over the items' inferred schema (cached under ``schema_key``);
    only a pattern that cannot be compiled (or ``compiled=False``) runs the Python matcher."""
    return run_match(prepare_match(docs, pattern, schema_key, compiled), limit)


@dataclass(frozen=True)
class PreparedMatch:
    docs: object  # DataFrame: id, and doc (JSON string) or item (struct), plus carried columns
    pattern: object  # Pattern
    column: object  # compiled Column, or None: Python UDF over column "doc"
    plan: MatchPlan
    carry: tuple[str, ...] = ()  # columns kept beside each matched item (matched_frame)


def prepare_match(docs, pattern, schema_key: tuple | None = None, compiled: bool = True,
                  schema=None) -> PreparedMatch:
    """Pre-filter and compile over ``schema`` (default: inferred from the items, one job, cached
    under ``schema_key``); no matching yet. ``docs``: ``id long, doc string`` (items as JSON)."""

    pat = _parsed(pattern)
    docs, pre = _prefiltered(docs, pat)
    if not compiled:
        return PreparedMatch(docs, pat, None, MatchPlan(pat.text, False, pre, "compilation turned off"))
    source = "given by the caller"
    if schema is None:
        source = "inferred from the items' JSON (one Spark job, then cached)"
        schema = docs_schema(docs, None if schema_key is None else (*schema_key, pre))
    col, plan = match_column(pat, schema)
    return PreparedMatch(docs, pat, col, replace(plan, schema_from=source))


def prepare_items(result, id_col: str, visible, pattern, compiled: bool = True,
                  carry: tuple[str, ...] = ()) -> PreparedMatch:
    """Like :func:`prepare_match`, over result rows stored natively (Parquet columns, no JSON):
    the item is ``struct(visible)`` cast to its JSON view (integers as long, numbers as double,
    dates and timestamps as strings), so the compiled matcher sees exactly what it sees in the
    JSON of the item; the schema is the result's own (no job). ``carry``: columns kept beside
    each matched item. Types with no JSON view (maps) fall back to the Python matcher over
    ``to_json(struct(visible))``."""

    pat = _parsed(pattern)
    cols = [F.col(f"`{c}`") for c in visible]
    kept = [F.col(f"`{c}`") for c in carry]
    ident = F.col(f"`{id_col}`").alias("id")
    struct_type = _T().StructType([result.schema[c] for c in visible])

    def as_json(reason: str) -> PreparedMatch:
        docs, pre = _prefiltered(result.select(ident, F.to_json(F.struct(*cols)).alias("doc"), *kept), pat)
        return PreparedMatch(docs, pat, None, MatchPlan(pat.text, False, pre, reason), carry)

    if not compiled:
        return as_json("compilation turned off")
    try:
        view = json_view(struct_type)
        if not view.fields:
            return as_json("the result items have no fields")
        docs = result.select(ident, F.struct(*cols).cast(view).alias("item"), *kept)
        col = compile_pattern(pat, view, F.col("item"))
    except NotCompilable as e:
        return as_json(e.message)
    plan = MatchPlan(pat.text, True, (), schema_from="the run's stored result (no job)",
                     over="the stored result's columns (no JSON)")
    return PreparedMatch(docs, pat, col, plan, carry)


def _parsed(pattern):
    return pattern if isinstance(pattern, Pattern) else parse_pattern(pattern)


def _prefiltered(docs, pattern):
    """``docs`` keeping only items whose JSON (column ``doc``) contains every string literal a
    match needs (JVM-side pruning: most items are never parsed), and those literals."""

    pre = tuple(required_literals(pattern))
    for literal in pre:
        docs = docs.filter(F.col("doc").contains(F.lit(f'"{literal}"')))
    return docs, pre


def matched_frame(prep: PreparedMatch, limit: int | None):
    """The matching items as a DataFrame: ``id``, ``_paths`` (matched node paths) and the carried
    columns (at most ``limit`` items); nothing runs yet."""

    if prep.column is not None:
        paths = prep.column
    else:
        pat = prep.pattern

        def run(doc):  # no type hints: Spark would try to infer a pandas UDF from them
            return match(pat, json.loads(doc)) if doc is not None else None

        paths = F.udf(run, ArrayType(StringType()))(F.col("doc"))
    df = (prep.docs.select(F.col("id"), paths.alias("_paths"), *[F.col(f"`{c}`") for c in prep.carry])
          .filter(F.col("_paths").isNotNull()))
    return df.limit(limit) if limit is not None else df


def run_match(prep: PreparedMatch, limit: int | None) -> dict[int, list[str]]:
    """Match in Spark; only the matching items' ids and matched paths come back to the driver."""
    return {r.id: list(r._paths) for r in matched_frame(prep, limit).select("id", "_paths").collect()}
