"""Validate a `LocalBundle` on the driver: every check of `store.spark.validate`, record by record.

The checks, their order, the reasons and the messages are those of `store/spark/validate.py` (the
shared parts live in `store.model`: `REASONS`, `CHECKS`, `record_error`, `resolve_type`,
`infer_attribute`). Spark evaluates each check as a column over joined DataFrames; here each is
a loop over the section's rows with the same outcome, including where a join would give a row
more than one match (a duplicate id is looked up as every record that has it) and where a SQL
`concat` with a NULL makes a reason NULL (then the next check of the record applies). All the
errors are gathered and the first by `(section, record, check, position, sub-position, id,
reason)` is raised, as the Spark path orders them.

What the store already holds comes in as an `Existing`: the kinds of the store's vertices and the
granularities of its elements, looked up for the ids the bundle mentions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from store.duckdb.bundle import LocalBundle
from store.model import (
    CHECKS,
    REASONS,
    SECTION_ORDER,
    Catalog,
    conflict_error,
    infer_attribute,
    record_error,
    render,
    resolve_type,
)


@dataclass
class Existing:
    """Lookups into the store as the transaction sees it: id -> kind of each vertex, id ->
    granularity of each element (only the ids asked for)."""

    vertex_kinds: Callable[[Iterable[str]], dict[str, str]]
    element_granularities: Callable[[Iterable[str]], dict[str, str]]


@dataclass
class LocalResolved:
    """What validation learned that ingest needs (as `store.spark.validate.Resolved`)."""

    catalog: Catalog
    vertex_types: list[tuple[str | None, str | None, int | None]]  # per vertex row: tkey, tkind, ce_size
    kinds: dict[str, str]  # granularity -> kind


def _r(name: str, **values: Any) -> str | None:
    return render(REASONS[name], values)


def _first(*checks: tuple[bool, Callable[[], str | None]]) -> str | None:
    """The reason of the first check that holds and has a reason (Spark's coalesce of when()s)."""
    for cond, reason in checks:
        if cond:
            text = reason()
            if text is not None:
                return text
    return None


def _key(err: tuple) -> tuple:
    o, idx, c, pos, sub, rid, reason, _section = err
    # Spark sorts NULLs first.
    return (o, idx is not None, idx or 0, c, pos, sub, rid is not None, rid or "", reason)


def validate(bundle: LocalBundle, catalog: Catalog, existing: Existing) -> LocalResolved:
    """Raise BundleError for the first problem; return what ingest needs otherwise."""
    kinds = catalog.all_kinds()
    E, V, D = bundle.elements, bundle.vertices, bundle.edges
    errors: list[tuple] = []

    def error(section: str, check: str, idx, rid, reason, pos: int = 0, sub: str = "") -> None:
        if reason is not None:
            errors.append((SECTION_ORDER[section], idx, CHECKS[check], pos, sub, rid, reason, section))

    new_ids = {r[1] for r in E if r[1] is not None} | {r[1] for r in V if r[1] is not None}
    in_store = existing.vertex_kinds(new_ids)

    # ---- elements: record shape, granularity, ids
    seen: set[str] = set()
    for idx, ident, gran, _parents, _attrs, _types, problem in E:
        dup = ident is not None and ident in seen
        if ident is not None:
            seen.add(ident)
        if problem is None and gran in kinds and not dup and ident not in in_store:
            continue  # the common case, without building the checks
        error("elements", "elements", idx, ident, _first(
            (problem is not None, lambda problem=problem: problem),
            (gran is not None and gran not in kinds, lambda gran=gran: _r("unknown_granularity", granularity=gran)),
            (dup, lambda ident=ident: _r("duplicate", id=ident, section="elements")),
            (ident in in_store, lambda ident=ident: _r("in_store", id=ident))))
    element_ids = seen
    # every element a parent or a complex element may name: this bundle's, then the store's
    all_elems: dict[str, list[str | None]] = {}
    for r in E:
        if r[1] is not None:
            all_elems.setdefault(r[1], []).append(r[2])
    mentioned = {p for r in E for p in r[3] or ()} | {e for r in V for ce in r[4] or () for e in ce.values()}
    for ident, gran in existing.element_granularities(mentioned).items():
        all_elems.setdefault(ident, []).append(gran)
    strict = set(catalog.strict_pairs())
    for idx, ident, gran, parents, _attrs, _types, _problem in E:
        for pos, parent in enumerate(parents or ()):
            found = all_elems.get(parent)
            if found is not None and len(found) == 1 and (gran, found[0]) in strict:
                continue
            for pg in found or [None]:
                error("elements", "parents", idx, ident, _first(
                    (pg is None, lambda parent=parent: _r("unknown_parent", parent=parent)),
                    (gran is not None and pg is not None and (gran, pg) not in strict,
                     lambda parent=parent, pg=pg, gran=gran: _r("parent_not_coarser", parent=parent, pg=pg,
                                                                granularity=gran))), pos=pos)
    declared = {(key, a): t.value for key, schema in catalog.schemas.items() if key in catalog.declared
                for a, t in schema}

    def attr_errors(section: str, check: str, idx, ident, key, attr_types) -> None:
        for attr, t in (attr_types or {}).items():
            typed = t is not None and t != "invalid"
            want = declared.get((key, attr)) if key is not None else None
            error(section, check, idx, ident, _first(
                (t == "invalid", lambda attr=attr: _r("attr_invalid", attr=attr)),
                (bool(declared) and typed and want is not None and want != t and not (want == "float" and t == "int"),
                 lambda attr=attr, want=want, t=t: _r("attr_type", attr=attr, want=want, got=t)),
                (bool(declared) and typed and want is None and key in catalog.declared,
                 lambda attr=attr, key=key: _r("attr_undeclared", attr=attr, key=key))), sub=attr)

    for idx, ident, gran, _parents, _attrs, types, _problem in E:
        if types:
            attr_errors("elements", "element_attrs", idx, ident, gran, types)

    # ---- vertices: shape, ids, type, complex elements
    resolved: dict[tuple, tuple] = {}
    for r in V:
        if r[2] is not None and (tuple(r[2]), r[3]) not in resolved:
            resolved[(tuple(r[2]), r[3])] = resolve_type(catalog, list(r[2]), bool(r[3]))
    vertex_types: list[tuple[str | None, str | None, int | None]] = []
    seen = set()
    for idx, ident, type_names, is_list, ces, _attrs, types, problem in V:
        dup = ident is not None and ident in seen
        if ident is not None:
            seen.add(ident)
        error("vertices", "vertices", idx, ident, _first(
            (problem is not None, lambda problem=problem: problem),
            (dup, lambda ident=ident: _r("duplicate", id=ident, section="vertices")),
            (ident in in_store, lambda ident=ident: _r("in_store", id=ident)),
            (ident in element_ids, lambda ident=ident: _r("element_same_id", id=ident))))
        info, reason = resolved[(tuple(type_names), is_list)] if type_names is not None else (None, None)
        error("vertices", "types", idx, ident, reason)
        vertex_types.append((info.key, info.kind, len(info.granularities)) if info else (None, None, None))
        if info is None:
            attr_errors("vertices", "vertex_attrs", idx, ident, None, types)
            continue
        want = info.key.split("+")
        for ce, m in enumerate(ces or ()):
            keys = sorted(m)
            missing = [g for g in want if g not in keys]
            extra = [g for g in keys if g not in want]
            error("vertices", "complex", idx, ident, _first(
                (bool(missing), lambda ce=ce, missing=missing, want=want: _r(
                    "ce_misses", ce=ce, missing=", ".join(missing), want=", ".join(want))),
                (bool(extra), lambda ce=ce, extra=extra, want=want: _r(
                    "ce_adds", ce=ce, extra=", ".join(extra), want=", ".join(want)))), pos=ce)
            for g, elem in m.items():
                for eg in all_elems.get(elem) or [None]:
                    error("vertices", "members", idx, ident, _first(
                        (eg is None, lambda elem=elem, ce=ce: _r("unknown_element", elem=elem, ce=ce)),
                        (eg is not None and eg != g, lambda elem=elem, eg=eg, ce=ce, g=g: _r(
                            "element_granularity", elem=elem, eg=eg, ce=ce, g=g))), pos=ce, sub=g)
        attr_errors("vertices", "vertex_attrs", idx, ident, info.key, types)

    # ---- edges: endpoints exist and have the right kinds
    allv: dict[str, list[str | None]] = {}
    endpoints = {x for r in D for x in r[1:4] if x is not None}
    for ident, kind in existing.vertex_kinds(endpoints).items():
        allv.setdefault(ident, []).append(kind)
    for r in E:
        if r[1] is not None:
            allv.setdefault(r[1], []).append(kinds.get(r[2]) if r[2] is not None else None)
    for r, vtype in zip(V, vertex_types, strict=True):
        if r[1] is not None:
            allv.setdefault(r[1], []).append(vtype[1])
    for idx, src, proc, dst, problem in D:
        if problem is None and allv.get(src) == ["data"] and allv.get(dst) == ["data"] \
                and allv.get(proc) == ["process"]:
            continue  # the common case, without building the checks
        label = "".join(x for x in (src, " -[", proc, "]-> ", dst) if x is not None)
        for ks in (allv.get(src) or [None]) if src is not None else [None]:
            for kd in (allv.get(dst) or [None]) if dst is not None else [None]:
                for kp in (allv.get(proc) or [None]) if proc is not None else [None]:
                    checks: list[tuple[bool, Callable[[], str | None]]] = [
                        (problem is not None, lambda problem=problem: problem)]
                    for col, value, kind, want_kind in (("src", src, ks, "data"), ("dst", dst, kd, "data"),
                                                        ("process", proc, kp, "process")):
                        checks.append((kind is None, lambda col=col, value=value, w=want_kind: _r(
                            "unknown_vertex", what=w, vertex=value, col=col)))
                        checks.append((kind is not None and kind != want_kind,
                                       lambda col=col, value=value, kind=kind, w=want_kind: _r(
                                           "vertex_kind", col=col, want=w, vertex=value, kind=kind)))
                    error("edges", "edges", idx, label, _first(*checks))

    if errors:
        o, idx, c, pos, sub, rid, reason, section = min(errors, key=_key)
        raise record_error(bundle.source, section, idx, rid, reason)
    catalog = _infer_attributes(bundle, catalog, vertex_types)
    return LocalResolved(catalog, vertex_types, kinds)


def _infer_attributes(bundle: LocalBundle, catalog: Catalog, vertex_types) -> Catalog:
    """Attribute types for types without a declared schema (as `store.spark.validate._infer_attributes`)."""
    seen: list[tuple[str, int | None, str, str, str, str]] = []  # section, idx, id, key, attr, type
    for r in bundle.elements:
        seen += [("elements", r[0], r[1], r[2], a, t) for a, t in (r[5] or {}).items() if t is not None]
    for r, (tkey, _kind, _size) in zip(bundle.vertices, vertex_types, strict=True):
        seen += [("vertices", r[0], r[1], tkey, a, t) for a, t in (r[6] or {}).items() if t is not None]
    groups: dict[tuple[str, str], set[str]] = {}
    for s in seen:
        if s[3] not in catalog.declared:
            groups.setdefault((s[3], s[4]), set()).add(s[5])
    for (key, attr), ts in sorted(groups.items()):
        inferred, first_type = infer_attribute(catalog, key, attr, ts)
        if inferred is None:
            bad = min((s for s in seen if s[3] == key and s[4] == attr and s[5] != first_type),
                      key=lambda s: (s[0], s[1] is not None, s[1] or 0, s[2]))
            raise conflict_error(bundle.source, bad[0], bad[1], bad[2], attr, key, bad[5], first_type)
        catalog = catalog.with_inferred_attributes(key, {attr: inferred})
    return catalog
