"""`strata serve`: Strata as a team's lineage service (docs/serve.md).

OpenLineage events in (POST /api/v1/lineage, acknowledged once durable in the event log,
store/eventlog.py), Marquez's lineage API and Strata's own out. The application layer: it imports
store, iql and strata's shared helpers; nothing imports it (strata/cli.py names its command
lazily).

  command.py       the `strata serve` click command
  run.py           the socket, the service, uvicorn, logging, shutdown
  service.py       the store under its writer lock, the event log, the folder, the snapshots read
  fold.py          the commits, in a worker process (off the server's interpreter lock)
  app.py           create_app: the FastAPI application, its error handlers
  http.py          settings, JSON errors, the API-key check, the size limit and access log
  ingest.py        POST /api/v1/lineage: plain ASGI in front of the routers (Receive), its route for OpenAPI
  marquez.py       Marquez's read endpoints; marquez_model.py their data, from the stored events
  strata_api.py    /api/strata/v1: query, lineage, verify, diff, versions
"""
