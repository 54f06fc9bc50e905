"""Marquez's read endpoints, in Marquez's JSON shapes (docs/serve.md, "Reading").

Each takes `as_of` (a store version; default: the newest committed) and reads that one version's
events (`Snapshot.marquez`, strata/serve/marquez_model.py), whatever is committed meanwhile.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from strata.serve.http import ApiError
from strata.serve.marquez_model import DEFAULT_DEPTH, MarquezView, parse_node_id

router = APIRouter(prefix="/api/v1", tags=["marquez"])

AsOf = Annotated[int | None, Query(ge=1, description="a store version (default: the newest committed)")]
Limit = Annotated[int, Query(ge=0, le=10_000)]
Offset = Annotated[int, Query(ge=0)]


def view(request: Request, as_of: int | None) -> MarquezView:
    service = request.app.state.service
    return service.marquez(service.snapshot(as_of))


def _page(items: list[Any], limit: int, offset: int) -> list[Any]:
    return items[offset:offset + limit]


def _dataset_key(v: MarquezView, ns: str, name: str) -> tuple[str, str]:
    if (ns, name) not in v.datasets:
        raise ApiError(404, f"dataset {name!r} not found in namespace {ns!r}",
                       f"GET /api/v1/namespaces/{ns}/datasets lists them")
    return ns, name


def _job_key(v: MarquezView, ns: str, name: str) -> tuple[str, str]:
    if (ns, name) not in v.jobs:
        raise ApiError(404, f"job {name!r} not found in namespace {ns!r}",
                       f"GET /api/v1/namespaces/{ns}/jobs lists them")
    return ns, name


def _node(v: MarquezView, node_id: str) -> tuple[str, str, str]:
    node = parse_node_id(node_id, v.exists)
    if node is None:
        raise ApiError(400, f"nodeId {node_id!r} is not 'dataset:<namespace>:<name>' or 'job:<namespace>:<name>'",
                       "e.g. nodeId=dataset:food_delivery:public.orders")
    if not v.exists(node):
        raise ApiError(404, f"node {node_id!r} not found", "GET /api/v1/search?q=NAME finds node ids")
    return node


@router.get("/lineage")
def lineage(request: Request, nodeId: str, as_of: AsOf = None,  # noqa: N803 - Marquez's parameter name
            depth: Annotated[int, Query(ge=0, le=1000)] = DEFAULT_DEPTH) -> dict[str, Any]:
    """The lineage graph around a dataset or job: every node within `depth` jobs, up- and
    downstream, with its edges (Marquez's LineageGraph)."""
    v = view(request, as_of)
    return v.lineage(_node(v, nodeId), depth)


@router.get("/column-lineage")
def column_lineage(request: Request, nodeId: str, as_of: AsOf = None,  # noqa: N803 - Marquez's parameter name
                   depth: Annotated[int, Query(ge=0, le=1000)] = DEFAULT_DEPTH,
                   withDownstream: bool = False) -> dict[str, Any]:  # noqa: N803 - Marquez's parameter name
    """Column lineage (from the column lineage facets) of a dataset's fields
    (`dataset:<ns>:<name>`) or one field (`datasetField:<ns>:<name>:<field>`): the fields they
    derive from within `depth` steps, and with `withDownstream` the fields derived from them."""
    v = view(request, as_of)
    node = _node(v, nodeId)
    if nodeId.startswith("datasetField:"):
        node = ("datasetField", node[1], nodeId[len(f"datasetField:{node[1]}:"):])  # "<name>:<field>"
    return v.column_lineage(node, depth, withDownstream)


@router.get("/namespaces")
def namespaces(request: Request, as_of: AsOf = None, limit: Limit = 100, offset: Offset = 0) -> dict[str, Any]:
    """Every namespace of a job or dataset."""
    v = view(request, as_of)
    items = [{**n, "ownerName": None, "description": None, "isHidden": False}
             for _, n in sorted(v.namespaces.items())]
    return {"namespaces": _page(items, limit, offset), "totalCount": len(items)}


@router.get("/namespaces/{namespace}")
def namespace(request: Request, namespace: str, as_of: AsOf = None) -> dict[str, Any]:
    v = view(request, as_of)
    if namespace not in v.namespaces:
        raise ApiError(404, f"namespace {namespace!r} not found", "GET /api/v1/namespaces lists them")
    return {**v.namespaces[namespace], "ownerName": None, "description": None, "isHidden": False}


@router.get("/namespaces/{namespace}/datasets")
def datasets(request: Request, namespace: str, as_of: AsOf = None, limit: Limit = 100,
             offset: Offset = 0) -> dict[str, Any]:
    v = view(request, as_of)
    items = [v.dataset_json(k) for k in sorted(v.datasets) if k[0] == namespace]
    return {"datasets": _page(items, limit, offset), "totalCount": len(items)}


@router.get("/namespaces/{namespace}/datasets/{dataset}")
def dataset(request: Request, namespace: str, dataset: str, as_of: AsOf = None) -> dict[str, Any]:
    """A dataset with its fields (its newest schema facet) and facets."""
    v = view(request, as_of)
    return v.dataset_json(_dataset_key(v, namespace, dataset))


@router.get("/namespaces/{namespace}/datasets/{dataset}/versions")
def dataset_versions(request: Request, namespace: str, dataset: str, as_of: AsOf = None, limit: Limit = 100,
                     offset: Offset = 0) -> dict[str, Any]:
    """The dataset's versions, newest first: one per completed run that wrote it."""
    v = view(request, as_of)
    items = v.dataset_versions_json(_dataset_key(v, namespace, dataset))
    return {"versions": _page(items, limit, offset), "totalCount": len(items)}


@router.get("/namespaces/{namespace}/datasets/{dataset}/versions/{version}")
def dataset_version(request: Request, namespace: str, dataset: str, version: str,
                    as_of: AsOf = None) -> dict[str, Any]:
    """One version of the dataset, by the id its versions list gives (`version`)."""
    v = view(request, as_of)
    for item in v.dataset_versions_json(_dataset_key(v, namespace, dataset)):
        if item["version"] == version:
            return item
    raise ApiError(404, f"dataset {namespace}:{dataset} has no version {version!r}",
                   f"GET /api/v1/namespaces/{namespace}/datasets/{dataset}/versions lists them")


@router.get("/namespaces/{namespace}/jobs")
def jobs(request: Request, namespace: str, as_of: AsOf = None, limit: Limit = 100,
         offset: Offset = 0) -> dict[str, Any]:
    v = view(request, as_of)
    items = [v.job_json(k) for k in sorted(v.jobs) if k[0] == namespace]
    return {"jobs": _page(items, limit, offset), "totalCount": len(items)}


@router.get("/namespaces/{namespace}/jobs/{job}")
def job(request: Request, namespace: str, job: str, as_of: AsOf = None) -> dict[str, Any]:
    v = view(request, as_of)
    return v.job_json(_job_key(v, namespace, job))


@router.get("/namespaces/{namespace}/jobs/{job}/runs")
def job_runs(request: Request, namespace: str, job: str, as_of: AsOf = None, limit: Limit = 100,
             offset: Offset = 0) -> dict[str, Any]:
    """The job's runs, newest first, with their facets."""
    v = view(request, as_of)
    runs = [v.run_json(r) for r in reversed(v.jobs[_job_key(v, namespace, job)].runs)]
    return {"runs": _page(runs, limit, offset), "totalCount": len(runs)}


@router.get("/jobs/runs/{run_id}")
@router.get("/runs/{run_id}", include_in_schema=False)
def run(request: Request, run_id: str, as_of: AsOf = None) -> dict[str, Any]:
    """One run with its facets (Marquez's path is /jobs/runs/{id})."""
    v = view(request, as_of)
    if run_id not in v.runs:
        raise ApiError(404, f"run {run_id!r} not found", "GET /api/v1/namespaces/{ns}/jobs/{job}/runs lists them")
    return v.run_json(run_id)


@router.get("/search")
def search(request: Request, q: str, as_of: AsOf = None,
           filter: Annotated[str | None, Query(pattern="^(DATASET|JOB|dataset|job)$")] = None,  # noqa: A002 - Marquez's name
           limit: Annotated[int, Query(ge=0, le=10_000)] = 10) -> dict[str, Any]:
    """Datasets and jobs whose name contains `q`; `filter` DATASET or JOB."""
    results = view(request, as_of).search(q, filter.upper() if filter else None)
    return {"totalCount": len(results), "results": results[:limit]}


@router.get("/events/lineage")
def events(request: Request, as_of: AsOf = None, limit: Limit = 100, offset: Offset = 0) -> dict[str, Any]:
    """The stored OpenLineage events, newest first."""
    v = view(request, as_of)
    return {"events": v.events_page(limit, offset), "totalCount": v.events_count}
