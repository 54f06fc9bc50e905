"""Validate a loaded bundle against the catalog and the committed store (docs/bundle-format.md, "Rules").

Every check is a DataFrame that yields error rows `(section, idx, id, reason)` with the keys that
order them; they are unioned and the first error is reported, in one Spark job: by section
(elements, vertices, edges), record, check (`store.model.CHECKS`), position within the record
(a parent, a complex element, an attribute), id and reason. Nothing is collected but that one row
and the small sets of distinct type names and inferred attribute types. The reasons and messages
are `store.model`'s, shared with the driver's validator (store/duckdb/validate.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from store.model import (
    CHECKS,
    REASONS,
    SECTION_ORDER,
    Catalog,
    Ref,
    conflict_error,
    infer_attribute,
    record_error,
    resolve_type,
)
from store.schema import DATA, ELEM, GRANULARITY, ID, KIND
from store.spark.bundle import Bundle
from store.spark.frames import local_frame


@dataclass
class Resolved:
    """What validation learned that ingest needs."""

    catalog: Catalog  # with attribute schemas inferred from this bundle
    vertex_types: DataFrame  # idx -> type key, kind, ce_size (one row per vertex record)
    elements_kind: DataFrame  # id, granularity, kind of this bundle's elements


def _reason(name: str, **values: Column | str) -> Column:
    """The reason `store.model.REASONS[name]` as a Column (NULL when a value it names is NULL)."""
    def part(p):
        if not isinstance(p, Ref):
            return F.lit(p)
        v = values[p.name]
        return F.lit(v) if isinstance(v, str) else v.cast("string")
    return F.concat(*[part(p) for p in REASONS[name]])


def _errors(section: str, check: str, df: DataFrame, id_col: str, reason: Column,
            pos: Column | None = None, sub: Column | None = None) -> DataFrame:
    return df.select(
        F.lit(SECTION_ORDER[section]).alias("o"),
        F.lit(section).alias("section"),
        F.col("idx"),
        F.lit(CHECKS[check]).alias("c"),
        (pos if pos is not None else F.lit(0)).cast("int").alias("pos"),
        (sub if sub is not None else F.lit("")).cast("string").alias("sub"),
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
    return [
        (F.col("_dup"), _reason("duplicate", id=F.col(ID), section=section)),
        (F.col("_clash").isNotNull(), _reason("in_store", id=F.col(ID))),
        (F.col("_clash_new").isNotNull(), _reason("element_same_id", id=F.col(ID))),
    ]


def _attr_errors(section: str, df: DataFrame, key_col: Column, catalog: Catalog) -> list[DataFrame]:
    """Declared-schema mismatches and non-scalar values, per attribute (one pass)."""
    exploded = df.select("idx", ID, key_col.alias("_key"), F.explode("attr_types").alias("_a", "_t"))
    checks: list[tuple[Column, Column]] = [(F.col("_t") == "invalid", _reason("attr_invalid", attr=F.col("_a")))]
    declared = {f"{key}\x00{a}": t.value for key, schema in catalog.schemas.items()
                if key in catalog.declared for a, t in schema}
    if declared:
        dmap = F.create_map(*[F.lit(x) for kv in sorted(declared.items()) for x in kv])
        want = dmap[F.concat(F.col("_key"), F.lit("\x00"), F.col("_a"))]
        typed = F.col("_t").isNotNull() & (F.col("_t") != "invalid")
        checks.append((typed & want.isNotNull() & (want != F.col("_t"))
                       & ~((want == "float") & (F.col("_t") == "int")),
                       _reason("attr_type", attr=F.col("_a"), want=want, got=F.col("_t"))))
        checks.append((typed & want.isNull() & F.col("_key").isin(sorted(catalog.declared)),
                       _reason("attr_undeclared", attr=F.col("_a"), key=F.col("_key"))))
    check = "element_attrs" if section == "elements" else "vertex_attrs"
    return [_errors(section, check, exploded, ID, _first(*checks), sub=F.col("_a"))]


def _resolve_types(bundle: Bundle, catalog: Catalog) -> tuple[DataFrame, list[DataFrame]]:
    spark = bundle.vertices.sparkSession
    distinct = bundle.vertices.filter(F.col("type").isNotNull()).select("type", "type_is_list").distinct().collect()
    rows, errors = [], []
    for r in distinct:
        names, is_list = list(r["type"]), bool(r["type_is_list"])
        info, reason = resolve_type(catalog, names, is_list)
        if info is not None:
            rows.append((names, is_list, info.key, info.kind, len(info.granularities)))
        else:
            errors.append((names, is_list, reason))
    mapping = local_frame(
        spark,
        rows, "type array<string>, type_is_list boolean, tkey string, tkind string, ce_size int")
    vt = bundle.vertices.join(F.broadcast(mapping), ["type", "type_is_list"], "left")
    errs = []
    if errors:
        emap = local_frame(spark, errors, "type array<string>, type_is_list boolean, reason string")
        bad = bundle.vertices.join(F.broadcast(emap), ["type", "type_is_list"])
        errs.append(_errors("vertices", "types", bad, ID, F.col("reason")))
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
    errs.append(_errors("elements", "elements", e, ID, _first(
        (F.col("problem").isNotNull(), F.col("problem")),
        (~F.col(GRANULARITY).isin(known), _reason("unknown_granularity", granularity=F.col(GRANULARITY))),
        *_id_reasons("elements"))))
    e_kind = E.select(ID, GRANULARITY, kinds[F.col(GRANULARITY)].alias(KIND)).filter(F.col(ID).isNotNull())
    all_elems = e_kind.unionByName(existing_elements.select(ID, GRANULARITY, KIND))
    # parents: known, and strictly coarser
    par = E.select("idx", ID, GRANULARITY, F.posexplode("parents").alias("_pos", "parent"))
    par = par.join(all_elems.select(F.col(ID).alias("parent"), F.col(GRANULARITY).alias("pg")), "parent", "left")
    strict = [f"{c}\x00{p}" for c, p in catalog.strict_pairs()]
    errs.append(_errors("elements", "parents", par, ID, _first(
        (F.col("pg").isNull(), _reason("unknown_parent", parent=F.col("parent"))),
        (~F.concat(F.col(GRANULARITY), F.lit("\x00"), F.col("pg")).isin(strict),
         _reason("parent_not_coarser", parent=F.col("parent"), pg=F.col("pg"), granularity=F.col(GRANULARITY)))),
        pos=F.col("_pos")))
    errs += _attr_errors("elements", E, F.col(GRANULARITY), catalog)

    # ---- vertices: shape, ids, type, complex elements
    vt, type_errs = _resolve_types(bundle, catalog)
    v = _id_checks(vt, "vertices", existing_ids, E)
    errs.append(_errors("vertices", "vertices", v, ID, _first((F.col("problem").isNotNull(), F.col("problem")),
                                                              *_id_reasons("vertices"))))
    errs += type_errs
    ces = vt.filter(F.col("tkey").isNotNull()).select(
        "idx", ID, "tkey", F.posexplode("elements").alias("ce", "m"))
    want = F.split(F.col("tkey"), r"\+")
    keys = F.array_sort(F.map_keys("m"))
    missing = F.array_except(want, keys)
    extra = F.array_except(keys, want)
    errs.append(_errors("vertices", "complex", ces, ID, _first(
        (F.size(missing) > 0, _reason("ce_misses", ce=F.col("ce"), missing=F.array_join(missing, ", "),
                                      want=F.array_join(want, ", "))),
        (F.size(extra) > 0, _reason("ce_adds", ce=F.col("ce"), extra=F.array_join(extra, ", "),
                                    want=F.array_join(want, ", ")))), pos=F.col("ce")))
    members = ces.select("idx", ID, "ce", F.explode("m").alias("g", ELEM))
    members = members.join(all_elems.select(F.col(ID).alias(ELEM), F.col(GRANULARITY).alias("eg")), ELEM, "left")
    errs.append(_errors("vertices", "members", members, ID, _first(
        (F.col("eg").isNull(), _reason("unknown_element", elem=F.col(ELEM), ce=F.col("ce"))),
        (F.col("eg") != F.col("g"), _reason("element_granularity", elem=F.col(ELEM), eg=F.col("eg"),
                                            ce=F.col("ce"), g=F.col("g")))),
        pos=F.col("ce"), sub=F.col("g")))
    errs += _attr_errors("vertices", vt, F.col("tkey"), catalog)

    # ---- edges: endpoints exist and have the right kinds
    allv = (existing_vertices.select(ID, KIND)
            .unionByName(e_kind.select(ID, KIND))
            .unionByName(vt.select(ID, F.col("tkind").alias(KIND)).filter(F.col(ID).isNotNull())))
    d = D
    checks: list[tuple[Column, Column]] = [(F.col("problem").isNotNull(), F.col("problem"))]
    for col, want_kind in (("src", "data"), ("dst", "data"), ("process", "process")):
        d = d.join(allv.select(F.col(ID).alias(col), F.col(KIND).alias(f"_k_{col}")), col, "left")
        checks.append((F.col(f"_k_{col}").isNull(),
                       _reason("unknown_vertex", what=want_kind, vertex=F.col(col), col=col)))
        checks.append((F.col(f"_k_{col}") != want_kind,
                       _reason("vertex_kind", col=col, want=want_kind, vertex=F.col(col), kind=F.col(f"_k_{col}"))))
    label = F.concat_ws("", F.col("src"), F.lit(" -["), F.col("process"), F.lit("]-> "), F.col("dst"))
    errs.append(_errors("edges", "edges", d.withColumn("_l", label), "_l", _first(*checks)))

    union = errs[0]
    for err in errs[1:]:
        union = union.unionByName(err)
    first = (union.filter(F.col("reason").isNotNull())
             .orderBy("o", "idx", "c", "pos", "sub", "rid", "reason").limit(1).collect())
    if first:
        r = first[0]
        raise record_error(bundle.source, r["section"], r["idx"], r["rid"], r["reason"])
    catalog = _infer_attributes(bundle, catalog, E, vt)
    return Resolved(catalog, vt.select("idx", ID, "tkey", "tkind", "ce_size"), e_kind)


def _infer_attributes(bundle: Bundle, catalog: Catalog, E: DataFrame, vt: DataFrame) -> Catalog:
    """Attribute types for types without a declared schema; conflicting value types are errors
    (the first conflicting attribute by type and name is reported, at its first record)."""
    seen = (E.select("idx", ID, F.col(GRANULARITY).alias("_key"), F.lit("elements").alias("_s"), "attr_types")
            .unionByName(vt.select("idx", ID, F.col("tkey").alias("_key"), F.lit("vertices").alias("_s"), "attr_types"))
            .filter(~F.col("_key").isin(sorted(catalog.declared)))
            .select("idx", ID, "_key", "_s", F.explode("attr_types").alias("_a", "_t"))
            .filter(F.col("_t").isNotNull()))
    kinds = seen.groupBy("_key", "_a").agg(F.collect_set("_t").alias("ts")).collect()
    for r in sorted(kinds, key=lambda r: (r["_key"], r["_a"])):
        key, attr = r["_key"], r["_a"]
        inferred, first_type = infer_attribute(catalog, key, attr, set(r["ts"]))
        if inferred is None:
            bad = (seen.filter((F.col("_key") == key) & (F.col("_a") == attr) & (F.col("_t") != first_type))
                   .orderBy("_s", "idx", ID).first())
            raise conflict_error(bundle.source, bad["_s"], bad["idx"], bad[ID], attr, key, bad["_t"], first_type)
        catalog = catalog.with_inferred_attributes(key, {attr: inferred})
    return catalog
