"""The lineage web UI (docs/ui.md): the page at `/`, its built assets under `/ui/`
(strata/serve/static/, built from ui/ by `make ui`), and the read endpoints it calls under
/api/strata/v1 (search, graph, node, rows, trace), each reading one committed version (`as_of`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

import iql
from strata.serve.http import ApiError
from strata.serve.service import Snapshot
from strata.serve.ui_items import ItemView, is_item_node
from strata.serve.ui_model import UiView

STATIC = Path(__file__).resolve().parent / "static"

router = APIRouter(prefix="/api/strata/v1", tags=["ui"])
page = APIRouter(include_in_schema=False)

AsOf = Annotated[int | None, Query(ge=1, description="a store version (default: the newest committed)")]
Node = Annotated[str, Query(min_length=1, max_length=4096,
                            description="dataset:<ns>:<name>, job:<ns>:<name>, datasetField:<ns>:<name>:<field>, "
                                        "run:<runId>, element:<id> (an item of the store) or "
                                        'process:["<op>","<id>"] (the process that derived an item)')]


def _view(request: Request, as_of: int | None) -> tuple[Snapshot, UiView]:
    service = request.app.state.service
    snap = service.snapshot(as_of)
    with snap.lock:
        return snap, UiView.of(snap, service)


def _key(ui: UiView, node: str):
    key = ui.key(node)
    if key is None:
        raise ApiError(404, f"node {node!r} not found", "GET /api/strata/v1/search?q=NAME finds node ids")
    return key


@router.get("/search")
def search(request: Request, q: Annotated[str, Query(max_length=1000)], as_of: AsOf = None,
           limit: Annotated[int, Query(ge=0, le=1000)] = 20) -> dict[str, Any]:
    """Datasets, jobs, runs, fields and captured runs whose name contains `q` (exact and prefix
    matches first; `NAMESPACE:text` searches one namespace), then the store's items (elements,
    vertices) whose id starts with `q`."""
    snap, ui = _view(request, as_of)
    total, results = ui.search(q, limit)
    with snap.lock:
        more, items = ItemView.of(snap).search(q, max(limit - len(results), 0))
    return {"totalCount": total + more, "results": results + items, "version": snap.version}


def _items(request: Request, as_of: int | None) -> tuple[Snapshot, ItemView]:
    snap = request.app.state.service.snapshot(as_of)
    return snap, ItemView.of(snap)


def _unknown(node: str) -> ApiError:
    return ApiError(404, f"node {node!r} not found", "GET /api/strata/v1/search?q=PREFIX finds item ids")


@router.get("/graph")
def graph(request: Request, node: Node, as_of: AsOf = None,
          level: Literal["dataset", "column"] = "dataset",
          depth: Annotated[int, Query(ge=0, le=50)] = 1,
          direction: Literal["up", "down", "both"] = "both",
          limit: Annotated[int, Query(ge=1, le=5000)] = 25,
          offset: Annotated[int, Query(ge=0)] = 0) -> dict[str, Any]:
    """The neighbourhood of a node the page draws: nodes (with kind, parent, distance), edges
    (with kind: io, direct, indirect) and, past `limit` neighbours of a node, what was left out
    (`more`: node, direction, count, offset of the next page). An item's (`element:`) or a
    process's graph is the same shape at every level (`level: "item"`)."""
    if is_item_node(node):
        snap, items = _items(request, as_of)
        with snap.lock:
            out = items.graph(node, depth, direction, limit, offset)
        if out is None:
            raise _unknown(node)
        return {**out, "version": snap.version}
    snap, ui = _view(request, as_of)
    key = _key(ui, node)
    if level == "column":
        out = ui.column_graph(key, depth, direction, limit, offset)
    else:
        out = ui.dataset_graph(key, depth, direction, limit, offset)
    return {**out, "version": snap.version}


@router.get("/node")
def node_details(request: Request, node: Node, as_of: AsOf = None) -> dict[str, Any]:
    """A node's details: a dataset's fields, facets and versions; a job's runs; a run's facets;
    a field's inputs; the captured runs behind a dataset; an item's table, component, direct
    sources and consumers; a process's output and sources."""
    if is_item_node(node):
        snap, items = _items(request, as_of)
        with snap.lock:
            out = items.details(node)
        if out is None:
            raise _unknown(node)
        return {**out, "version": snap.version}
    snap, ui = _view(request, as_of)
    return {**ui.details(_key(ui, node)), "version": snap.version}


@router.get("/rows")
def rows(request: Request, run: Annotated[str, Query(min_length=1, max_length=1000)], as_of: AsOf = None,
         limit: Annotated[int, Query(ge=1, le=10_000)] = 100) -> dict[str, Any]:
    """A captured run's output items with their values (`strata diff`'s reading of them)."""
    from capture.storing.runs import output_values, read_head  # deferred: they load numpy

    snap = request.app.state.service.snapshot(as_of)
    with snap.lock:
        read_head(snap.store, run)  # an unknown run: 400 naming the known ones
        values = output_values(snap.store, run) or {}
    items = [{"item": k, "values": v} for k, v in sorted(values.items())]
    return {"run": run, "totalCount": len(items), "items": items[:limit], "version": snap.version}


@router.get("/trace")
def trace(request: Request, pattern: Annotated[str, Query(min_length=1, max_length=10_000)],
          run: Annotated[str | None, Query(max_length=1000)] = None, as_of: AsOf = None,
          limit: Annotated[int, Query(ge=1, le=10_000)] = 1) -> dict[str, Any]:
    """The input items behind the first `limit` output items matching `pattern`, each node with
    its `source` and `value`: `strata trace PATTERN --format json`'s rows as objects."""
    from capture.tracing import parse_pattern, trace_rows  # deferred: they load lark, numpy
    from capture.tracing import trace as backtrace  # deferred: as above

    snap = request.app.state.service.snapshot(as_of)
    with snap.lock:
        bt = backtrace(snap.store, run, parse_pattern(pattern), limit)
        found = trace_rows(snap.store, bt, where=True, values=True)
    names = [n for n, _ in iql.TRACE_COLUMNS]
    return {"run": bt.run, "rows": [dict(zip(names, r, strict=True)) for r in found], "version": snap.version}


@page.get("/")
def index() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html")


def mount(app: Any) -> None:
    """The page and its assets on the application."""
    app.include_router(page)
    app.mount("/ui", StaticFiles(directory=STATIC), name="ui")
