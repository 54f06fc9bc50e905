"""`strata diff A B`: what two runs of one pipeline (or one dataset at two versions) rest on, and
how their outputs differ (docs/verify.md, "Diffing runs"; PROVision's version inconsistency).

A side is a process element (a captured run, an OpenLineage run) or a data element (a dataset
version, ``NAME@N``). Its *footprint* is read from the core tables:

* processes: the element and everything it contains (a captured run's operators), or for a data
  element the processes on the edges of its backward lineage;
* edges: the triples those processes made (for a data element: its backward lineage);
* inputs: sources of those edges that no edge of the footprint produced (input items, or the
  dataset versions an OpenLineage run read); upstream: the data elements containing the inputs
  (their datasets);
* outputs: the footprint's edge targets nothing in it consumes, each with the inputs it rests on.

Entries are matched across the sides by *keys* that do not hold a run's own id: an operator by
its position, type and method (attributes ``oid``, ``type``, ``method``) or by its type and
``namespace``/``name``; a dataset or dataset version by ``namespace`` and ``name`` (same key,
other ``version``: changed); an item by its id (source items keep their ids across runs that read
the same input); an output by a caller-given key (a captured run's output values, see
``values``) or by ``namespace``/``name``, else by the inputs it rests on. Output entries present
on both sides but resting on other inputs, or with other values, are ``changed``, with the inputs
only one side's rests on and the attribute paths whose values differ.

A diff reads the store in this process (DuckDB over a local store); a store on a Hadoop URI
is refused with a message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from store import schema as S
from store.errors import StoreError, UserError

_VERSIONED = re.compile(r"^(?P<name>.+)@(?P<version>\d+)$")
Values = Callable[[str], dict[str, dict[str, Any]] | None]  # run id -> output id -> values
Paths = Callable[[str, str], list[str]]  # (run id, output attribute path) -> input attribute paths


@dataclass
class Side:
    """One side's footprint (module docstring)."""

    id: str
    kind: str  # "process" or "data"
    type: str
    attrs: dict[str, str]
    processes: dict[str, str] = field(default_factory=dict)  # key -> id
    inputs: dict[str, str] = field(default_factory=dict)  # key -> id
    upstream: dict[str, str] = field(default_factory=dict)  # key -> id
    outputs: dict[str, str] = field(default_factory=dict)  # key -> id
    rests_on: dict[str, set[str]] = field(default_factory=dict)  # output id -> input ids
    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # output id -> flat path -> value
    vertex: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # id -> (type, attrs)


class _Reader:
    """Lookups into the core tables of one store version (DuckDB over its files)."""

    def __init__(self, st) -> None:
        if not st.storage.on_this_machine:
            raise StoreError(f"store {st.root} is not a local folder: `strata diff` reads local stores only",
                             hint="copy the store to a local folder")
        self.local = st.local()
        self._vertices: dict[str, tuple[str, str, dict[str, str]]] | None = None

    def _semi(self, table: str, key: str, values: Iterable[str], *cols: str) -> list[tuple]:
        """Rows (``cols``) of ``table`` whose ``key`` is one of ``values``: a semi-join with an
        Arrow table, so no value becomes SQL text (as store/lineage.py does)."""
        import pyarrow as pa  # deferred: only this path needs pyarrow

        keys = self.local.con.from_arrow(pa.table({key: pa.array(sorted(set(values)), pa.string())}))
        return self.local.relation(table).join(keys, key, how="semi").project(*cols).fetchall()

    @property
    def vertices(self) -> dict[str, tuple[str, str, dict[str, str]]]:
        """id -> (kind, type, attrs) of every vertex (read once: a diff looks up many)."""
        if self._vertices is None:
            rows = self.local.relation(S.VERTICES).project(S.ID, S.KIND, S.TYPE, S.ATTRS).fetchall()
            self._vertices = {i: (k, t, dict(a) if a else {}) for i, k, t, a in rows}
        return self._vertices

    def contained(self, ids: Iterable[str]) -> set[str]:
        """``ids`` and every element contained in one of them."""
        ids = set(ids)
        return ids | {r[0] for r in self._semi(S.ANCESTORS, S.ANCESTOR, ids, S.ID)}

    def containers(self, ids: Iterable[str]) -> set[str]:
        """The containers (containment ancestors) of ``ids``."""
        return {r[0] for r in self._semi(S.ANCESTORS, S.ID, ids, S.ANCESTOR)}

    def parents(self, ids: Iterable[str]) -> dict[str, str]:
        """The direct container (containment depth 1) of each of ``ids`` that has one."""
        out: dict[str, str] = {}
        for i, a, d in sorted(self._semi(S.ANCESTORS, S.ID, ids, S.ID, S.ANCESTOR, S.DEPTH)):
            if d == 1:
                out.setdefault(i, a)
        return out

    def edges_of(self, processes: Iterable[str]) -> list[tuple[str, str, str]]:
        return self._semi(S.EDGES, S.PROCESS, processes, S.SRC, S.DST, S.PROCESS)

    def edges_into(self, ids: Iterable[str]) -> list[tuple[str, str, str]]:
        return self._semi(S.EDGES, S.DST, ids, S.SRC, S.DST, S.PROCESS)


