"""Read accessed and manipulated paths off Spark's analyzed logical plan (via py4j).

Paths are found on Catalyst expressions: an ``AttributeReference`` of an operator input is a
top-level path; ``GetStructField`` adds ``.field``; ``GetArrayStructFields`` adds
``.[pos].field``; ``GetArrayItem``/``ElementAt`` with a literal index add ``.[n]`` (1-based),
otherwise ``.[pos]``. The *maximal* path expressions of an expression are its accessed paths.
Nothing here parses user strings: the plan is Spark's own analysis of the user's call. Each
question to the plan is a py4j round trip, so the frequent ones are asked in bulk: a plan's
output names and ids from Spark's own text of its attributes (:func:`names_ids`), which
projection items are attributes (:func:`project_output`), and whether a tree holds a subquery or
a UDF from Spark's tree-pattern bits (:func:`contains_any`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from py4j.java_gateway import JavaClass
from pyspark import SparkContext
from pyspark.sql import DataFrame

from capture.ids import is_hidden
from capture.operators import POS, Access, Manipulation, column_paths

# Spark's tree patterns of user-defined functions: PythonUDF and PythonUDAF carry PYTHON_UDF,
# ScalaUDF SCALA_UDF. A Python UDTF carries none: it is a Generate's generator, which capture
# refuses by its class (capture/tracking/project.py)
UDF_PATTERNS = ("PYTHON_UDF", "SCALA_UDF")
_patterns: dict = {}


def seq(jseq) -> list:
    """A Scala Seq as a Python list."""
    return [jseq.apply(i) for i in range(jseq.size())]


def to_seq(jvm, items) -> object:
    """The JVM objects ``items`` as a Scala Seq (a Java list filled over py4j, then Spark's
    ``PythonUtils.toSeq``)."""
    listed = getattr(jvm, "java.util.ArrayList")()
    for i in items:
        listed.add(i)
    return getattr(jvm, "org.apache.spark.api.python.PythonUtils").toSeq(listed)


# Spark writes an attribute as `name#id`, `L` after a long's id, `-T<delay>ms` after an event-time
# column's (AttributeReference.toString); the last `#` is the id's
_NAMED = re.compile(r"(.*)#(\d+)L?(?:-T\d+ms)?", re.DOTALL)
_SEP = "\x1f"


def texts(jseq, n: int) -> list[str] | None:
    """Spark's text of each of the ``n`` elements of the Scala Seq ``jseq``, from one ``mkString``;
    None when the text does not split into ``n`` (a separator in a name or a literal)."""
    parts = jseq.mkString(_SEP).split(_SEP) if n else []
    return parts if len(parts) == n else None


def scala_map(jmap) -> dict[str, str]:
    """A Scala ``Map[String, String]`` as a dict, from two ``mkString`` calls (its keys, its values:
    one map iterates both in the same order). Iterating a py4j view of the map would end with a
    Java exception that pyspark converts, 15 ms for each map; a separator inside a key or value
    falls back to asking entry by entry."""
    n = jmap.size()
    if not n:
        return {}
    keys, values = texts(jmap.keys().toSeq(), n), texts(jmap.values().toSeq(), n)
    if keys is None or values is None:
        pairs = seq(jmap.toSeq())
        return {p._1(): p._2() for p in pairs}
    return dict(zip(keys, values, strict=True))


def _named(attrs, written: list[str] | None) -> list[tuple[str, int]]:
    """(name, id) of each attribute of ``attrs`` from Spark's text of each (``written``); asked of
    each attribute when there are none or one has another shape."""
    if written is not None:
        out = [_NAMED.fullmatch(p) for p in written]
        if all(out):
            return [(m.group(1), int(m.group(2))) for m in out]
    return [(a.name(), a.exprId().id()) for a in seq(attrs)]


def names_ids(attrs) -> list[tuple[str, int]]:
    """(name, attribute id) of each attribute of the Scala Seq ``attrs`` (a plan's output), in
    order. Two py4j round trips (the size and one ``mkString``) where asking each attribute takes
    five; a name holding the separator (the text no longer splits into ``size`` attributes) or
    text of another shape falls back to asking each attribute."""
    return names_ids_texts(attrs)[0]


def names_ids_texts(attrs) -> tuple[list[tuple[str, int]], list[str] | None]:
    """:func:`names_ids`, and Spark's text of each attribute it read them from (None where the
    text does not split into the attributes)."""
    written = texts(attrs, attrs.size())
    return _named(attrs, written), written


def project_output(project) -> tuple[list[tuple[str, int]], list[int]]:
    """A Project's output as :func:`names_ids`, and the positions of its items that compute a
    column (an alias of an expression), not its input's attribute itself. Spark writes an
    attribute as ``name#id`` and an alias as ``child AS name#id``, so an item whose text is its
    output attribute's is that attribute: one ``mkString`` of the items beside the output's
    instead of a walk of every item. Texts that do not split into the items (a separator in a
    literal) count every item as computed."""
    output = project.output()
    n = output.size()
    attrs, items = texts(output, n), texts(project.projectList(), n)
    named = _named(output, attrs)
    if attrs is None or items is None:
        return named, list(range(n))
    return named, [k for k in range(n) if items[k] != attrs[k]]


def visible_names_ids(plan) -> list[tuple[str, int]]:
    """:func:`names_ids` of a plan's visible output (capture's hidden columns left out)."""
    return [a for a in names_ids(plan.output()) if not is_hidden(a[0])]


def cls(node) -> str:
    """The simple name of the JVM object's class, as ``node.getClass().getSimpleName()`` gives it,
    in one py4j round trip instead of two: commons-lang3's ``ClassUtils.getSimpleName(Object)``
    (on Spark's class path), its py4j member made once per gateway. Capture asks it of every plan
    node and of most expressions it reads."""
    client = node._gateway_client
    if _simple_name[0] is not client:
        _simple_name[:] = [client, JavaClass("org.apache.commons.lang3.ClassUtils", client).getSimpleName]
    return _simple_name[1](node)


_simple_name: list = [None, None]


def analyzed(df):
    return df._jdf.queryExecution().analyzed()


def frame_of(spark, plan):
    """The DataFrame of an (analyzed) logical plan."""
    return DataFrame(getattr(spark._jvm, "org.apache.spark.sql.classic.Dataset").ofRows(spark._jsparkSession, plan),
                     spark)


def column_names(df) -> list[str]:
    """``df.columns``, read off its analyzed plan's output (:func:`names_ids`: two py4j round
    trips). pyspark's ``columns`` converts the whole schema to Python first, which takes tens of
    milliseconds for a plan whose rows carry collected ids (TPC-DS Q4: 47 ms, against under 1 ms)."""
    return [n for n, _ in names_ids(analyzed(df).output())]


@dataclass(frozen=True, slots=True)
class Attr:
    input: int
    name: str


AttrMap = dict[int, Attr]  # exprId -> which input, which top-level path


def attr_map(plans: list) -> AttrMap:
    """exprId -> (input number, top-level path) for the visible output columns of each input plan:
    the column's name, or ``name~n`` for a later column of a name the plan's output already has
    (:func:`~capture.operators.column_paths`, the paths the operator that made it recorded)."""
    out: AttrMap = {}
    for i, plan in enumerate(plans):
        visible = visible_names_ids(plan)
        for (_, eid), path in zip(visible, column_paths(n for n, _ in visible), strict=True):
            out.setdefault(eid, Attr(i, path))  # a column repeated (select a, a): its first
    return out


def visible_attrs(plan) -> list:
    """A plan's visible output attributes (capture's hidden columns left out), in order."""
    return [a for a in seq(plan.output()) if not is_hidden(a.name())]


def output_paths(items: list) -> list[str]:
    """The top-level paths of an operator's visible output columns (named expressions, in order)."""
    return column_paths(i.name() for i in items)


