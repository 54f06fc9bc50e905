"""Exported OpenLineage events checked against OpenLineage's published JSON schemas.

The schemas are test data (tests/fixtures/openlineage: the spec's OpenLineage.json and the
schemas of the facets Strata exports, Apache-2.0, copied unchanged). `check_published(event)`
validates the event against the definition its `schemaURL` names, and every facet of an
OpenLineage facet schema (`_schemaURL` under https://openlineage.io/spec/facets/) against that
schema, under the key the schema defines it for (`schema`, `symlinks`, `columnLineage`). A facet
whose schema is not shipped fails the check: copy its file from the spec (README there).
Strata's own facets (`strata_run`) are checked as the event schema checks any facet.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from support.paths import FIXTURES

SPEC = FIXTURES / "openlineage"
FACETS = "https://openlineage.io/spec/facets/"


@cache
def _schemas() -> dict[str, dict[str, Any]]:
    """`$id` -> schema of every shipped file."""
    files = [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json"))]
    return {s["$id"]: s for s in (json.loads(f.read_text()) for f in files)}


@cache
def _registry() -> Registry:
    return Registry().with_resources((uri, Resource.from_contents(s)) for uri, s in _schemas().items())


def _errors(instance: Any, ref: str) -> list[str]:
    validator = Draft202012Validator({"$ref": ref}, registry=_registry(),
                                     format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(instance)]


def _facets(event: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(where, key, facet) of every facet of the event: run, job, inputs, outputs."""
    found = [("run", k, f) for k, f in (event.get("run", {}).get("facets") or {}).items()]
    found += [("job", k, f) for k, f in (event.get("job", {}).get("facets") or {}).items()]
    for side in ("inputs", "outputs"):
        for i, d in enumerate(event.get(side) or ()):
            found += [(f"{side}/{i}", k, f) for k, f in (d.get("facets") or {}).items()]
    return found


def published_errors(event: dict[str, Any]) -> list[str]:
    """What makes `event` invalid by OpenLineage's published schemas (empty: valid)."""
    errors = _errors(event, event.get("schemaURL", ""))
    for where, key, facet in _facets(event):
        url = facet.get("_schemaURL", "")
        if not url.startswith(FACETS):
            continue
        document = url.split("#")[0]
        if document not in _schemas():
            errors.append(f"{where}/{key}: no published schema shipped for {url} (tests/fixtures/openlineage)")
            continue
        defines = _schemas()[document].get("properties", {})
        if key not in defines:
            errors.append(f"{where}/{key}: {document} defines the facet under {sorted(defines)}, not {key!r}")
        errors += [f"{where}/{key}/{e}" for e in _errors({key: facet}, document)]
    return errors


def check_published(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events`, each asserted valid by OpenLineage's published schemas."""
    for i, event in enumerate(events):
        errors = published_errors(event)
        assert not errors, f"event {i} ({event.get('eventType')}) is not valid OpenLineage:\n" + "\n".join(errors)
    return events