def resolve(r: _Reader, name: str) -> tuple[str, str, str, dict[str, str]]:
    """(id, kind, type, attrs) of a diff side: an element id, an OpenLineage ``runId``, or
    ``NAME@N`` (a data vertex with attributes ``name`` NAME and ``version`` N)."""
    v = r.vertices
    if name in v:
        return (name, *v[name])
    m = _VERSIONED.match(name)
    if m:
        hits = [i for i, (kind, _, a) in v.items() if kind == S.DATA and a.get("version") == m["version"]
                and (a.get("name") == m["name"] or f"{a.get('namespace', '')}/{a.get('name')}" == m["name"]
                     or i == m["name"])]
        if len(hits) == 1:
            return (hits[0], *v[hits[0]])
        if len(hits) > 1:
            raise UserError(f"{name} names {len(hits)} dataset versions: {', '.join(sorted(hits)[:5])}",
                            hint="write NAMESPACE/NAME@N, or give the element id")
    hits = [i for i, (_, _, a) in v.items() if a.get("runId") == name]
    if len(hits) == 1:
        return (hits[0], *v[hits[0]])
    raise UserError(f"unknown run or dataset version {name!r}: no element has this id or runId, and no "
                    "dataset version this NAME@VERSION",
                    hint="a captured run's id (`SELECT r.id FROM Run r`; runs captured with model=False "
                         "have no graph to compare), an OpenLineage runId, or NAME@1")


def _key(id_: str, typ: str, attrs: dict[str, str], order: dict[str, int] | None = None,
         parent: str | None = None) -> str:
    """The side-independent key of a process or data element (module docstring): a process
    without ``oid`` or ``name`` (an OpenLineage run) is keyed by its container's key (its job)."""
    if "oid" in attrs and order is not None:
        return f"{typ} #{order[id_]} {attrs.get('type', '')} {attrs.get('method', '')}".strip()
    if "name" in attrs:
        ns = attrs.get("namespace")
        return f"{typ} {ns + '/' if ns else ''}{attrs['name']}"
    if parent is not None:  # what kind of step it is tells two steps of one run apart
        kind = " ".join(str(attrs[k]) for k in ("type", "subtype") if k in attrs)
        return f"{typ} {kind + ' ' if kind else ''}of {parent}"
    return id_


def _data_key(id_: str, v: dict, up: dict[str, str]) -> str:
    """A data element's key: a named one (a dataset version, a field) with its container's key
    in front when the container is named too (fields of two datasets do not collide)."""
    typ, attrs = v[id_][1:] if id_ in v else ("", {})
    key = _key(id_, typ, attrs)
    parent = up.get(id_)
    if "name" in attrs and parent in v and "name" in v[parent][2] and "namespace" not in attrs:
        return f"{_key(parent, v[parent][1], v[parent][2])} / {key}"
    return key


def _put(keyed: dict[str, str], key: str, id_: str) -> None:
    """Add ``id_`` under ``key``, or under ``key`` and its id when another element has the key."""
    keyed[key if key not in keyed else f"{key} {id_}"] = id_