def _literal_index(expr) -> int | None:
    if cls(expr) != "Literal":
        return None
    value = expr.value()
    return value if isinstance(value, int) else None


def as_path(expr, attrs: AttrMap) -> tuple[int, str] | None:
    """(input, path) when ``expr`` is a pure path expression over an input attribute."""
    kind = cls(expr)
    if kind == "AttributeReference":
        a = attrs.get(expr.exprId().id())
        return (a.input, a.name) if a else None
    if kind == "GetStructField":
        base = as_path(expr.child(), attrs)
        return (base[0], f"{base[1]}.{expr.extractFieldName()}") if base else None
    if kind == "GetArrayStructFields":
        base = as_path(expr.child(), attrs)
        return (base[0], f"{base[1]}.{POS}.{expr.field().name()}") if base else None
    if kind in ("GetArrayItem", "ElementAt"):
        base = as_path(expr.left(), attrs)
        n = _literal_index(expr.right())
        if base is None or n is None:
            return None
        pos = n + 1 if kind == "GetArrayItem" else n
        return (base[0], f"{base[1]}.[{pos}]")
    if kind == "GetMapValue":
        base = as_path(expr.left(), attrs)
        return (base[0], f"{base[1]}.{POS}") if base else None
    return None


def maximal_paths(expr, attrs: AttrMap) -> Iterator[tuple[int, str]]:
    """Every maximal path expression in ``expr`` (depth first, in order)."""
    p = as_path(expr, attrs)
    if p is not None:
        yield p
        return
    # not a path (e.g. an extractor with a computed index): its children's paths are accessed,
    # so arr[i + 1] accesses the whole arr and the paths in i
    for child in seq(expr.children()):
        yield from maximal_paths(child, attrs)


