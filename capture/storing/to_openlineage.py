"""A captured run as OpenLineage RunEvents, with column lineage from structural provenance.

`column_lineage(operators, result_oid, outputs)` is the pure core (docs/openlineage.md, "Export"):
for each output field it follows the manipulated paths (Pebble's M) from the result back to the
sources — the field's *contributing* input fields, exported as DIRECT (IDENTITY where the path
keeps its name all the way, AGGREGATION through an aggregate function, not a grouping key,
TRANSFORMATION otherwise) — and it collects the accessed paths of filters, joins, grouping keys,
sorts and windows' partition and order keys — the *influencing* input fields, exported as
INDIRECT (FILTER, JOIN, GROUP_BY, SORT, WINDOW) in the facet's dataset-level list, as they
influence every field of the output. Paths are dotted field names: Pebble's array
steps (`[pos]`, `[n]`) are left out (`tweets.[pos].text` is `tweets.text`).

`run_events(store, run, ...)` turns a committed run (capture_runs, capture_operators, the
result's schema from the manifest, capture_sources' read schemas, capture_tables) into its START
and COMPLETE events. Datasets are named as OpenLineage's Spark integration names them
(capture/storing/ol_names.py): a path by its location (`file` and the path for a local one, so
ingesting the events again lands on the captured run's own `dataset:<path>` elements), a
catalog table by its location with its catalog name in a `symlinks` facet, the same whether the
run reads or writes it; a run stored before capture_tables names a table by its identifier.
Schema facets carry each field's Spark type: an input's the schema it was read with, the
output's the result's, or the table's columns for a write into a catalog table (an INSERT's
`col1` is the table's column it went into). Rows the program made (`PROGRAM_MADE`) are in no event.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from capture.operators import column_paths, named_path
from capture.storing.ol_names import OLName, TableFacts, location_dataset, table_dataset
from capture.storing.tables import OPERATORS, RUNS, SOURCES, TABLES, output_table, result_table

PRODUCER = "https://pypi.org/project/strata-prov/"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
FACETS = "https://openlineage.io/spec/facets/"
STRATA_RUN_FACET = "https://pypi.org/project/strata-prov/#strata-run-facet"
HIDDEN = "__strata_"

IDENTITY, TRANSFORMATION, AGGREGATION = "IDENTITY", "TRANSFORMATION", "AGGREGATION"
_RANK = {IDENTITY: 0, TRANSFORMATION: 1, AGGREGATION: 2}
INDIRECT_BY_TYPE = {"filter": "FILTER", "join": "JOIN", "aggregation": "GROUP_BY", "sort": "SORT"}
PASS_THROUGH = ("filter", "sort", "limit", "union")
# Sources of rows the program made itself (createDataFrame, parallelize, range, VALUES): capture
# names them by what made them; they are no dataset another tool could name, so no event lists them.
PROGRAM_MADE = ("local:", "range:", "onerow:", "rdd:")


def field_name(path: str) -> str:
    """Pebble path -> OpenLineage field name: array steps left out."""
    return ".".join(p for p in path.split(".") if not (p.startswith("[") and p.endswith("]")))


def _same(src: str, dst: str) -> bool:
    """The path keeps its name: the same, or but for ``~n`` (a column of a join's right side
    named as a left one, ``a`` -> ``a~2``: capture/operators.py ``column_paths``)."""
    return src == dst or named_path(src) == named_path(dst)


def _stronger(a: str, b: str) -> str:
    return a if _RANK[a] >= _RANK[b] else b


class _Ops:
    def __init__(self, operators: Iterable[dict[str, Any]]) -> None:
        self.by_oid = {o["oid"]: o for o in operators}

    def back(self, oid: int, path: str, kind: str = IDENTITY) -> Iterator[tuple[str, str, str]]:
        """(source dataset, source path, DIRECT subtype) of the values at `path` of `oid`'s output."""
        op = self.by_oid[oid]
        if op["type"] == "source":
            yield op["dataset"] or "", path, kind
            return
        pairs = op["manipulated"]
        for inp in op["inputs"]:
            if pairs is None:  # a map (UDF): every path passes, transformed
                yield from self.back(inp["pred"], path, _stronger(kind, TRANSFORMATION))
                continue
            mine = [p for p in pairs if p["input"] == inp["input"]]
            hits = list(_match(mine, path))
            if not hits and op["type"] in PASS_THROUGH:
                hits = [(path, path, path)]
            keys = grouping_keys(op, mine) if op["type"] == "aggregation" else set()
            for src, dst, new in hits:
                if op["type"] == "aggregation" and (src, dst) not in keys:
                    step = AGGREGATION  # an aggregate's value, even one named as its input (max(x) AS x)
                elif _same(src, dst) or (op["type"] == "flatten" and src.endswith(".[pos]")):
                    step = IDENTITY  # kept, or an array's element as it is (not a computed array's)
                else:  # a grouping key's value is its rows' one value, as any other operator's
                    step = TRANSFORMATION
                yield from self.back(inp["pred"], new, _stronger(kind, step))

    def reachable(self, oid: int) -> list[dict[str, Any]]:
        out, todo, seen = [], [oid], set()
        while todo:
            o = todo.pop()
            if o in seen:
                continue
            seen.add(o)
            out.append(self.by_oid[o])
            todo += [i["pred"] for i in self.by_oid[o]["inputs"]]
        return sorted(out, key=lambda o: o["oid"])


