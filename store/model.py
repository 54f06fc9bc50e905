"""The catalog: granularity sets and complex element types (Ibis Sections 3.1 and 3.2).

Pure Python and small: it lives in the manifest of each commit, not in Parquet. Everything that
can grow with the data (elements, vertices, edges) lives in the tables of `store.schema`.

A gset is a bounded poset (Definition 3.1): containment pairs `child ⪯ parent`, made bounded by
adding `MaxData`/`MinData` (`MaxProcess`/`MinProcess`) where a unique maximum or minimum is
absent. A type is a set of pairwise incomparable granularities of one gset (Definition 3.5); its
canonical key is the sorted granularity names joined by `+`, so `(Row, Column)` and `(Column, Row)`
are the same type. Every granularity is implicitly the single-granularity type of its own name.
"""

from __future__ import annotations

import difflib
import enum
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from store.errors import BundleError
from store.schema import DATA, KINDS, PROCESS_KIND

AUTO_NAMES = {
    DATA: ("MaxData", "MinData"),
    PROCESS_KIND: ("MaxProcess", "MinProcess"),
}


class AttrType(str, enum.Enum):
    """Attribute value types a type's schema may declare."""

    STRING = "string"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"

    @classmethod
    def of_value(cls, value: Any) -> AttrType | None:
        """The attribute type of a JSON value (None for null, lists and objects)."""
        if isinstance(value, bool):
            return cls.BOOL
        if isinstance(value, int):
            return cls.INT
        if isinstance(value, float):
            return cls.FLOAT
        if isinstance(value, str):
            return cls.STRING
        return None


def type_key(granularities: Iterable[str]) -> str:
    """Canonical key of the type made of these granularities (order-insensitive)."""
    return "+".join(sorted(set(granularities)))


@dataclass(frozen=True, slots=True)
class Granularity:
    name: str
    kind: str
    auto: bool = False


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """A complex element type: a set of granularities, a display name and an attribute schema."""

    key: str
    name: str
    granularities: tuple[str, ...]
    kind: str
    attributes: tuple[tuple[str, AttrType], ...] = ()
    declared: bool = False  # attribute schema declared in a bundle (else inferred from data)

    def attribute(self, name: str) -> AttrType | None:
        return dict(self.attributes).get(name)

    @property
    def attribute_map(self) -> dict[str, AttrType]:
        return dict(self.attributes)


def _err(section: str, index: int | None, ident: str | None, reason: str, hint: str | None = None):
    where = f"section '{section}'"
    if index is not None:
        where += f", record {index}"
    if ident is not None:
        where += f" (id '{ident}')"
    return BundleError(f"invalid bundle: {where}: {reason}", hint=hint)