def tree_patterns(names: tuple[str, ...]):
    """A Scala Seq of Spark's tree patterns ``names`` (``TreePattern``), made once per JVM."""
    jvm = SparkContext._jvm
    key = (id(jvm), names)
    if key not in _patterns:
        found = getattr(getattr(jvm, "org.apache.spark.sql.catalyst.trees.TreePattern$"), "MODULE$")
        _patterns[key] = (jvm, to_seq(jvm, [getattr(found, n)() for n in names]))
    return _patterns[key][1]


def contains_any(expr, names: tuple[str, ...]) -> bool:
    """Whether ``expr``'s tree holds a node of one of Spark's tree patterns ``names``: Spark keeps
    each tree's patterns as bits, so one round trip answers what a walk would ask node by node. A
    plan node's bits hold its expressions' and its children's: a plan without the pattern holds it
    nowhere below."""
    return bool(expr.containsAnyPattern(tree_patterns(names)))


def has_udf(expr) -> bool:
    """Whether ``expr`` calls a user-defined function (its tree holds one of ``UDF_PATTERNS``)."""
    return contains_any(expr, UDF_PATTERNS)


def accesses(exprs: list, attrs: AttrMap) -> list[Access]:
    seen: dict[tuple[int, str], None] = {}
    for e in exprs:
        for p in maximal_paths(e, attrs):
            seen.setdefault(p, None)
    return [Access(i, path) for i, path in seen]


def out_pairs(expr, dst: str, attrs: AttrMap, gen: dict[int, list[tuple[int, str]]]) -> list[Manipulation]:
    """Path pairs (input path -> ``dst`` or a path below it) for an expression producing ``dst``.

    ``struct(a, b AS c)`` maps into ``dst.a``/``dst.c``; ``collect_list(x)`` into ``dst.[pos]``;
    an attribute made by a generator (``gen``) maps from the flattened path; any other
    expression maps each path it reads to ``dst`` (a derived value).
    """
    p = as_path(expr, attrs)
    if p is not None:
        return [Manipulation(p[0], p[1], dst)]
    kind = cls(expr)
    if kind == "AttributeReference" and expr.exprId().id() in gen:
        return [Manipulation(i, src, dst) for i, src in gen[expr.exprId().id()]]
    if kind == "Alias":
        return out_pairs(expr.child(), dst, attrs, gen)
    if kind == "AggregateExpression":
        return out_pairs(expr.aggregateFunction(), dst, attrs, gen)
    if kind in ("CollectList", "CollectSet"):
        return out_pairs(expr.child(), f"{dst}.{POS}", attrs, gen)
    if kind == "CreateNamedStruct":
        names = [str(n) for n in seq(expr.names())]
        vals = seq(expr.valExprs())
        return [m for n, v in zip(names, vals, strict=True) for m in out_pairs(v, f"{dst}.{n}", attrs, gen)]
    return [Manipulation(i, src, dst) for i, src in maximal_paths(expr, attrs)]


def has_aggregate(expr) -> bool:
    if cls(expr) == "AggregateExpression":
        return True
    return any(has_aggregate(c) for c in seq(expr.children()))


def aggregate_pairs(expr, dst: str, attrs: AttrMap, cols: list[str]) -> list[Manipulation]:
    """:func:`out_pairs` of an aggregation's output ``expr``; an aggregate that reads no input
    path (``count(*)``, ``count(1)``, ``sum(1)``) counts the member rows themselves, so each
    member contributes to it as a whole: every one of its top-level columns (``cols``) -> ``dst``
    (docs/capture.md, "Aggregates over no column")."""
    pairs = out_pairs(expr, dst, attrs, {})
    if pairs or not has_aggregate(expr):
        return pairs
    return [Manipulation(0, c, dst) for c in column_paths(cols)]


def nodes_above(top, inputs: list) -> list:
    """The plan nodes from ``top`` down to (not including) any of the ``inputs`` plans."""
    out, stack = [], [top]
    while stack:
        node = stack.pop()
        if any(node.fastEquals(i) or node.equals(i) for i in inputs):
            continue
        out.append(node)
        stack.extend(reversed(seq(node.children())))
    return out


def node_exprs(node) -> list:
    """The expressions a plan node evaluates on its input (not its output attributes)."""
    kind = cls(node)
    if kind == "Filter":
        return [node.condition()]
    if kind == "Project":
        return seq(node.projectList())
    if kind == "Aggregate":
        return seq(node.groupingExpressions()) + seq(node.aggregateExpressions())
    if kind == "Sort":
        return seq(node.order())
    if kind == "Generate":
        return [node.generator()]
    if kind == "Join":
        cond = node.condition()
        return [cond.get()] if cond.isDefined() else []
    if kind == "Deduplicate":
        return seq(node.keys())
    return []
