"""OpenLineage's Spark listener beside Strata: its jar, its settings, and column lineage compared.

Shared by benchmarks/bench_ol_listener.py and tests/interop/test_ol_listener.py. The jar is
fetched by `make openlineage-jar` (pinned in benchmarks/jvm/pom.xml) into build/jvm/openlineage/.

`column_lineage(events)` reads the column lineage facets of a set of RunEvents — the listener's,
or `strata export openlineage`'s — into one comparable form, and `compare(strata, listener)`
lines them up per output dataset and field (docs/openlineage.md, "Beside OpenLineage's Spark
listener").
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from support.paths import ROOT

JAR_DIR = ROOT / "build" / "jvm" / "openlineage"
LISTENER = "io.openlineage.spark.agent.OpenLineageSparkListener"


def listener_jar() -> Path | None:
    """The fetched listener jar, or None (run `make openlineage-jar`)."""
    jars = sorted(JAR_DIR.glob("openlineage-spark_2.13-*.jar"))
    return jars[-1] if jars else None


def listener_conf(jar: Path, events: Path) -> dict[str, str]:
    """Spark settings that load the listener and make it append its events to `events` (JSON Lines)."""
    return {"spark.jars": str(jar), "spark.extraListeners": LISTENER,
            "spark.openlineage.transport.type": "file",
            "spark.openlineage.transport.location": str(events)}


def submit_args(conf: dict[str, str]) -> str:
    """PYSPARK_SUBMIT_ARGS that start a plain `python job.py`'s Spark with `conf`."""
    return " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in conf.items()) + " pyspark-shell"


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of a JSON Lines file (none when it is missing), validated as `strata ingest` does."""
    from store.interop.openlineage import read_events as read  # deferred: the store, on first use

    return [e.body for e in read([path])] if path.exists() else []


# (input namespace, input name, input field) -> {(type, subtype)}
Inputs = dict[tuple[str, str, str], set[tuple[str, str]]]


def _inputs(entries: Iterable[dict[str, Any]], rename: Callable[[str], str]) -> Inputs:
    out: Inputs = {}
    for e in entries:
        key = (e["namespace"], rename(e["name"]), e["field"])
        out.setdefault(key, set()).update((t["type"], t.get("subtype", "")) for t in e.get("transformations", ()))
    return out


def column_lineage(events: Iterable[dict[str, Any]], rename: Callable[[str], str] = str
                   ) -> dict[tuple[str, str], dict[str, Any]]:
    """(output namespace, output name) -> {"fields": {field: Inputs}, "dataset": Inputs}: the column
    lineage facets of every run's last event that carries one, merged over runs (a CTAS and an
    INSERT into the same table: both). `rename` maps dataset names (e.g. output folders)."""
    last: dict[tuple[str, tuple[str, str]], dict[str, Any]] = {}
    for e in events:
        for o in e.get("outputs") or ():
            f = (o.get("facets") or {}).get("columnLineage")
            if f is not None:
                last[(e["run"]["runId"], (o["namespace"], rename(o["name"])))] = f
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for (_, key), f in last.items():
        d = out.setdefault(key, {"fields": {}, "dataset": {}})
        for name, v in (f.get("fields") or {}).items():
            for k, ts in _inputs(v.get("inputFields", ()), rename).items():
                d["fields"].setdefault(name, {}).setdefault(k, set()).update(ts)
        for k, ts in _inputs(f.get("dataset") or (), rename).items():
            d["dataset"].setdefault(k, set()).update(ts)
    return out


def _top(inputs: Inputs) -> set[tuple[str, str, str]]:
    """Input fields cut to their top-level column (the listener does not name nested fields)."""
    return {(ns, n, f.split(".")[0]) for ns, n, f in inputs}


def _types(inputs: Inputs) -> set[tuple[str, str]]:
    return {t for ts in inputs.values() for t in ts}


def show(inputs: Inputs, base: Callable[[str], str] = lambda n: n.rsplit("/", 1)[-1]) -> str:
    return ", ".join(f"{base(n)}.{f} {'/'.join(sorted(s for _, s in ts))}" for (_, n, f), ts in sorted(inputs.items()))


def verdict(a: Inputs | None, b: Inputs | None) -> str:
    """How two fields' inputs compare: same / same inputs, other types / same top-level inputs
    (nesting) / other inputs / only Strata / only listener."""
    if a is None or b is None:
        return "only Strata" if b is None else "only listener"
    if set(a) == set(b):
        return "same" if a == b else "same inputs, other types"
    if _top(a) == _top(b):
        return "same top-level inputs" + ("" if _types(a) == _types(b) else ", other types")
    return "other inputs"


def compare(strata: dict, listener: dict, outputs: dict[tuple[str, str], tuple[str, str]] | None = None
            ) -> list[dict[str, Any]]:
    """One row per (output dataset, field) of either side, plus one per output for the facets'
    dataset-level lists (field `*`). `outputs` maps Strata's output keys to the listener's when
    they are named differently (catalog tables)."""
    rows = []
    outputs = outputs or {}
    keys = sorted(set(strata) | {k for k in listener if k not in outputs.values()})
    for key in keys:
        other = outputs.get(key, key)
        s, lst = strata.get(key), listener.get(other)
        if s is None or lst is None:
            rows.append({"output": key, "field": "", "strata": "", "listener": "",
                         "verdict": "output only in " + ("listener" if s is None else "Strata")})
            continue
        for field in sorted(set(s["fields"]) | set(lst["fields"])):
            a, b = s["fields"].get(field), lst["fields"].get(field)
            v = verdict(a, b)
            if v == "only Strata" and "." in field:
                v += " (nested field)"  # the listener's facet names top-level output columns only
            rows.append({"output": key, "field": field, "strata": show(a or {}), "listener": show(b or {}),
                         "verdict": v})
        rows.append({"output": key, "field": "*", "strata": show(s["dataset"]), "listener": show(lst["dataset"]),
                     "verdict": verdict(s["dataset"], lst["dataset"])})
    return rows
