"""As lenient as Marquez: an OpenLineage event without `schemaURL` is accepted with a warning, by
`validate_event` and by the file ingest (`strata ingest --format openlineage`)."""

from __future__ import annotations

import json

from support.cli import strata

from store.interop.openlineage import validate_event

EVENT = {"eventTime": "2024-01-01T00:00:00Z", "eventType": "COMPLETE", "producer": "https://example.com/p",
         "run": {"runId": "00000000-0000-0000-0000-0000000000aa"}, "job": {"namespace": "ns", "name": "j"},
         "inputs": [], "outputs": [{"namespace": "ns", "name": "out"}]}


def test_validate_event_accepts_a_missing_schema_url_with_a_warning():
    assert validate_event(EVENT, "e.json: event 0") == [
        "OpenLineage event e.json: event 0 has no 'schemaURL'; read as OpenLineage 2-0-2"]
    assert validate_event({**EVENT, "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json"}, "x") == []


def test_the_file_ingest_warns_and_commits(tmp_path):
    path = tmp_path / "marquez-example.json"
    path.write_text(json.dumps(EVENT))
    r = strata(str(tmp_path / "store"), "ingest", "--format", "openlineage", str(path))
    assert r.returncode == 0, r.stderr
    assert f"strata: warning: OpenLineage event {path}: event 0 has no 'schemaURL'" in r.stderr
    assert "committed version 1: 1 new event(s)" in r.stderr