@dataclass(frozen=True)
class Catalog:
    """Granularities, containment and types known to a store (immutable; merges return copies)."""

    kinds: Mapping[str, str] = field(default_factory=dict)  # granularity -> kind (declared ones)
    pairs: tuple[tuple[str, str], ...] = ()  # declared (child, parent) containment pairs
    auto: tuple[str, ...] = ()  # auto-added max/min granularities (they stay once added)
    named: Mapping[str, str] = field(default_factory=dict)  # type name -> key (multi-gran aliases)
    schemas: Mapping[str, tuple[tuple[str, AttrType], ...]] = field(default_factory=dict)
    declared: frozenset[str] = frozenset()  # keys whose schema was declared
    _leq: frozenset[tuple[str, str]] = field(default=frozenset(), compare=False, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def empty(cls) -> Catalog:
        return cls()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_leq", frozenset(self._closure()))

    def _closure(self) -> set[tuple[str, str]]:
        kinds = self.all_kinds()
        edges: set[tuple[str, str]] = set(self.pairs)
        for kind, (gmax, gmin) in AUTO_NAMES.items():
            members = [g for g, k in kinds.items() if k == kind]
            for g in members:
                if gmax in self.auto and g != gmax:
                    edges.add((g, gmax))
                if gmin in self.auto and g != gmin:
                    edges.add((gmin, g))
        closure = {(g, g) for g in kinds}
        up: dict[str, set[str]] = {g: set() for g in kinds}
        for child, parent in edges:
            up.setdefault(child, set()).add(parent)
        for g in kinds:
            stack, seen = list(up.get(g, ())), set()
            while stack:
                p = stack.pop()
                if p in seen:
                    continue
                seen.add(p)
                closure.add((g, p))
                stack.extend(up.get(p, ()))
        return closure

    def all_kinds(self) -> dict[str, str]:
        out = dict(self.kinds)
        for kind, names in AUTO_NAMES.items():
            for name in names:
                if name in self.auto:
                    out[name] = kind
        return out

    # ------------------------------------------------------------------ queries
    @property
    def granularities(self) -> dict[str, Granularity]:
        return {g: Granularity(g, k, g in self.auto) for g, k in self.all_kinds().items()}

    def kind_of(self, granularity: str) -> str | None:
        return self.all_kinds().get(granularity)

    def leq(self, child: str, parent: str) -> bool:
        """child ⪯ parent: reflexive and transitive."""
        return (child, parent) in self._leq

    def lt(self, child: str, parent: str) -> bool:
        return child != parent and self.leq(child, parent)

    def strict_pairs(self) -> list[tuple[str, str]]:
        """All (child, parent) with child strictly finer than parent."""
        return sorted((c, p) for c, p in self._leq if c != p)

    def maximum(self, kind: str) -> str | None:
        members = [g for g, k in self.all_kinds().items() if k == kind]
        tops = [g for g in members if all(self.leq(o, g) for o in members)]
        return tops[0] if len(tops) == 1 else None

    def minimum(self, kind: str) -> str | None:
        members = [g for g, k in self.all_kinds().items() if k == kind]
        bottoms = [g for g in members if all(self.leq(g, o) for o in members)]
        return bottoms[0] if len(bottoms) == 1 else None

    @property
    def types(self) -> dict[str, TypeInfo]:
        keys = set(self.all_kinds()) | set(self.named.values()) | set(self.schemas)
        return {key: self._type_info(key) for key in sorted(keys)}

    def _type_info(self, key: str) -> TypeInfo:
        grans = tuple(key.split("+"))
        names = [n for n, k in self.named.items() if k == key]
        name = names[0] if names else (key if len(grans) == 1 else "(" + ", ".join(grans) + ")")
        kind = self.kind_of(grans[0]) or DATA
        return TypeInfo(key, name, grans, kind, self.schemas.get(key, ()), key in self.declared)

    def type_by_name(self, name: str) -> TypeInfo | None:
        """A type by alias or granularity name (case-sensitive)."""
        if name in self.named:
            return self._type_info(self.named[name])
        if name in self.all_kinds():
            return self._type_info(name)
        return None

    def type_by_granularities(self, granularities: Iterable[str]) -> TypeInfo | None:
        """The type made of these granularities, if they form a valid type."""
        grans = list(granularities)
        if not grans or self.type_problem(grans) is not None:
            return None
        return self._type_info(type_key(grans))

    def type_names(self) -> list[str]:
        return sorted(set(self.named) | set(self.all_kinds()))

    def type_problem(self, grans: list[str]) -> str | None:
        """Why these granularities do not form a type (Definition 3.5), or None."""
        kinds = self.all_kinds()
        unknown = [g for g in grans if g not in kinds]
        if unknown:
            return f"unknown granularity '{unknown[0]}'"
        if len(set(grans)) != len(grans):
            return "a granularity is listed twice"
        if len({kinds[g] for g in grans}) > 1:
            return "mixes data and process granularities"
        for a, b in itertools.combinations(grans, 2):
            if self.leq(a, b) or self.leq(b, a):
                return f"granularities '{a}' and '{b}' are comparable ({a} and {b} nest)"
        return None

    # ------------------------------------------------------------------ merging bundle headers
    def merge_gsets(self, gsets: Mapping[str, Any] | None) -> Catalog:
        """Add a bundle's `gsets` section; raises BundleError naming the bad record."""
        if not gsets:
            return self
        if not isinstance(gsets, Mapping):
            raise _err("gsets", None, None, "must be an object with 'data' and/or 'process'")
        kinds = dict(self.kinds)
        pairs = list(self.pairs)
        for kind, spec in gsets.items():
            section = f"gsets.{kind}"
            if kind not in KINDS:
                raise _err("gsets", None, kind, "unknown gset; use 'data' or 'process'")
            spec = spec or {}
            names: list[tuple[int | None, str]] = []
            for i, pair in enumerate(spec.get("contains", []) or []):
                if (
                    not isinstance(pair, (list, tuple))
                    or len(pair) != 2
                    or not all(isinstance(x, str) and x for x in pair)
                ):
                    raise _err(section, i, None, f"a containment pair is [child, parent], got {pair!r}")
                if pair[0] == pair[1]:
                    raise _err(section, i, pair[0], "a granularity cannot contain itself")
                names += [(i, pair[0]), (i, pair[1])]
                if (pair[0], pair[1]) not in pairs:
                    pairs.append((pair[0], pair[1]))
            for i, name in enumerate(spec.get("granularities", []) or []):
                if not isinstance(name, str) or not name:
                    raise _err(section, i, None, f"a granularity name is a non-empty string, got {name!r}")
                names.append((i, name))
            for i, name in names:
                if name in AUTO_NAMES[DATA] + AUTO_NAMES[PROCESS_KIND]:
                    raise _err(section, i, name, "this name is reserved for the automatic max/min granularity")
                if kinds.get(name, kind) != kind:
                    raise _err(
                        section, i, name,
                        f"granularity '{name}' is already a {kinds[name]} granularity; "
                        "names are unique across both gsets",
                    )
                kinds[name] = kind
        _check_acyclic(pairs)
        merged = replace(self, kinds=kinds, pairs=tuple(pairs))
        auto = set(self.auto)
        for kind, (gmax, gmin) in AUTO_NAMES.items():
            if not any(k == kind for k in kinds.values()):
                continue
            if merged.maximum(kind) is None:
                auto.add(gmax)
            if replace(merged, auto=tuple(sorted(auto))).minimum(kind) is None:
                auto.add(gmin)
        merged = replace(merged, auto=tuple(sorted(auto)))
        for key in merged.types:  # existing types must stay valid under the new containment
            problem = merged.type_problem(key.split("+")) if "+" in key else None
            if problem:
                raise _err("gsets", None, None, f"the new containment breaks existing type '{key}': {problem}")
        return merged

    def merge_types(self, types: list[Any] | None) -> Catalog:
        """Add a bundle's `types` section (names and declared attribute schemas)."""
        named = dict(self.named)
        schemas = dict(self.schemas)
        declared = set(self.declared)
        for i, spec in enumerate(types or []):
            if not isinstance(spec, Mapping):
                raise _err("types", i, None, "a type is an object with 'name' and 'granularities'")
            name = spec.get("name")
            grans = spec.get("granularities")
            if not isinstance(name, str) or not name:
                raise _err("types", i, None, "a type needs a non-empty 'name'")
            if not isinstance(grans, list) or not grans or not all(isinstance(g, str) for g in grans):
                raise _err("types", i, name, "'granularities' must be a non-empty list of granularity names")
            problem = self.type_problem(grans)
            if problem:
                raise _err("types", i, name, problem, hint=_gran_hint(self, grans))
            key = type_key(grans)
            if name in self.all_kinds() and key != name:
                raise _err("types", i, name, f"'{name}' is a granularity, so it already names the type ({name})")
            if len(grans) == 1 and name != key:
                raise _err(
                    "types", i, name,
                    f"the set ({key}) is already named '{key}' (every granularity is its own type); "
                    "two names for one set are an error",
                )
            if len(grans) > 1:
                other = [n for n, k in named.items() if k == key and n != name]
                if other:
                    raise _err("types", i, name,
                               f"the set ({', '.join(sorted(set(grans)))}) is already named '{other[0]}'")
                if named.get(name, key) != key:
                    raise _err("types", i, name,
                               f"type '{name}' is already defined as ({named[name].replace('+', ', ')})")
                named[name] = key
            attrs = spec.get("attributes")
            if attrs is not None:
                if not isinstance(attrs, Mapping):
                    raise _err("types", i, name, "'attributes' maps attribute names to string|int|float|bool")
                schema: list[tuple[str, AttrType]] = []
                for attr, tname in attrs.items():
                    try:
                        schema.append((attr, AttrType(tname)))
                    except ValueError:
                        raise _err(
                            "types", i, name,
                            f"attribute '{attr}' has unknown type {tname!r}",
                            hint="use one of string, int, float, bool",
                        ) from None
                old = dict(schemas.get(key, ()))
                for attr, t in schema:
                    if attr in old and old[attr] != t and key in declared:
                        raise _err("types", i, name,
                                   f"attribute '{attr}' was declared {old[attr].value} before, now {t.value}")
                    old[attr] = t
                schemas[key] = tuple(sorted(old.items()))
                declared.add(key)
        return replace(self, named=named, schemas=schemas, declared=frozenset(declared))

    def with_inferred_attributes(self, key: str, attrs: Mapping[str, AttrType]) -> Catalog:
        """Record attribute types inferred from data for a type without a declared schema."""
        current = dict(self.schemas.get(key, ()))
        if all(current.get(a) == t for a, t in attrs.items()):
            return self
        current.update(attrs)
        schemas = dict(self.schemas)
        schemas[key] = tuple(sorted(current.items()))
        return replace(self, schemas=schemas)

    # ------------------------------------------------------------------ (de)serialisation
    def to_json(self) -> dict[str, Any]:
        return {
            "kinds": dict(sorted(self.kinds.items())),
            "pairs": [list(p) for p in self.pairs],
            "auto": list(self.auto),
            "named": dict(sorted(self.named.items())),
            "schemas": {k: {a: t.value for a, t in v} for k, v in sorted(self.schemas.items())},
            "declared": sorted(self.declared),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Catalog:
        if not data:
            return cls.empty()
        return cls(
            kinds=dict(data.get("kinds", {})),
            pairs=tuple((c, p) for c, p in data.get("pairs", [])),
            auto=tuple(data.get("auto", [])),
            named=dict(data.get("named", {})),
            schemas={
                k: tuple(sorted((a, AttrType(t)) for a, t in v.items()))
                for k, v in data.get("schemas", {}).items()
            },
            declared=frozenset(data.get("declared", [])),
        )


def _check_acyclic(pairs: list[tuple[str, str]]) -> None:
    up: dict[str, list[str]] = {}
    for child, parent in pairs:
        up.setdefault(child, []).append(parent)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for parent in up.get(node, ()):
            if state.get(parent) == 1:
                cycle = path[path.index(parent):] + [parent] if parent in path else [node, parent]
                raise _err("gsets", None, None, "containment has a cycle: " + " ⪯ ".join(cycle))
            if state.get(parent) is None:
                visit(parent, path + [parent])
        state[node] = 2

    for node in list(up):
        if state.get(node) is None:
            visit(node, [node])


def _gran_hint(catalog: Catalog, grans: list[str]) -> str | None:
    known = list(catalog.all_kinds())
    for g in grans:
        if g not in known:
            close = difflib.get_close_matches(g, known, n=1)
            if close:
                return f"did you mean '{close[0]}'?"
            return "declare it in gsets.data or gsets.process first"
    return None


# ---------------------------------------------------------------------------- bundle rule checks
# What the two validators (store/spark/validate.py on Spark, store/duckdb/validate.py on the driver)
# share: the reasons they report, how a record's error becomes a message, which error of many is
# reported, how a vertex's type is resolved and how attribute types are inferred.


@dataclass(frozen=True, slots=True)
class Ref:
    """A part of a reason template that names a value (the other parts are literal text)."""

    name: str


REASONS: dict[str, tuple[str | Ref, ...]] = {
    "unknown_granularity": ("unknown granularity '", Ref("granularity"), "'"),
    "duplicate": ("duplicate id '", Ref("id"), "' (it appears earlier in ", Ref("section"), ")"),
    "in_store": ("duplicate id '", Ref("id"), "': a vertex with this id is already in the store"),
    "element_same_id": ("duplicate id '", Ref("id"), "': an element of this bundle has the same id"),
    "unknown_parent": ("unknown parent element '", Ref("parent"), "'"),
    "parent_not_coarser": ("parent '", Ref("parent"), "' has granularity ", Ref("pg"),
                           ", which is not coarser than ", Ref("granularity"),
                           " (a parent's granularity must contain the child's in the gset)"),
    "attr_invalid": ("attribute '", Ref("attr"), "' must be a string, int, float or bool (not a list or object)"),
    "attr_type": ("attribute '", Ref("attr"), "' must be ", Ref("want"), ", got ", Ref("got")),
    "attr_undeclared": ("attribute '", Ref("attr"), "' is not in the declared schema of type ", Ref("key")),
    "ce_misses": ("complex element ", Ref("ce"), " misses granularity ", Ref("missing"), " of type (",
                  Ref("want"), ")"),
    "ce_adds": ("complex element ", Ref("ce"), " adds granularity ", Ref("extra"), " which is not in type (",
                Ref("want"), ")"),
    "unknown_element": ("unknown element '", Ref("elem"), "' in complex element ", Ref("ce")),
    "element_granularity": ("element '", Ref("elem"), "' has granularity ", Ref("eg"), ", but complex element ",
                            Ref("ce"), " uses it as ", Ref("g")),
    "unknown_vertex": ("unknown ", Ref("what"), " vertex '", Ref("vertex"), "' in '", Ref("col"), "'"),
    "vertex_kind": ("'", Ref("col"), "' must be a ", Ref("want"), " vertex, but '", Ref("vertex"), "' is a ",
                    Ref("kind"), " vertex"),
}

# The checks in the order that breaks ties between errors of one record: the first error by
# (section, record, check, position, sub-position, id, reason) is reported. A record's own checks
# (shape, granularity, ids) come before its parents', attributes' and complex elements'.
CHECKS = {name: i for i, name in enumerate((
    "elements", "parents", "element_attrs", "vertices", "types", "complex", "members", "vertex_attrs",
    "edges"))}
SECTION_ORDER = {"elements": 0, "vertices": 1, "edges": 2}


def render(template: tuple[str | Ref, ...], values: Mapping[str, Any]) -> str | None:
    """A reason's text; None when a value it names is None (as SQL's concat of a NULL)."""
    out = []
    for part in template:
        if isinstance(part, Ref):
            value = values[part.name]
            if value is None:
                return None
            out.append(str(value))
        else:
            out.append(part)
    return "".join(out)


def record_error(source: str, section: str, index: int | None, ident: str | None, reason: str) -> BundleError:
    """The error for one bad record of a loaded bundle (index None: a record Strata made, e.g.
    from triples, which has no position the user would know)."""
    record = f", record {index}" if index is not None else ""
    shown = f" (id '{ident}')" if ident is not None else ""
    return BundleError(f"invalid bundle {source}: section '{section}'{record}{shown}: {reason}. "
                       "Nothing was committed.", hint="fix the record and ingest the bundle again")


def resolve_type(catalog: Catalog, names: list[str], is_list: bool) -> tuple[TypeInfo | None, str | None]:
    """A vertex record's type (a name, or a list of granularities) -> (type, None) or (None, reason)."""
    if is_list:
        problem = catalog.type_problem(names)
        if problem:
            return None, f"type ({', '.join(names)}) is not a valid type: {problem}"
        return catalog.type_by_granularities(names), None
    info = catalog.type_by_name(names[0])
    if info is not None:
        return info, None
    close = difflib.get_close_matches(names[0], catalog.type_names(), n=1)
    return None, f"unknown type '{names[0]}'" + (f" (did you mean '{close[0]}'?)" if close else "")


def infer_attribute(catalog: Catalog, key: str, attr: str, seen: set[str]) -> tuple[AttrType | None, str]:
    """The inferred type of attribute `attr` of type `key` (no declared schema) from the value types
    `seen` in a bundle and what the catalog inferred before: (type, "") or, when they conflict,
    (None, the type the conflicting records are reported against)."""
    prior = dict(catalog.schemas.get(key, ())).get(attr)
    merged = set(seen) | ({prior.value} if prior else set())
    if merged == {"int", "float"}:
        merged = {"float"}
    if len(merged) > 1:
        return None, prior.value if prior else sorted(seen)[0]
    return AttrType(merged.pop()), ""


def conflict_error(source: str, section: str, index: int | None, ident: str, attr: str, key: str, got: str,
                   first_type: str) -> BundleError:
    record = f", record {index}" if index is not None else ""
    return BundleError(
        f"invalid bundle {source}: section '{section}'{record} (id '{ident}'): attribute '{attr}' of type {key} "
        f"is {got} here but {first_type} elsewhere (conflicting value types). Nothing was committed.",
        hint="declare the attribute's type in the bundle's 'types' section, or make the values agree",
    )
