"""Validate a loaded bundle against the catalog and the committed store (docs/bundle-format.md, "Rules").

Every check is a DataFrame that yields error rows `(section, idx, id, reason)`; they are unioned
and the first error in section order (elements, vertices, edges) and record order is reported,
in one Spark job. Nothing is collected but that one row and the small set of distinct type names.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from store.bundle import Bundle
from store.errors import BundleError
from store.model import AttrType, Catalog, TypeInfo
from store.schema import DATA, ELEM, GRANULARITY, ID, KIND

_ORDER = {"elements": 0, "vertices": 1, "edges": 2}


@dataclass
class Resolved:
    """What validation learned that ingest needs."""

    catalog: Catalog  # with attribute schemas inferred from this bundle
    vertex_types: DataFrame  # idx -> type key, kind, ce_size (one row per vertex record)
    elements_kind: DataFrame  # id, granularity, kind of this bundle's elements


def _errors(section: str, df: DataFrame, id_col: str, reason: Column) -> DataFrame:
    return df.select(
        F.lit(_ORDER[section]).alias("o"),
        F.lit(section).alias("section"),
        F.col("idx"),
        F.col(id_col).cast("string").alias("rid"),
        reason.alias("reason"),
    )


def _kind_map(catalog: Catalog) -> Column:
    kinds = catalog.all_kinds()
    if not kinds:
        return F.create_map(F.lit("\x00"), F.lit(DATA))
    return F.create_map(*[F.lit(x) for kv in sorted(kinds.items()) for x in kv])


def _first(*checks: tuple[Column, Column]) -> Column:
    """The reason of the first failing check (None when all pass)."""
    return F.coalesce(*[F.when(cond, reason) for cond, reason in checks])


def _id_checks(df: DataFrame, section: str, existing_ids: DataFrame, other_new: DataFrame | None) -> DataFrame:
    """Add `_dup` (earlier duplicate in the section) and `_clash` / `_clash_new` flags."""
    w = Window.partitionBy(ID).orderBy("idx")
    df = df.withColumn("_dup", F.col(ID).isNotNull() & (F.row_number().over(w) > 1))
    df = df.join(existing_ids.select(ID, F.lit(True).alias("_clash")), ID, "left")
    if other_new is not None:
        df = df.join(other_new.select(ID, F.lit(True).alias("_clash_new")).distinct(), ID, "left")
    else:
        df = df.withColumn("_clash_new", F.lit(None).cast("boolean"))
    return df


def _id_reasons(section: str) -> list[tuple[Column, Column]]:
    quoted = F.concat(F.lit("duplicate id '"), F.col(ID))
    return [
        (F.col("_dup"), F.concat(quoted, F.lit(f"' (it appears earlier in {section})"))),
        (F.col("_clash").isNotNull(), F.concat(quoted, F.lit("': a vertex with this id is already in the store"))),
        (F.col("_clash_new").isNotNull(), F.concat(quoted, F.lit("': an element of this bundle has the same id"))),
    ]


def _attr_errors(section: str, df: DataFrame, key_col: Column, catalog: Catalog) -> list[DataFrame]:
    """Declared-schema mismatches and non-scalar values, per attribute (one pass)."""
    exploded = df.select("idx", ID, key_col.alias("_key"), F.explode("attr_types").alias("_a", "_t"))
    checks: list[tuple[Column, Column]] = [(F.col("_t") == "invalid", F.concat(
        F.lit("attribute '"), F.col("_a"), F.lit("' must be a string, int, float or bool (not a list or object)")))]
    declared = {f"{key}\x00{a}": t.value for key, schema in catalog.schemas.items()
                if key in catalog.declared for a, t in schema}
    if declared:
        dmap = F.create_map(*[F.lit(x) for kv in sorted(declared.items()) for x in kv])
        want = dmap[F.concat(F.col("_key"), F.lit("\x00"), F.col("_a"))]
        typed = F.col("_t").isNotNull() & (F.col("_t") != "invalid")
        checks.append((typed & want.isNotNull() & (want != F.col("_t"))
                       & ~((want == "float") & (F.col("_t") == "int")),
                       F.concat(F.lit("attribute '"), F.col("_a"), F.lit("' must be "), want,
                                F.lit(", got "), F.col("_t"))))
        checks.append((typed & want.isNull() & F.col("_key").isin(sorted(catalog.declared)),
                       F.concat(F.lit("attribute '"), F.col("_a"),
                                F.lit("' is not in the declared schema of type "), F.col("_key"))))
    return [_errors(section, exploded, ID, _first(*checks))]


def _resolve_types(bundle: Bundle, catalog: Catalog) -> tuple[DataFrame, list[DataFrame]]:
    spark = bundle.vertices.sparkSession
    distinct = bundle.vertices.filter(F.col("type").isNotNull()).select("type", "type_is_list").distinct().collect()
    rows, errors = [], []
    for r in distinct:
        names, is_list = list(r["type"]), r["type_is_list"]
        info: TypeInfo | None
        if is_list:
            problem = catalog.type_problem(names)
            info = None if problem else catalog.type_by_granularities(names)
            reason = f"type ({', '.join(names)}) is not a valid type: {problem}" if problem else None
        else:
            info = catalog.type_by_name(names[0])
            reason = None
            if info is None:
                close = difflib.get_close_matches(names[0], catalog.type_names(), n=1)
                reason = f"unknown type '{names[0]}'" + (f" (did you mean '{close[0]}'?)" if close else "")
        if info is not None:
            rows.append((names, bool(is_list), info.key, info.kind, len(info.granularities)))
        else:
            errors.append((names, bool(is_list), reason))
    mapping = spark.createDataFrame(
        rows, "type array<string>, type_is_list boolean, tkey string, tkind string, ce_size int")
    vt = bundle.vertices.join(F.broadcast(mapping), ["type", "type_is_list"], "left")
    errs = []
    if errors:
        emap = spark.createDataFrame(errors, "type array<string>, type_is_list boolean, reason string")
        bad = bundle.vertices.join(F.broadcast(emap), ["type", "type_is_list"])
        errs.append(_errors("vertices", bad, ID, F.col("reason")))
    return vt, errs


def validate(bundle: Bundle, catalog: Catalog, existing_elements: DataFrame,
             existing_vertices: DataFrame) -> Resolved:
    """Raise BundleError for the first problem; return what ingest needs otherwise."""
    kinds = _kind_map(catalog)
    E, D = bundle.elements, bundle.edges
    existing_ids = existing_vertices.select(ID)
    errs: list[DataFrame] = []

    # ---- elements: record shape, granularity, ids
    known = list(catalog.all_kinds())
    e = _id_checks(E, "elements", existing_ids, None)
    errs.append(_errors("elements", e, ID, _first(
        (F.col("problem").isNotNull(), F.col("problem")),
        (~F.col(GRANULARITY).isin(known),
         F.concat(F.lit("unknown granularity '"), F.col(GRANULARITY), F.lit("'"))),
        *_id_reasons("elements"))))
    e_kind = E.select(ID, GRANULARITY, kinds[F.col(GRANULARITY)].alias(KIND)).filter(F.col(ID).isNotNull())
    all_elems = e_kind.unionByName(existing_elements.select(ID, GRANULARITY, KIND))
    # parents: known, and strictly coarser
    par = E.select("idx", ID, GRANULARITY, F.explode("parents").alias("parent"))
    par = par.join(all_elems.select(F.col(ID).alias("parent"), F.col(GRANULARITY).alias("pg")), "parent", "left")
    strict = [f"{c}\x00{p}" for c, p in catalog.strict_pairs()]
    errs.append(_errors("elements", par, ID, _first(
        (F.col("pg").isNull(), F.concat(F.lit("unknown parent element '"), F.col("parent"), F.lit("'"))),
        (~F.concat(F.col(GRANULARITY), F.lit("\x00"), F.col("pg")).isin(strict), F.concat(
            F.lit("parent '"), F.col("parent"), F.lit("' has granularity "), F.col("pg"),
            F.lit(", which is not coarser than "), F.col(GRANULARITY),
            F.lit(" (a parent's granularity must contain the child's in the gset)"))))))
    errs += _attr_errors("elements", E, F.col(GRANULARITY), catalog)

    # ---- vertices: shape, ids, type, complex elements
    vt, type_errs = _resolve_types(bundle, catalog)
    errs += type_errs
    v = _id_checks(vt, "vertices", existing_ids, E)
    errs.append(_errors("vertices", v, ID, _first((F.col("problem").isNotNull(), F.col("problem")),
                                                   *_id_reasons("vertices"))))
    ces = vt.filter(F.col("tkey").isNotNull()).select(
        "idx", ID, "tkey", F.posexplode("elements").alias("ce", "m"))
    want = F.split(F.col("tkey"), r"\+")
    keys = F.array_sort(F.map_keys("m"))
    missing = F.array_except(want, keys)
    extra = F.array_except(keys, want)
    errs.append(_errors("vertices", ces, ID, _first(
        (F.size(missing) > 0, F.concat(
            F.lit("complex element "), F.col("ce").cast("string"), F.lit(" misses granularity "),
            F.array_join(missing, ", "), F.lit(" of type ("), F.array_join(want, ", "), F.lit(")"))),
        (F.size(extra) > 0, F.concat(
            F.lit("complex element "), F.col("ce").cast("string"), F.lit(" adds granularity "),
            F.array_join(extra, ", "), F.lit(" which is not in type ("), F.array_join(want, ", "),
            F.lit(")"))))))
    members = ces.select("idx", ID, "ce", F.explode("m").alias("g", ELEM))
    members = members.join(all_elems.select(F.col(ID).alias(ELEM), F.col(GRANULARITY).alias("eg")), ELEM, "left")
    errs.append(_errors("vertices", members, ID, _first(
        (F.col("eg").isNull(), F.concat(
            F.lit("unknown element '"), F.col(ELEM), F.lit("' in complex element "), F.col("ce").cast("string"))),
        (F.col("eg") != F.col("g"), F.concat(
            F.lit("element '"), F.col(ELEM), F.lit("' has granularity "), F.col("eg"),
            F.lit(", but complex element "), F.col("ce").cast("string"), F.lit(" uses it as "), F.col("g"))))))
    errs += _attr_errors("vertices", vt, F.col("tkey"), catalog)

    # ---- edges: endpoints exist and have the right kinds
    allv = (existing_vertices.select(ID, KIND)
            .unionByName(e_kind.select(ID, KIND))
            .unionByName(vt.select(ID, F.col("tkind").alias(KIND)).filter(F.col(ID).isNotNull())))
    d = D
    checks: list[tuple[Column, Column]] = [(F.col("problem").isNotNull(), F.col("problem"))]
    for col, want_kind in (("src", "data"), ("dst", "data"), ("process", "process")):
        d = d.join(allv.select(F.col(ID).alias(col), F.col(KIND).alias(f"_k_{col}")), col, "left")
        what = "process" if col == "process" else "data"
        checks.append((F.col(f"_k_{col}").isNull(), F.concat(
            F.lit(f"unknown {what} vertex '"), F.col(col), F.lit(f"' in '{col}'"))))
        checks.append((F.col(f"_k_{col}") != want_kind, F.concat(
            F.lit(f"'{col}' must be a {want_kind} vertex, but '"), F.col(col),
            F.lit("' is a "), F.col(f"_k_{col}"), F.lit(" vertex"))))
    label = F.concat_ws("", F.col("src"), F.lit(" -["), F.col("process"), F.lit("]-> "), F.col("dst"))
    errs.append(_errors("edges", d.withColumn("_l", label), "_l", _first(*checks)))

    union = errs[0]
    for err in errs[1:]:
        union = union.unionByName(err)
    first = union.filter(F.col("reason").isNotNull()).orderBy("o", "idx").limit(1).collect()
    if first:
        r = first[0]
        ident = f" (id '{r['rid']}')" if r["rid"] is not None else ""
        raise BundleError(
            f"invalid bundle {bundle.source}: section '{r['section']}', record {r['idx']}{ident}: "
            f"{r['reason']}. Nothing was committed.",
            hint="fix the record and ingest the bundle again",
        )
    catalog = _infer_attributes(bundle, catalog, E, vt)
    return Resolved(catalog, vt.select("idx", ID, "tkey", "tkind", "ce_size"), e_kind)


def _infer_attributes(bundle: Bundle, catalog: Catalog, E: DataFrame, vt: DataFrame) -> Catalog:
    """Attribute types for types without a declared schema; conflicting value types are errors."""
    seen = (E.select("idx", ID, F.col(GRANULARITY).alias("_key"), F.lit("elements").alias("_s"), "attr_types")
            .unionByName(vt.select("idx", ID, F.col("tkey").alias("_key"), F.lit("vertices").alias("_s"), "attr_types"))
            .filter(~F.col("_key").isin(sorted(catalog.declared)))
            .select("idx", ID, "_key", "_s", F.explode("attr_types").alias("_a", "_t"))
            .filter(F.col("_t").isNotNull()))
    kinds = seen.groupBy("_key", "_a").agg(F.collect_set("_t").alias("ts")).collect()
    for r in kinds:
        key, attr, ts = r["_key"], r["_a"], set(r["ts"])
        prior = dict(catalog.schemas.get(key, ())).get(attr)
        allowed = {prior.value} if prior else set()
        merged = ts | allowed
        if merged == {"int", "float"}:
            merged = {"float"}
        if len(merged) > 1:
            first_type = prior.value if prior else sorted(ts)[0]
            bad = (seen.filter((F.col("_key") == key) & (F.col("_a") == attr) & (F.col("_t") != first_type))
                   .orderBy("_s", "idx").first())
            raise BundleError(
                f"invalid bundle {bundle.source}: section '{bad['_s']}', record {bad['idx']} (id '{bad[ID]}'): "
                f"attribute '{attr}' of type {key} is {bad['_t']} here but {first_type} elsewhere "
                "(conflicting value types). Nothing was committed.",
                hint="declare the attribute's type in the bundle's 'types' section, or make the values agree",
            )
        catalog = catalog.with_inferred_attributes(key, {attr: AttrType(merged.pop())})
    return catalog
