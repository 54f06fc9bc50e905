"""W3C PROV documents in and out (PROV-JSON, PROV-N, PROV-XML through the `prov` package).

In (`ingest_prov`): each document is mapped to a bundle (docs/prov.md) and ingested through the
store's validated bundle path, in one commit with the document itself (table `prov_documents`,
as PROV-JSON), so that an export gives back the records as they were:

* entities -> data elements `Entity`; activities -> process elements `Activity`; the element id
  is the record's URI; PROV attributes become attributes (`prov:label` as `label`, `ex:size` as
  `ex_size`; several values joined by spaces), and so do agents: `wasAssociatedWith` on the
  activity, `wasAttributedTo` on the entity (the agents' own attributes stay in the document);
* `used(a, e1)` and `wasGeneratedBy(e2, a)` -> the three-way edge (e1, a, e2) for every entity
  a used and every entity it generated; `wasDerivedFrom(e2, e1)` -> the edge (e1, p, e2) where p
  is the derivation's activity, else a process element `Derivation` of its own;
* `specializationOf(e, g)` and `hadMember(c, e)` -> containment: g (c) becomes a vertex whose
  complex elements are its own element `<uri>#self` and every basic element below it (its
  specializations or members, and theirs), so `e under g` holds, transitively;
* any other relation, and named bundles, are not mapped: the ingest warns, listing them (they
  stay in the stored document, and an export includes them).

Out (`to_document`): the stored records whose nodes are all selected, and for every other
selected vertex an `entity` or `activity` in the `strata` namespace, with `used`,
`wasGeneratedBy` and `wasDerivedFrom` for the edges among them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from store import schema as S
from store.errors import BundleError, UserError
from store.interop.ol_commit import existing

ENTITY, ACTIVITY, DERIVATION = "Entity", "Activity", "Derivation"
GSETS = {"data": {"granularities": [ENTITY]}, "process": {"granularities": [ACTIVITY, DERIVATION]}}
DOCUMENTS_TABLE = "prov_documents"
FORMATS = {".json": "json", ".provn": "provn", ".xml": "xml", ".provx": "xml"}
STRATA_NS = ("strata", "urn:strata:")
MAPPED = {"entity", "activity", "agent", "used", "wasGeneratedBy", "wasDerivedFrom", "specializationOf",
          "hadMember", "wasAssociatedWith", "wasAttributedTo"}


def _constants():
    _prov()
    import prov.constants as pc  # deferred: only this path needs prov

    return pc


def _prov():
    try:
        import prov.model as pm  # deferred: only this path needs prov
    except ImportError as e:  # pragma: no cover - the interop extra is missing
        raise UserError("W3C PROV needs the prov package", hint="pip install 'strata-prov[interop]'") from e
    return pm


def prov_format(path: str | Path, given: str | None = None) -> str:
    fmt = given or FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise UserError(f"cannot tell the PROV format of {path}",
                        hint="name it .json (PROV-JSON), .provn (PROV-N) or .xml (PROV-XML)")
    return fmt


def read_document(path: str | Path, fmt: str | None = None):
    """A PROV document read with `prov`; BundleError naming the file when it cannot be read."""
    pm = _prov()
    try:
        return pm.ProvDocument.deserialize(source=str(path), format=prov_format(path, fmt))
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001 - prov's parsers raise many types; all mean "bad input"
        raise BundleError(f"invalid PROV document {path}: {type(e).__name__}: {e}. Nothing was committed.",
                          hint="check the document with `prov-convert`, or name the right format") from e


# ---------------------------------------------------------------------------- PROV -> bundle
def node_id(qname) -> str:
    return str(qname.uri)


def attr_name(qname) -> str:
    prefix = getattr(getattr(qname, "namespace", None), "prefix", "") or ""
    local = qname.localpart if hasattr(qname, "localpart") else str(qname)
    name = local if prefix == "prov" else f"{prefix}_{local}" if prefix else local
    return re.sub(r"\W", "_", name)


def attr_value(value: Any) -> str:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "uri"):
        return str(value)
    return str(getattr(value, "value", value))


@dataclass
class Mapped:
    """A document as a bundle, plus what the model left out."""

    bundle: dict[str, Any]
    dropped: dict[str, int] = field(default_factory=dict)


def _attrs(record) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    for k, v in record.extra_attributes:
        out.setdefault(attr_name(k), []).append(attr_value(v))
    for k, v in record.formal_attributes:
        if v is not None and attr_name(k) in ("startTime", "endTime"):
            out.setdefault(attr_name(k), []).append(attr_value(v))
    return {k: " ".join(sorted(vs)) for k, vs in out.items()}


def to_bundle(doc) -> Mapped:
    """The bundle of one PROV document (module docstring)."""
    pm, pc = _prov(), _constants()
    kinds: dict[str, str] = {}
    attrs: dict[str, dict[str, str]] = {}
    used: dict[str, set[str]] = {}
    generated: dict[str, set[str]] = {}
    derived: list[tuple[str, str, str | None, str]] = []
    contains: dict[str, set[str]] = {}
    agents: dict[str, dict[str, set[str]]] = {}
    dropped: dict[str, int] = {}

    def touch(q, kind: str) -> str | None:
        if q is None:
            return None
        ident = node_id(q)
        kinds.setdefault(ident, kind)
        return ident

    for b in doc.bundles:
        dropped[f"bundle {b.identifier}"] = len(list(b.get_records()))
    ACT, ENT = pc.PROV_ATTR_ACTIVITY, pc.PROV_ATTR_ENTITY  # noqa: N806
    for r in doc.get_records():
        name = pc.PROV_N_MAP.get(r.get_type(), str(r.get_type()))
        a = dict(r.formal_attributes)
        if isinstance(r, pm.ProvEntity):
            attrs.setdefault(touch(r.identifier, ENTITY), {}).update(_attrs(r))
        elif isinstance(r, pm.ProvActivity):
            attrs.setdefault(touch(r.identifier, ACTIVITY), {}).update(_attrs(r))
        elif isinstance(r, pm.ProvAgent):
            pass
        elif isinstance(r, pm.ProvUsage) and a.get(ACT) and a.get(ENT):
            used.setdefault(touch(a[ACT], ACTIVITY), set()).add(touch(a[ENT], ENTITY))
        elif isinstance(r, pm.ProvGeneration) and a.get(ACT) and a.get(ENT):
            generated.setdefault(touch(a[ACT], ACTIVITY), set()).add(touch(a[ENT], ENTITY))
        elif isinstance(r, pm.ProvDerivation):
            gen = touch(a.get(pc.PROV_ATTR_GENERATED_ENTITY), ENTITY)
            src = touch(a.get(pc.PROV_ATTR_USED_ENTITY), ENTITY)
            derived.append((src, gen, touch(a.get(ACT), ACTIVITY), f"{gen} wasDerivedFrom {src}"))
        elif isinstance(r, pm.ProvMembership):
            contains.setdefault(touch(a[pc.PROV_ATTR_COLLECTION], ENTITY), set()).add(touch(a[ENT], ENTITY))
        elif isinstance(r, pm.ProvSpecialization) and not isinstance(r, pm.ProvMention):
            contains.setdefault(touch(a[pc.PROV_ATTR_GENERAL_ENTITY], ENTITY), set()).add(
                touch(a[pc.PROV_ATTR_SPECIFIC_ENTITY], ENTITY))
        elif isinstance(r, pm.ProvAssociation) and a.get(ACT) and a.get(pc.PROV_ATTR_AGENT):
            touch(a.get(pc.PROV_ATTR_PLAN), ENTITY)
            agents.setdefault(touch(a[ACT], ACTIVITY), {}).setdefault("wasAssociatedWith", set()).add(
                str(a[pc.PROV_ATTR_AGENT]))
        elif isinstance(r, pm.ProvAttribution):
            agents.setdefault(touch(a[ENT], ENTITY), {}).setdefault("wasAttributedTo", set()).add(
                str(a[pc.PROV_ATTR_AGENT]))
        else:
            dropped[name] = dropped.get(name, 0) + 1
    for ident, by in agents.items():
        attrs.setdefault(ident, {}).update({k: " ".join(sorted(v)) for k, v in by.items()})
    return Mapped(_bundle(kinds, attrs, used, generated, derived, contains), dropped)


def _contained(ident: str, contains: dict[str, set[str]]) -> list[str]:
    """The basic elements a container stands for: its own `#self`, its members', and theirs
    (transitively: a member of a member is under the outer container too)."""
    out, todo, seen = set(), [ident], set()
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in contains:
            out.add(f"{x}#self")
            todo += contains[x]
        else:
            out.add(x)
    return sorted(out)


def _bundle(kinds, attrs, used, generated, derived, contains) -> dict[str, Any]:
    elements, vertices, edges = [], [], set()
    for ident in sorted(kinds):
        a = attrs.get(ident) or {}
        if ident in contains:  # a container: a vertex of its own element and all it contains
            elements.append({"id": f"{ident}#self", "granularity": ENTITY})
            vertices.append({"id": ident, "type": ENTITY, "attrs": a,
                             "elements": [{ENTITY: m} for m in _contained(ident, contains)]})
        else:
            elements.append({"id": ident, "granularity": kinds[ident], "attrs": a})
    for act in sorted(set(used) & set(generated)):
        edges.update((e1, act, e2) for e1 in used[act] for e2 in generated[act])
    for src, gen, act, name in derived:
        if src is None or gen is None:
            continue
        if act is None:
            act = name
            elements.append({"id": name, "granularity": DERIVATION})
        edges.add((src, act, gen))
    return {"format": "strata-bundle/1", "gsets": GSETS, "elements": elements, "vertices": vertices,
            "edges": [{"src": s, "process": p, "dst": d} for s, p, d in sorted(edges)]}


# ---------------------------------------------------------------------------- ingest
@dataclass(frozen=True)
class ProvIngest:
    version: int
    elements: int
    vertices: int
    edges: int
    warnings: tuple[str, ...]
    committed: bool = True


def documents_schema() -> pa.Schema:
    return pa.schema([(c, pa.string()) for c in ("key", "source", "document")])


def ingest_prov(st, paths: Iterable[str | Path], fmt: str | None = None) -> ProvIngest:
    """Ingest PROV documents in one commit. Vertices already in the store (from an earlier
    document or another source) are not added again; a document the store holds already (the
    same PROV-JSON) is skipped, and when every one is, nothing is committed."""
    paths = [str(p) for p in paths]
    docs = [(p, read_document(p, fmt)) for p in paths]
    stored = stored_keys(st)
    warnings: list[str] = []
    todo = []
    for path, doc in docs:
        text = doc.serialize(format="json")
        key = hashlib.sha256(text.encode()).hexdigest()
        if key in stored:
            warnings.append(f"{path}: the store holds this document already; skipped")
        else:
            stored.add(key)
            todo.append((path, doc, key, text))
    if not todo:
        return ProvIngest(st.version, 0, 0, 0, tuple(warnings), committed=False)
    with st.transaction("ingest prov " + ", ".join(paths)) as tx:
        total = [0, 0, 0]
        for path, doc, _key, _text in todo:
            mapped = to_bundle(doc)
            if mapped.dropped:
                listed = ", ".join(f"{n} {k}" for k, n in sorted(mapped.dropped.items()))
                warnings.append(f"{path}: not mapped into the model (kept in the stored document): {listed}")
            b = mapped.bundle
            have = existing(tx, [e["id"] for e in b["elements"]] + [v["id"] for v in b["vertices"]],
                            S.VERTICES, S.KIND)
            b["elements"] = [e for e in b["elements"] if e["id"] not in have]
            b["vertices"] = [v for v in b["vertices"] if v["id"] not in have]
            counts = tx.ingest(b)
            total = [total[0] + counts.elements, total[1] + counts.vertices, total[2] + counts.edges]
        tx.append_rows(DOCUMENTS_TABLE, [(k, p, t) for p, _d, k, t in todo], documents_schema())
    return ProvIngest(st.version, *total, tuple(warnings))


def _texts(st, column: str) -> list[str]:
    if not st.has_table(DOCUMENTS_TABLE):
        return []
    if st.storage.on_this_machine:
        return st.local().arrow(DOCUMENTS_TABLE).column(column).to_pylist()
    return [r[0] for r in st.table(DOCUMENTS_TABLE).select(column).collect()]


def stored_keys(st) -> set[str]:
    return set(_texts(st, "key"))


def stored_documents(st) -> list:
    """The PROV documents the store was given (parsed)."""
    pm = _prov()
    return [pm.ProvDocument.deserialize(content=t, format="json") for t in _texts(st, "document")]


# ---------------------------------------------------------------------------- model -> PROV
def _refs(record) -> list:
    """The qualified names of the nodes a record names (itself, or a relation's ends)."""
    pc = _constants()
    if record.is_element():
        return [record.identifier] if record.identifier is not None else []
    skip = {pc.PROV_ATTR_GENERATION, pc.PROV_ATTR_USAGE}
    return [v for k, v in record.formal_attributes if v is not None and k not in skip and hasattr(v, "uri")]


def to_document(nodes: Iterable[tuple[str, str, dict[str, Any]]], edges: Iterable[tuple[str, str, str]],
                stored: Iterable = ()):
    """A PROV document of selected vertices (id, kind, attrs) and edges (src, process, dst): the
    stored records whose nodes are all selected (agents need not be), with the agents they name,
    and every other vertex and edge in the `strata` namespace."""
    pm, pc = _prov(), _constants()
    nodes = list(nodes)
    ids = {n[0] for n in nodes}
    doc = pm.ProvDocument()
    names: dict[str, Any] = {}  # id -> the qualified name of a stored record
    for d in stored:
        for ns in d.namespaces:
            doc.add_namespace(ns)
        records = list(d.get_records())
        agents = {node_id(r.identifier): r for r in records if isinstance(r, pm.ProvAgent)}
        agent_refs = set(agents) | {node_id(v) for r in records for k, v in r.formal_attributes
                                    if k in (pc.PROV_ATTR_AGENT, pc.PROV_ATTR_DELEGATE, pc.PROV_ATTR_RESPONSIBLE)
                                    and v is not None}
        named: set[str] = set()
        for r in records:
            if isinstance(r, pm.ProvAgent):
                continue
            refs = _refs(r)
            if refs and all(node_id(x) in ids or node_id(x) in agent_refs for x in refs):
                doc.add_record(r)
                for x in refs:
                    names.setdefault(node_id(x), x)
                    named.add(node_id(x))
        touched = {node_id(x) for r in records if not isinstance(r, pm.ProvAgent) for x in _refs(r)} - agent_refs
        for ident in sorted(set(agents) if touched <= ids else named & set(agents)):
            doc.add_record(agents[ident])  # all of them when the whole document is selected
    strata = doc.add_namespace(*STRATA_NS)

    def ref(ident: str):
        return names.get(ident) or strata[quote(ident, safe="")]

    for ident, kind, attrs in nodes:
        if ident in names or ident.endswith("#self") or " wasDerivedFrom " in ident:
            continue
        extra = {strata[re.sub(r"\W", "_", k)]: str(v) for k, v in sorted(attrs.items()) if v is not None}
        if kind == "process":
            doc.activity(ref(ident), other_attributes=extra or None)
        else:
            doc.entity(ref(ident), extra or None)
    for src, proc, dst in edges:
        synthetic = " wasDerivedFrom " in proc
        if src in names and dst in names and (synthetic or proc in names):
            continue  # a stored record says it
        if synthetic:
            doc.wasDerivedFrom(ref(dst), ref(src))
            continue
        doc.used(ref(proc), ref(src))
        doc.wasGeneratedBy(ref(dst), ref(proc))
        doc.wasDerivedFrom(ref(dst), ref(src), ref(proc))
    return doc