def footprint(r: _Reader, name: str, values: Values | None = None) -> Side:
    id_, kind, typ, attrs = resolve(r, name)
    side = Side(id_, kind, typ, attrs)
    v = r.vertices
    if kind == S.PROCESS_KIND:
        procs = r.contained([id_])
        edges = r.edges_of(procs)
    else:
        edges, frontier, seen = [], {id_}, {id_}
        while frontier:
            step = r.edges_into(frontier)
            edges += step
            frontier = {s for s, _, _ in step} - seen
            seen |= frontier
        procs = {p for _, _, p in edges}
    side.vertex = {i: (v[i][1], v[i][2]) for i in procs | {x for e in edges for x in e[:2]} if i in v}
    oids = {p: int(v[p][2]["oid"]) for p in procs if p in v and str(v[p][2].get("oid", "")).isdigit()}
    order = {p: n for n, p in enumerate(sorted(oids, key=oids.get), 1)}
    up = r.parents(procs | {x for e in edges for x in e[:2]})
    for p in sorted(procs):
        if p != id_ and p in v:
            parent = up.get(p)
            pkey = _key(parent, v[parent][1], v[parent][2]) if parent in v else None
            _put(side.processes, _key(p, v[p][1], v[p][2], order if p in order else None, pkey), p)
    srcs, dsts = {s for s, _, _ in edges}, {d for _, d, _ in edges}
    for i in sorted(srcs - dsts):
        _put(side.inputs, _data_key(i, v, up), i)
    for u in sorted(r.containers(srcs - dsts) - (srcs | dsts)):
        if u in v and v[u][0] == S.DATA:
            side.vertex[u] = (v[u][1], v[u][2])
            _put(side.upstream, _data_key(u, v, up), u)
    outs = (dsts - srcs) if kind == S.PROCESS_KIND else {id_}
    back: dict[str, set[str]] = {}
    for s, d, _ in edges:
        back.setdefault(d, set()).add(s)
    inputs = set(side.inputs.values())
    for o in outs:
        seen, stack = set(), [o]
        while stack:
            for s in back.get(stack.pop(), ()):
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        side.rests_on[o] = seen & inputs
    got = values(id_) if values is not None and kind == S.PROCESS_KIND else None
    if got:
        side.values = {o: flatten(got[o]) for o in outs if o in got}
    for o in outs:
        typ_o, a_o = side.vertex.get(o, ("", {}))
        if o in side.values:
            key = "values " + json.dumps(side.values[o], sort_keys=True, default=str)
        elif "name" in a_o:
            key = _key(o, typ_o, a_o)
        else:
            key = "inputs " + json.dumps(sorted(side.rests_on[o]))
        side.outputs[key if key not in side.outputs else f"{key} {o}"] = o
    return side


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested value as ``path -> leaf value`` (struct fields joined by ``.``, array positions
    as ``[i]``): the attribute paths a changed output is explained by."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k in sorted(value):
            out.update(flatten(value[k], f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        out = {}
        for i, x in enumerate(value):
            out.update(flatten(x, f"{prefix}[{i}]"))
        return out or {prefix: []}
    return {prefix: value}


def _entry(side: Side, id_: str, role: str) -> dict[str, Any]:
    typ, attrs = side.vertex.get(id_, ("", {}))
    e: dict[str, Any] = {"id": id_, "type": typ, "role": role}
    if "name" in attrs and role in ("upstream", "input", "output"):
        e.update({k: _number(attrs[k]) for k in ("namespace", "name", "version") if k in attrs})
    return e


def _number(value: str) -> str | int:
    """Attribute values are stored as text; a version reads back as the number it was."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def _pair_outputs(a: Side, b: Side) -> list[tuple[str | None, str | None]]:
    """Output pairs (a id, b id), None for a side without the output: same key first, then the
    unmatched ones by the most shared inputs, then the most equal attribute values."""
    pairs = [(a.outputs[k], b.outputs[k]) for k in sorted(a.outputs.keys() & b.outputs.keys())]
    rest_a = [a.outputs[k] for k in sorted(a.outputs.keys() - b.outputs.keys())]
    rest_b = [b.outputs[k] for k in sorted(b.outputs.keys() - a.outputs.keys())]

    def score(x: str, y: str) -> tuple[int, int]:
        va, vb = a.values.get(x, {}), b.values.get(y, {})
        return len(a.rests_on[x] & b.rests_on[y]), sum(1 for p, v in va.items() if p in vb and vb[p] == v)

    scored = sorted(((score(x, y), x, y) for x in rest_a for y in rest_b), reverse=True)
    used_a, used_b = set(), set()
    for n, x, y in scored:
        if any(n) and x not in used_a and y not in used_b:
            pairs.append((x, y))
            used_a.add(x)
            used_b.add(y)
    pairs += [(x, None) for x in rest_a if x not in used_a]
    pairs += [(None, y) for y in rest_b if y not in used_b]
    return pairs


def diff(st, a: str, b: str, values: Values | None = None, paths: Paths | None = None) -> dict[str, Any]:
    """The diff of sides ``a`` and ``b`` (module docstring) as docs/cli.md's JSON object:
    ``only_a``, ``only_b``, ``changed`` entries, and ``shared`` counts. ``values``: a captured
    run's output values; ``paths``: the input attribute paths an output path derives from (both
    given by capture/, which knows runs)."""
    r = _Reader(st)
    sa, sb = footprint(r, a, values), footprint(r, b, values)
    if sa.kind != sb.kind:
        raise UserError(f"{a} is a {sa.kind} element and {b} a {sb.kind} element: diff compares two runs or "
                        "two versions of a dataset")
    warnings = []
    if sa.kind == S.PROCESS_KIND:
        pa_, pb_ = r.containers([sa.id]) - {sa.id}, r.containers([sb.id]) - {sb.id}
        if pa_ != pb_:
            warnings.append(f"{a} and {b} belong to different pipelines or jobs "
                            f"({', '.join(sorted(pa_)) or 'none'} / {', '.join(sorted(pb_)) or 'none'})")
    out: dict[str, Any] = {"a": sa.id, "b": sb.id, "only_a": [], "only_b": [], "changed": [], "shared": {},
                           "warnings": warnings}
    for role, ka, kb in (("upstream", sa.upstream, sb.upstream), ("operator", sa.processes, sb.processes),
                         ("input", sa.inputs, sb.inputs)):
        out["only_a"] += [_entry(sa, ka[k], role) for k in sorted(ka.keys() - kb.keys())]
        out["only_b"] += [_entry(sb, kb[k], role) for k in sorted(kb.keys() - ka.keys())]
        both = sorted(ka.keys() & kb.keys())
        same = [k for k in both if ka[k] == kb[k] or role == "operator" or _attrs_equal(sa, sb, ka[k], kb[k])]
        out["shared"][role] = len(same)
        for k in both:
            if k not in same:
                out["changed"].append(_changed(sa, sb, ka[k], kb[k], role))
    reread = bool(sa.inputs) and bool(sb.inputs) and not set(sa.inputs.values()) & set(sb.inputs.values()) \
        and bool(sa.values) and bool(sb.values)
    if reread:
        warnings.append("the runs share no input item (a rewritten input file gets new item ids): outputs are "
                        "compared by their values")
    n_same = 0
    for x, y in _pair_outputs(sa, sb):
        if y is None:
            out["only_a"].append({**_entry(sa, x, "output"), "inputs": sorted(sa.rests_on[x])})
        elif x is None:
            out["only_b"].append({**_entry(sb, y, "output"), "inputs": sorted(sb.rests_on[y])})
        else:
            change = _output_change(sa, sb, x, y, reread)
            if change is None:
                n_same += 1
                continue
            if paths is not None and change["paths"]:
                change["input_paths"] = sorted({q for p in change["paths"] for q in paths(sa.id, p)}
                                               | {q for p in change["paths"] for q in paths(sb.id, p)})
            out["changed"].append(change)
    out["shared"]["output"] = n_same
    return out


def _version_b(sb: Side, y: str) -> dict[str, str]:
    attrs = sb.vertex.get(y, ("", {}))[1]
    return {"version_b": _number(attrs["version"])} if "version" in attrs else {}


def _attrs_equal(sa: Side, sb: Side, x: str, y: str) -> bool:
    return sa.vertex.get(x) == sb.vertex.get(y)


def _changed(sa: Side, sb: Side, x: str, y: str, role: str) -> dict[str, Any]:
    e = {**_entry(sa, x, role), "id_b": y, **_version_b(sb, y)}
    ta, aa = sa.vertex.get(x, ("", {}))
    tb, ab = sb.vertex.get(y, ("", {}))
    e["attributes"] = sorted(k for k in aa.keys() | ab.keys() if aa.get(k) != ab.get(k)) + \
        (["type"] if ta != tb else [])
    return e


def _output_change(sa: Side, sb: Side, x: str, y: str, by_values: bool) -> dict[str, Any] | None:
    ia, ib = sa.rests_on[x], sb.rests_on[y]
    va, vb = sa.values.get(x, {}), sb.values.get(y, {})
    paths = sorted(p for p in va.keys() | vb.keys() if va.get(p) != vb.get(p))
    if (ia == ib or by_values) and not paths:
        return None
    e = {**_entry(sa, x, "output"), "id_b": y, **_version_b(sb, y), "inputs_only_a": sorted(ia - ib),
         "inputs_only_b": sorted(ib - ia), "inputs_shared": len(ia & ib), "paths": paths}
    if paths:
        e["values"] = {p: [va.get(p), vb.get(p)] for p in paths}
    return e