def _match(pairs: list[dict[str, Any]], path: str) -> Iterator[tuple[str, str, str]]:
    """(src, dst, the input path) of each manipulated pair that produced `path`: at or above it
    (a value under `dst` comes from under `src`), or below it (`path` is a structure built from
    `dst`, so it stands for all of it)."""
    for p in pairs:
        src, dst = p["src"], p["dst"]
        if path == dst or path.startswith(dst + "."):
            yield src, dst, src + path[len(dst):]
        elif dst.startswith(path + "."):
            yield src, dst, src


def column_lineage(operators: Iterable[dict[str, Any]], result_oid: int, outputs: Iterable[str]
                   ) -> tuple[dict[str, list[tuple[str, str, str]]], list[tuple[str, str, str]]]:
    """Per output path, its contributing (dataset, field, DIRECT subtype) inputs; and the
    influencing (dataset, field, INDIRECT subtype) inputs of the whole output. Module docstring."""
    ops = _Ops(operators)
    direct: dict[str, list[tuple[str, str, str]]] = {}
    for path in outputs:
        best: dict[tuple[str, str], str] = {}
        for ds, src, kind in ops.back(result_oid, path):
            key = (ds, field_name(src))
            best[key] = _stronger(best.get(key, IDENTITY), kind)
        direct[field_name(path)] = sorted((ds, f, k) for (ds, f), k in best.items())
    indirect: set[tuple[str, str, str]] = set()
    for op in ops.reachable(result_oid):
        window = (op.get("method") or "").startswith("window.")  # a window's partition, frames, join
        subtype = "WINDOW" if window else INDIRECT_BY_TYPE.get(op["type"])
        for inp in op["inputs"] if subtype else ():
            for path in inp["accessed"] or () if window else _influencing(op, inp):
                indirect.update((ds, field_name(src), subtype) for ds, src, _ in ops.back(inp["pred"], path))
    return direct, sorted(indirect)


def _influencing(op: dict[str, Any], inp: dict[str, Any]) -> list[str]:
    """The accessed paths of one input that only influence: all of a filter's, join's or sort's;
    an aggregation's grouping keys (or accessed and never aggregated)."""
    accessed = inp["accessed"] or []
    if op["type"] != "aggregation":
        return list(accessed)
    pairs = [p for p in op["manipulated"] or () if p["input"] == inp["input"]]
    keys = grouping_keys(op, pairs)
    aggregated = {p["src"] for p in pairs if (p["src"], p["dst"]) not in keys}
    return sorted({src for src, _ in keys} | (set(accessed) - aggregated))


_EXPR_ID = re.compile(r"#\d+L?")


