"""OpenLineage out: the events of ingested runs, and sending events to an OpenLineage endpoint.

An ingested run is exported as the events the store was given for it (`openlineage_events`),
in order of time: ingesting them again changes nothing, and a consumer sees what the producer
sent. Captured runs are turned into events by capture/storing/to_openlineage.py. `post` sends
events with the `openlineage-python` client's HTTP transport (Marquez: `/api/v1/lineage`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from store.errors import StoreError, UserError
from store.interop.ol_commit import stored_events
from store.interop.openlineage import event_kind, parse_time, validate_event

PRODUCER = "https://pypi.org/project/strata-prov/"


def ingested_runs(st) -> dict[str, list[dict[str, Any]]]:
    """runId -> the run's stored events, in order of time."""
    out: dict[str, list[dict[str, Any]]] = {}
    for text in stored_events(st).values():
        body = json.loads(text)
        if event_kind(body) == "RunEvent":
            out.setdefault(body["run"]["runId"], []).append(body)
    for events in out.values():
        events.sort(key=lambda b: (parse_time(b["eventTime"]), json.dumps(b, sort_keys=True)))
    return out


def run_key(ref: str) -> str:
    """A run named on the command line: its runId, or its element id `run:<runId>`."""
    return ref[len("run:"):] if ref.startswith("run:") else ref


def check_events(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event validated against the OpenLineage schema (an invalid one is Strata's bug)."""
    events = list(events)
    for i, e in enumerate(events):
        validate_event(e, f"exported event {i}")
    return events


def post(events: Iterable[dict[str, Any]], url: str, endpoint: str = "api/v1/lineage",
         api_key: str | None = None) -> int:
    """POST each event to `url` + `endpoint` with openlineage-python's HTTP transport."""
    try:
        # deferred: only this path needs openlineage
        from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport
    except ImportError as e:
        raise UserError("sending OpenLineage events needs the openlineage-python package",
                        hint="pip install 'strata-prov[interop]'") from e
    auth = ApiKeyTokenProvider({"api_key": api_key}) if api_key else None
    config = HttpConfig(url=url, endpoint=endpoint, **({"auth": auth} if auth else {}))
    transport = HttpTransport(config)
    n = 0
    try:
        for e in events:
            transport.emit(e)  # the transport serializes plain dicts as they are
            n += 1
    except Exception as e:  # noqa: BLE001 - requests' and the transport's errors, reported as one
        raise StoreError(f"could not send OpenLineage event {n} to {url}: {e}",
                         hint="check the URL and that the endpoint accepts OpenLineage events") from e
    finally:
        transport.close()
    return n
