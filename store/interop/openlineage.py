"""OpenLineage events: read and validate them, and map a set of them to one Strata bundle.

Pure Python (no Spark, no store): `read_events` reads files and folders of events and checks
each against the OpenLineage schema (openlineage.schema.json, with `jsonschema`); `to_bundle`
maps a *set* of events to a `strata-bundle/1` dict (docs/openlineage.md has the mapping):

    process: Job ⊇ Run ⊇ Transformation       data: Dataset ⊇ DatasetVersion ⊇ Field

The bundle is a function of the set of events alone — not of their order, nor of how they were
split between ingests — so store/interop/ol_commit.py re-derives it from every event the store
holds whenever new ones arrive, and version numbers and point-in-time reads come out the same
whatever order the events arrived in.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from store.errors import BundleError, UserError

SCHEMA_FILE = Path(__file__).with_name("openlineage.schema.json")
# what an event without `schemaURL` is read as (validate_event)
DEFAULT_SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"

JOB, RUN, TRANSFORMATION = "Job", "Run", "Transformation"
DATASET, DATASET_VERSION, FIELD = "Dataset", "DatasetVersion", "Field"
GSETS = {
    "data": {"contains": [[FIELD, DATASET_VERSION], [DATASET_VERSION, DATASET]]},
    "process": {"contains": [[TRANSFORMATION, RUN], [RUN, JOB]]},
}
TERMINAL = ("COMPLETE", "FAIL", "ABORT")
_EPOCH = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)


# ---------------------------------------------------------------------------- ids
def job_id(namespace: str, name: str) -> str:
    return f"job:{namespace}:{name}"


def run_id(run: str) -> str:
    return f"run:{run}"


def dataset_id(namespace: str, name: str) -> str:
    """`dataset:<name>` for namespace `file` (a local path: the id capture gives a source dataset
    read from that path, so both systems share the element), else `dataset:<namespace>:<name>`."""
    return f"dataset:{name}" if namespace == "file" else f"dataset:{namespace}:{name}"


def field_id(version: str, path: str) -> str:
    return f"{version}#{path}"


# ---------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Event:
    """One event as read: where it came from, its JSON body and its identity (`key`); `text`,
    when the reader has it (a server's event log), the body's canonical JSON, not encoded again."""

    source: str
    index: int
    body: dict[str, Any]
    text: str | None = field(default=None, repr=False, compare=False)

    @cached_property
    def canonical_text(self) -> str:
        """The body's canonical JSON (`canonical`), encoded at most once."""
        return self.text if self.text is not None else canonical(self.body)

    @cached_property
    def key(self) -> str:
        return canonical_key(self.canonical_text)


def event_key(body: dict[str, Any]) -> str:
    """The identity of an event: the SHA-256 of its canonical JSON (sorted keys, no spaces)."""
    return canonical_key(canonical(body))


def canonical_key(text: str) -> str:
    """The key of an event whose canonical JSON is `text` (event_key without encoding it again)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, a folder's `.json`/`.jsonl`/`.ndjson` files (recursively, sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in (".json", ".jsonl", ".ndjson"))
        elif p.exists():
            out.append(p)
        else:
            raise UserError(f"no such file: {p}", hint="check the path")
    return out


def read_events(paths: Iterable[str | Path], warn: Callable[[str], None] | None = None) -> list[Event]:
    """Every event of these files and folders, validated (BundleError names file, index, field).

    A file holds a JSON array of events, one event (a JSON object), or JSON Lines. `warn` gets
    what `validate_event` accepted with a warning (an event without `schemaURL`)."""
    events: list[Event] = []
    for path in event_files(paths):
        for index, body in _parse(path):
            for w in validate_event(body, f"{path}: event {index}"):
                if warn is not None:
                    warn(w)
            events.append(Event(str(path), index, body))
    return events


def _parse(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise BundleError(f"invalid OpenLineage file {path}: not UTF-8 text ({e.reason})") from e
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            raise BundleError(f"invalid OpenLineage file {path}: not valid JSON at line {whole.lineno}, "
                              f"column {whole.colno}: {whole.msg}") from whole
        for index, (n, line) in enumerate(lines):  # JSON Lines
            try:
                yield index, json.loads(line)
            except json.JSONDecodeError as e:
                raise BundleError(f"invalid OpenLineage file {path}: event {index} (line {n}) is not valid "
                                  f"JSON at column {e.colno}: {e.msg}") from e
        return
    yield from enumerate(doc) if isinstance(doc, list) else [(0, doc)]


@cache
def _validators() -> dict[str, Any]:
    try:
        import jsonschema  # deferred: only this path needs jsonschema
    except ImportError as e:  # pragma: no cover - the interop extra is missing
        raise UserError("reading OpenLineage events needs the jsonschema package",
                        hint="pip install 'strata-prov[interop]'") from e
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    checker = jsonschema.FormatChecker(formats=("uuid",))
    checker.checks("date-time", raises=ValueError)(_check_time)
    checker.checks("uri", raises=ValueError)(lambda v: not isinstance(v, str) or bool(v))
    cls = jsonschema.Draft202012Validator
    return {name: cls({**schema, "$ref": f"#/$defs/{name}"}, format_checker=checker)
            for name in ("RunEvent", "DatasetEvent", "JobEvent")}


@cache
def _fast() -> dict[str, Any] | None:
    """The same schemas compiled to Python by `fastjsonschema` (about 20 times faster than
    `jsonschema`), to pass valid events quickly; None when it is not installed. An event it
    rejects is checked again by `jsonschema`, whose error names the field."""
    try:
        import fastjsonschema  # deferred: only this path needs fastjsonschema
    except ImportError:
        return None
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"  # the newest draft it compiles
    formats = {"date-time": _is_time, "uuid": _is_uuid, "uri": lambda v: bool(v)}
    return {name: fastjsonschema.compile({**schema, "$ref": f"#/$defs/{name}"}, formats=formats)
            for name in ("RunEvent", "DatasetEvent", "JobEvent")}


def _is_time(value: Any) -> bool:
    try:
        return _check_time(value)
    except ValueError:
        return False


# a UUID as `str(uuid.UUID(text))` writes it, in either case: the only texts `_is_uuid` takes
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _is_uuid(value: Any) -> bool:
    """Whether the text is a UUID in its canonical form, `str(uuid.UUID(text)) == text.lower()`
    (one regular expression instead of parsing it: every request's runId is checked)."""
    return _UUID.fullmatch(str(value)) is not None


def _check_time(value: Any) -> bool:
    if isinstance(value, str):
        parse_time(value)
    return True


def parse_time(text: str) -> _dt.datetime:
    """An ISO 8601 date-time with a time part; one without a zone is read as UTC."""
    if "t" not in text.lower():
        raise ValueError(f"{text!r} has no time part")
    value = _dt.datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)


def event_kind(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    if "run" in body:
        return "RunEvent"
    if "dataset" in body:
        return "DatasetEvent"
    return "JobEvent" if "job" in body else None


def validate_event(body: Any, where: str) -> list[str]:
    """Check one event against the schema; BundleError naming `where` and the first bad field.

    As lenient as Marquez: an event without `schemaURL` (Marquez's own examples have none) is
    checked as if it named the schema and accepted; the list returned says so (warnings)."""
    kind = event_kind(body)
    if kind is None:
        raise BundleError(f"invalid OpenLineage event {where}: not a RunEvent, DatasetEvent or JobEvent "
                          "(an object with 'run', 'dataset' or 'job')", hint="fix the event and ingest again")
    warnings = []
    if "schemaURL" not in body:
        warnings.append(f"OpenLineage event {where} has no 'schemaURL'; read as OpenLineage 2-0-2")
        body = {**body, "schemaURL": DEFAULT_SCHEMA_URL}
    fast = _fast()
    if fast is not None:
        try:
            fast[kind](body)
            return warnings
        except Exception:  # noqa: BLE001, S110 - fastjsonschema's error or a format check's: ask jsonschema
            pass
    errors = sorted(_validators()[kind].iter_errors(body), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        path = field_path(first.absolute_path)
        raise BundleError(f"invalid OpenLineage event {where}: field '{path or '(event)'}': {first.message}. "
                          "Nothing was committed.", hint="fix the event and ingest again")
    return warnings


def field_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


# ---------------------------------------------------------------------------- runs
@dataclass
class Run:
    """The events of one runId merged (START/RUNNING/COMPLETE/FAIL/ABORT/OTHER)."""

    run: str
    job: tuple[str, str]
    start: _dt.datetime
    first_time: str
    state: str
    end: _dt.datetime | None = None
    end_time: str | None = None
    parent: tuple[str, str, str] | None = None  # (runId, job namespace, job name)
    inputs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    outputs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        return self.state == "COMPLETE"


# the canonical JSON of some event bodies, by id(body): what a caller holding it passes on, so
# that ordering the events does not encode them again (`to_bundle`'s `texts`)
Texts = Mapping[int, str]


def _ordered(bodies: Iterable[dict[str, Any]], texts: Texts | None = None,
             ) -> list[tuple[_dt.datetime, str, dict[str, Any]]]:
    """Events in a canonical order: by time, then by their canonical JSON (from `texts` where it
    holds a body's)."""
    texts = texts or {}
    rows = [(parse_time(b["eventTime"]), texts.get(id(b)) or canonical(b), b) for b in bodies]
    rows.sort(key=lambda r: (r[0], r[1]))
    return rows


def merge_runs(bodies: Iterable[dict[str, Any]], texts: Texts | None = None) -> dict[str, Run]:
    """RunEvents grouped by runId: the first event's time, the state of the last terminal event
    (else of the last event), inputs and outputs unioned with later facets winning."""
    runs: dict[str, Run] = {}
    for when, _text, body in _ordered((b for b in bodies if event_kind(b) == "RunEvent"), texts):
        rid = body["run"]["runId"]
        job = (body["job"]["namespace"], body["job"]["name"])
        etype = body.get("eventType", "OTHER")
        r = runs.get(rid)
        if r is None:
            r = runs[rid] = Run(rid, job, when, body["eventTime"], etype)
        if etype in TERMINAL:
            r.state, r.end, r.end_time = etype, when, body["eventTime"]
        elif r.state not in TERMINAL and etype != "OTHER":
            r.state = etype
        parent = (body["run"].get("facets") or {}).get("parent")
        if parent:
            r.parent = (parent["run"]["runId"], parent["job"]["namespace"], parent["job"]["name"])
        for side, target in (("inputs", r.inputs), ("outputs", r.outputs)):
            for ds in body.get(side) or ():
                merged = target.setdefault((ds["namespace"], ds["name"]), {})
                merged.update(ds.get("facets") or {})
    return runs


def schema_paths(fields: Iterable[dict[str, Any]], prefix: str = "") -> list[str]:
    """The dotted paths of a schema facet's fields, nested ones included (`a`, `a.b`)."""
    out: list[str] = []
    for f in fields:
        path = f"{prefix}{f['name']}"
        out.append(path)
        out += schema_paths(f.get("fields") or (), path + ".")
    return out


# ---------------------------------------------------------------------------- versions
@dataclass
class _Version:
    id: str
    dataset: tuple[str, str]
    time: _dt.datetime
    producer: str | None = None
    named: str | None = None  # the datasetVersion facet
    fields: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Produced:
    """A version some completed run produced, known without that run's events (a store's
    `DatasetVersion` row and its producer's end time): what `to_bundle` of a subset of the events
    needs to tell which version the runs in it read."""

    dataset: tuple[str, str]
    run: str
    end: _dt.datetime
    named: str | None = None


class _Versions:
    """The versions of every dataset: one per completed run that outputs it (and per `known`
    version whose producer is not among the runs), plus the state an input was read in when no
    known run produced it (its `initial` state, or a named version)."""

    def __init__(self, runs: dict[str, Run], known: Iterable[Produced] = ()) -> None:
        self.by_id: dict[str, _Version] = {}
        self.produced: dict[tuple[str, str], list[_Version]] = {}
        made = [(r.end, r.run, ds, (facets.get("version") or {}).get("datasetVersion"))
                for r in runs.values() if r.completed for ds, facets in r.outputs.items()]
        made += [(k.end, k.run, k.dataset, k.named) for k in known if k.run not in runs]
        for end, run, ds, named in sorted(made, key=lambda m: (m[0], m[1])):
            v = _Version(f"{dataset_id(*ds)}@{run}", ds, end, producer=run, named=named)
            self.by_id[v.id] = v
            self.produced.setdefault(ds, []).append(v)

    def read(self, r: Run, ds: tuple[str, str], facets: dict[str, Any]) -> _Version:
        """The version of `ds` that run `r` read: the one its version facet names, else the one
        current at the run's start (the latest whose producing run ended before it)."""
        named = (facets.get("version") or {}).get("datasetVersion")
        produced = self.produced.get(ds, [])
        if named is not None:
            hit = next((v for v in produced if v.named == named), None)
            if hit is not None:
                return hit
            return self._observed(f"{dataset_id(*ds)}@version:{named}", ds, r.start, named)
        before = [v for v in produced if v.time < r.start]
        if before:
            return before[-1]
        return self._observed(f"{dataset_id(*ds)}@initial", ds, _EPOCH, None)

    def _observed(self, vid: str, ds: tuple[str, str], when: _dt.datetime, named: str | None) -> _Version:
        v = self.by_id.get(vid)
        if v is None:
            v = self.by_id[vid] = _Version(vid, ds, when, named=named)
        elif when < v.time:
            v.time = when
        return v

    def numbered(self) -> Iterator[tuple[_Version, int]]:
        """Every version with its number: 1, 2, … per dataset in order of time."""
        per: dict[tuple[str, str], list[_Version]] = {}
        for v in self.by_id.values():
            per.setdefault(v.dataset, []).append(v)
        for vs in per.values():
            vs.sort(key=lambda v: (v.time, v.producer is not None, v.id))
            yield from ((v, n) for n, v in enumerate(vs, 1))


# ---------------------------------------------------------------------------- the bundle
def _attrs(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def transformation_id(run: str, t: dict[str, Any]) -> str:
    parts = [run_id(run), t.get("type", "DIRECT")]
    if t.get("subtype"):
        parts.append(t["subtype"])
    if t.get("masking"):
        parts.append("masked")
    return "/".join(parts)


class _Builder:
    def __init__(self) -> None:
        self.elements: dict[str, dict[str, Any]] = {}
        self.edges: set[tuple[str, str, str]] = set()

    def element(self, ident: str, granularity: str, parents: Iterable[str] = (), **attrs: Any) -> None:
        if ident not in self.elements:
            self.elements[ident] = {"id": ident, "granularity": granularity, "parents": sorted(set(parents)),
                                    "attrs": _attrs(**attrs)}

    def job(self, ns: str, name: str) -> str:
        self.element(job_id(ns, name), JOB, namespace=ns, name=name)
        return job_id(ns, name)

    def dataset(self, ds: tuple[str, str]) -> str:
        self.element(dataset_id(*ds), DATASET, namespace=ds[0], name=ds[1])
        return dataset_id(*ds)


def to_bundle(bodies: Iterable[dict[str, Any]], known: Iterable[Produced] = (),
              texts: Texts | None = None) -> dict[str, Any]:
    """The bundle of a set of (validated) events; the same set gives the same bundle. `known`:
    versions produced by runs whose events are not in the set (their versions are in the bundle
    too, without fields); `texts`: the canonical JSON of bodies the caller holds it of."""
    bodies = list(bodies)
    runs = merge_runs(bodies, texts)
    versions = _Versions(runs, known)
    b = _Builder()
    for body in bodies:
        kind = event_kind(body)
        if kind == "DatasetEvent":
            b.dataset((body["dataset"]["namespace"], body["dataset"]["name"]))
        elif kind == "JobEvent":
            b.job(body["job"]["namespace"], body["job"]["name"])
            for ds in [*(body.get("inputs") or ()), *(body.get("outputs") or ())]:
                b.dataset((ds["namespace"], ds["name"]))
    for r in sorted(runs.values(), key=lambda r: r.run):
        _add_run(b, r, runs, versions)
    for v, n in versions.numbered():
        b.element(v.id, DATASET_VERSION, [b.dataset(v.dataset)], namespace=v.dataset[0], name=v.dataset[1],
                  version=n, datasetVersion=v.named, producedBy=v.producer)
        for path in v.fields:
            b.element(field_id(v.id, path), FIELD, [v.id], name=path)
    return {
        "format": "strata-bundle/1",
        "gsets": GSETS,
        "elements": [b.elements[k] for k in sorted(b.elements)],
        "edges": [{"src": s, "process": p, "dst": d} for s, p, d in sorted(b.edges)],
    }


def _parent_jobs(r: Run, runs: dict[str, Run]) -> list[str]:
    """The jobs of the run's parent run, its parent's parent run, … (a parent run may be known
    only from the facet: then its job is the facet's)."""
    out: list[str] = []
    seen = {r.run}
    while r.parent is not None and r.parent[0] not in seen:
        seen.add(r.parent[0])
        out.append(job_id(r.parent[1], r.parent[2]))
        nxt = runs.get(r.parent[0])
        if nxt is None:
            break
        out.append(job_id(*nxt.job))
        r = nxt
    return out


def _add_run(b: _Builder, r: Run, runs: dict[str, Run], versions: _Versions) -> None:
    job = b.job(*r.job)
    if r.parent is not None:
        b.job(r.parent[1], r.parent[2])
    b.element(run_id(r.run), RUN, [job, *_parent_jobs(r, runs)], runId=r.run, state=r.state,
              eventTime=r.first_time, endTime=r.end_time, parentRunId=r.parent[0] if r.parent else None)
    read = {ds: versions.read(r, ds, facets) for ds, facets in r.inputs.items()}
    for ds, facets in r.inputs.items():
        read[ds].fields.update(schema_paths((facets.get("schema") or {}).get("fields") or ()))
    if not r.completed:
        return
    inputs = list(read.values())
    for ds, facets in r.outputs.items():
        out = versions.by_id[f"{dataset_id(*ds)}@{r.run}"]
        out.fields.update(schema_paths((facets.get("schema") or {}).get("fields") or ()))
        for src in inputs:
            b.edges.add((src.id, run_id(r.run), out.id))
        _column_lineage(b, r, out, facets, read, versions)


def _column_lineage(b: _Builder, r: Run, out: _Version, facets: dict[str, Any],
                    read: dict[tuple[str, str], _Version], versions: _Versions) -> None:
    """Edges (input field, transformation of the run, output field) of a column lineage facet; its
    dataset-level entries feed every field of the output that the run's own facets name (its
    schema facet and the column lineage facet's fields): what the run said it wrote, whatever
    fields other runs' events give the same version, so that a run's edges follow from its own
    events and the versions it read (store/interop/ol_commit.py re-derives them run by run)."""
    facet = facets.get("columnLineage") or {}
    own_fields = {*schema_paths((facets.get("schema") or {}).get("fields") or ()), *(facet.get("fields") or {})}

    def source(entry: dict[str, Any]) -> str:
        ds = (entry["namespace"], entry["name"])
        if ds not in read:
            read[ds] = versions.read(r, ds, {})
        read[ds].fields.add(entry["field"])
        return field_id(read[ds].id, entry["field"])

    def link(entry: dict[str, Any], dst: str, default: dict[str, Any]) -> None:
        src = source(entry)
        for t in entry.get("transformations") or [default]:
            tid = transformation_id(r.run, t)
            b.element(tid, TRANSFORMATION, [run_id(r.run)], type=t.get("type", "DIRECT"),
                      subtype=t.get("subtype"), masking=t.get("masking") or None)
            b.edges.add((src, tid, dst))

    per_field = facet.get("fields") or {}
    out.fields.update(per_field)
    for name, spec in per_field.items():
        default = _attrs(type="DIRECT", subtype=spec.get("transformationType"))
        for entry in spec.get("inputFields") or ():
            link(entry, field_id(out.id, name), default)
    for entry in facet.get("dataset") or ():
        for name in sorted(own_fields):
            link(entry, field_id(out.id, name), {"type": "INDIRECT"})


# ---------------------------------------------------------------------------- incremental derivation
# What ol_commit.py needs to re-derive only what new events change (docs/openlineage.md, "How an
# ingest works"): what each event refers to, and which derived rows belong to which run or dataset.
ROLE_IN, ROLE_OUT, ROLE_COLUMN = "in", "out", "column"


def event_refs(body: dict[str, Any]) -> list[tuple[str | None, str | None, str | None, str | None]]:
    """What an event refers to, as rows (run, parent run, dataset id, role): a RunEvent's runId,
    its parent facet's runId, and every dataset it reads (`in`), writes (`out`) or names as a
    column lineage source (`column`); one row with no dataset when it names none. Datasets and
    JobEvents refer to no run."""
    if event_kind(body) != "RunEvent":
        return [(None, None, None, None)]
    run = body["run"]["runId"]
    parent = ((body["run"].get("facets") or {}).get("parent") or {}).get("run", {}).get("runId")
    refs: set[tuple[str, str]] = set()
    for side, role in (("inputs", ROLE_IN), ("outputs", ROLE_OUT)):
        for ds in body.get(side) or ():
            refs.add((dataset_id(ds["namespace"], ds["name"]), role))
            lineage = (ds.get("facets") or {}).get("columnLineage") or {}
            entries = [e for spec in (lineage.get("fields") or {}).values() for e in spec.get("inputFields") or ()]
            for e in [*entries, *(lineage.get("dataset") or ())]:
                refs.add((dataset_id(e["namespace"], e["name"]), ROLE_COLUMN))
    if not refs:
        return [(run, parent, None, None)]
    return [(run, parent, ds, role) for ds, role in sorted(refs)]


def owners(bundle: dict[str, Any]) -> dict[str, str]:
    """element id -> its owner in a bundle of `to_bundle`: a `Run` and its `Transformation`s belong
    to the run (`run:<runId>`), a `DatasetVersion` and its `Field`s to the dataset's id; `Job`
    and `Dataset` elements own themselves (they never change once some event names them)."""
    by_id = {el["id"]: el for el in bundle["elements"]}
    out: dict[str, str] = {}
    for el in bundle["elements"]:
        g = el["granularity"]
        if g in (TRANSFORMATION, DATASET_VERSION):
            out[el["id"]] = el["parents"][0]
        elif g == FIELD:
            out[el["id"]] = by_id[el["parents"][0]]["parents"][0]
        else:
            out[el["id"]] = el["id"]
    return out