def grouping_keys(op: dict[str, Any], pairs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """The (src, dst) pairs of an aggregation's M that carry a grouping key's value, as opposed
    to an aggregate's: those whose dst is a column the node's grouping expressions make, read
    from Spark's node in `detail` (`Aggregate [user#10.id_str], [user#10.id_str AS user#12,
    max(x#3) AS x#13]`: `user.id_str → user` is a key's, `x → x` an aggregate's). Without that
    node (distinct, dropDuplicates: every column is a key) the pairs that keep their name."""
    node = _aggregate_node(op.get("detail") or "")
    if node is None:
        return {(p["src"], p["dst"]) for p in pairs if _same(p["src"], p["dst"])}
    grouping, outputs = node
    # an output's path is its name, or name~n for a name an earlier output has (column_paths)
    paths = column_paths(name for _, name in outputs)
    columns = grouping | {path for (expr, _), path in zip(outputs, paths, strict=True) if expr in grouping}
    return {(p["src"], p["dst"]) for p in pairs if p["dst"] in columns}


def _aggregate_node(detail: str) -> tuple[set[str], list[tuple[str, str]]] | None:
    """Spark's `Aggregate [grouping...], [output...]` node string as the grouping expressions and
    the (expression, name) outputs, expression ids left out (`user#10.id_str` is `user.id_str`);
    None if `detail` is not one. An output list cut short by Spark keeps the outputs before the cut."""
    if not detail.startswith("Aggregate ["):
        return None
    lists: list[list[str]] = []
    cur, depth = "", 0
    for ch in detail[len("Aggregate"):]:
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 1 and ch == "[":
            lists.append([])
            cur = ""
        elif depth == 0 and ch == "]":
            lists[-1].append(cur)
        elif depth == 1 and ch == ",":
            lists[-1].append(cur)
            cur = ""
        elif depth >= 1:
            cur += ch
    if not lists:
        return None
    clean = [[_EXPR_ID.sub("", x).strip() for x in group] for group in lists]
    grouping = {x for x in clean[0] if x}
    outputs = []
    for x in clean[1] if len(clean) > 1 else ():
        expr, sep, name = x.rpartition(" AS ")
        outputs.append((expr, name) if sep else (x, x))
    return grouping, outputs


# ---------------------------------------------------------------------------- events
def schema_fields(schema: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(Pebble path, type in Spark's JSON form) of a Spark schema's fields (JSON form), nested
    ones included; arrays add `[pos]`."""
    for f in schema.get("fields", ()):
        if f["name"].startswith(HIDDEN):
            continue
        path = prefix + f["name"]
        yield path, f["type"]
        yield from _type_fields(f["type"], path)


def _type_fields(t: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(t, dict) and t.get("type") == "struct":
        yield from schema_fields(t, path + ".")
    elif isinstance(t, dict) and t.get("type") == "array":
        yield from _type_fields(t["elementType"], path + ".[pos]")


def schema_paths(schema: dict[str, Any]) -> Iterator[str]:
    """Pebble paths of a Spark schema's fields (JSON form): `schema_fields` without the types."""
    return (path for path, _ in schema_fields(schema))


def field_types(schema: dict[str, Any]) -> dict[str, str]:
    """OpenLineage field name (`field_name`) -> Spark's name of its type (`long`, `string`,
    `struct`, `array`, `decimal(10,2)` …), for a Spark schema in JSON form."""
    return {field_name(path): t if isinstance(t, str) else str(t.get("type")) for path, t in schema_fields(schema)}


def schema_facet(names: Iterable[str], types: dict[str, str] | None = None) -> dict[str, Any]:
    """An OpenLineage schema facet of dotted field names (nested ones as `fields`): in the order of
    ``types`` (the dataset's schema), then any other names sorted."""
    types = types or {}
    wanted = set(names)
    root: dict[str, Any] = {}
    for name in [n for n in types if n in wanted] + sorted(wanted - types.keys()):
        node = root
        for part in name.split("."):
            node = node.setdefault(part, {})

    def fields(tree: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
        out = []
        for k, sub in tree.items():
            entry: dict[str, Any] = {"name": k}
            if prefix + k in types:
                entry["type"] = types[prefix + k]
            if sub:
                entry["fields"] = fields(sub, prefix + k + ".")
            out.append(entry)
        return out

    return facet("SchemaDatasetFacet", "1-2-0", fields=fields(root, ""))


def facet(name: str, version: str, **body: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": f"{FACETS}{version}/{name}.json#/$defs/{name}", **body}


def run_uuid(run: str) -> str:
    """A captured run's id as the UUID OpenLineage needs (UUID 5 of the run id: stable)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"strata:run:{run}"))


def _rows(store, table: str) -> list[dict[str, Any]]:
    if not store.has_table(table):
        return []
    if store.storage.on_this_machine:
        return store.local().arrow(table).to_pylist()
    return [r.asDict(recursive=True) for r in store.table(table).collect()]


def captured_runs(store) -> dict[str, dict[str, Any]]:
    """run id -> its capture_runs row."""
    return {r["run"]: r for r in _rows(store, RUNS)}


def dataset_name(ds: str, tables: dict[str, dict[str, Any]]) -> OLName:
    """A dataset as OpenLineage names it (capture/storing/ol_names.py): a catalog table the run
    recorded (`tables`: its capture_tables rows by dataset) by its location with its catalog name
    as a symlink; anything else by the name capture gives it, a path or location."""
    t = tables.get(ds)
    if t is None:
        return location_dataset(ds)
    return table_dataset(TableFacts(t["location"], t["database"], t["name"], t["warehouse"], t["metastore"]))


def _dataset(name: OLName, facets: dict[str, Any]) -> dict[str, Any]:
    if name.symlink is not None:
        ns, table = name.symlink
        facets = {**facets, "symlinks": facet("SymlinksDatasetFacet", "1-0-1", identifiers=[
            {"namespace": ns, "name": table, "type": "TABLE"}])}
    return {"namespace": name.namespace, "name": name.name, "facets": facets}


def _to_table(direct: dict[str, list[tuple[str, str, str]]], columns: list[list[str]]
              ) -> dict[str, list[tuple[str, str, str]]]:
    """The output fields renamed from the result's columns to the table's (`columns`: [result
    column, table column] pairs, capture_tables): an INSERT's `col1` is the table's `a`."""
    into: dict[str, list[str]] = {}
    for r, t in columns:
        into.setdefault(r, []).append(t)
    out: dict[str, list[tuple[str, str, str]]] = {}
    for name, srcs in direct.items():
        top, dot, rest = name.partition(".")
        for t in into.get(top, ()):
            out[t + dot + rest] = srcs
    return out


def run_events(store, run: dict[str, Any], operators: list[dict[str, Any]],
               tables: dict[str, dict[str, Any]] | None = None,
               read_schemas: dict[str, list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """START and COMPLETE RunEvents of one captured run (`run`: its capture_runs row; `tables`:
    its capture_tables rows by dataset; `read_schemas`: the schemas its sources read, by dataset,
    from their locators in capture_sources)."""
    tables, read_schemas = tables or {}, read_schemas or {}
    entry = store.manifest.tables.get(output_table(run["run"])) or store.manifest.tables.get(result_table(run["run"]))
    out_schema = json.loads(entry.schema) if entry is not None else {"fields": []}
    outputs = list(schema_paths(out_schema))
    direct, indirect = column_lineage(operators, run["result_oid"], outputs)
    direct = {name: [x for x in srcs if not x[0].startswith(PROGRAM_MADE)] for name, srcs in direct.items()}
    indirect = [x for x in indirect if not x[0].startswith(PROGRAM_MADE)]
    read: dict[str, set[str]] = {o["dataset"] or "": set() for o in operators
                                 if o["type"] == "source" and not (o["dataset"] or "").startswith(PROGRAM_MADE)}
    for ds, f, _ in [x for v in direct.values() for x in v] + indirect:
        read.setdefault(ds, set()).add(f)
    written = tables.get(run["output_path"])
    if written is not None and written["columns"] is not None:  # a catalog table: its columns, its types
        direct, out_schema = _to_table(direct, json.loads(written["columns"])), json.loads(written["schema"])
    names = {ds: dataset_name(ds, tables) for ds in [*read, run["output_path"]]}

    def entry_of(ds: str, f: str, t: str, sub: str) -> dict[str, Any]:
        n = names[ds]
        return {"namespace": n.namespace, "name": n.name, "field": f, "transformations": [{"type": t, "subtype": sub}]}

    lineage = facet("ColumnLineageDatasetFacet", "1-2-0", fields={
        name: {"inputFields": [entry_of(ds, f, "DIRECT", k) for ds, f, k in srcs]}
        for name, srcs in direct.items() if srcs
    }, dataset=[entry_of(ds, f, "INDIRECT", k) for ds, f, k in indirect])
    inputs = []
    for ds, used in sorted(read.items()):
        types: dict[str, str] = {}
        for schema in read_schemas.get(ds, ()):
            types.update(field_types(schema))
        inputs.append(_dataset(names[ds], {"schema": schema_facet(used | types.keys(), types)}))
    out_types = field_types(out_schema)
    output = _dataset(names[run["output_path"]], {"schema": schema_facet(direct.keys() | out_types.keys(), out_types),
                                                  "columnLineage": lineage})
    base = {"producer": PRODUCER, "schemaURL": RUN_EVENT,
            "run": {"runId": run_uuid(run["run"]),
                    "facets": {"strata_run": {"_producer": PRODUCER, "_schemaURL": STRATA_RUN_FACET,
                                              "run": run["run"]}}},
            "job": {"namespace": "strata", "name": run["pipeline"]}}
    return [
        {"eventTime": run["started"], "eventType": "START", **base, "inputs": inputs, "outputs": []},
        {"eventTime": run["finished"], "eventType": "COMPLETE", **base, "inputs": inputs, "outputs": [output]},
    ]


def captured_events(store, runs: Iterable[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """run id -> events, for the named captured runs (None: every captured run)."""
    known = captured_runs(store)
    wanted = list(known) if runs is None else [r for r in runs if r in known]
    ops = _rows(store, OPERATORS) if wanted else []
    tables, sources = (_rows(store, TABLES), _rows(store, SOURCES)) if wanted else ([], [])
    out = {}
    for r in wanted:
        mine = sorted((o for o in ops if o["run"] == r), key=lambda o: o["oid"])
        dataset_of = {o["oid"]: o["dataset"] for o in mine if o["type"] == "source"}
        schemas: dict[str, list[dict[str, Any]]] = {}
        for row in sources:
            schema = json.loads(row["locator"]).get("schema") if row["run"] == r else None
            if schema and dataset_of.get(row["oid"]):
                schemas.setdefault(dataset_of[row["oid"]], []).append(json.loads(schema))
        out[r] = run_events(store, known[r], mine, {t["table"]: t for t in tables if t["run"] == r}, schemas)
    return out
