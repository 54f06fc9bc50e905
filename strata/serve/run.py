"""Run the server: bind the socket, open the service, serve with uvicorn until SIGTERM or SIGINT.

The socket is bound first, so the URL the writer lock names is the real one even with port 0.
uvicorn stops on SIGTERM/SIGINT: it stops accepting, lets in-flight requests finish (their
events are durable when they are answered), then `Service.close` writes what is pending, lets the
commit in progress finish, folds the rest of the log and releases the lock. Logs are JSON lines
on stderr, one per request on the `strata.serve.access` logger.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import sys
import time
import traceback

import uvicorn

from store.errors import UserError
from strata.serve.app import create_app
from strata.serve.http import Settings
from strata.serve.service import ReadOnlyService, Service

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class JsonLines(logging.Formatter):
    """A log record as one JSON line: time, level, logger, message (and traceback, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "access", None)
        if fields is not None:  # an access record (strata/serve/http.py): its fields, the time and level
            entry = {"time": self.formatTime(record), "level": "info", **fields}
        else:
            entry = {"time": self.formatTime(record), "level": record.levelname.lower(), "logger": record.name,
                     "message": record.getMessage()}
        if record.exc_info:
            entry["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(entry)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging's name
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def setup_logging() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    for name in ("strata", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return handler


def bind(host: str, port: int) -> tuple[socket.socket, str]:
    """A listening socket on host:port (port 0: any free one) and the server's URL."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError as e:
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror or e}",
                        hint="pick another --port, or stop what listens there") from e
    sock.listen(2048)
    sock.set_inheritable(True)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{bound}"


def serve(store: str | None, host: str, port: int, api_key: str | None, cors_origins: tuple[str, ...],
          engine: str | None = None, max_body: int | None = None, keep_index: bool = True,
          read_only: bool = False, on_ready=None) -> None:
    """Serve the store until SIGTERM or SIGINT (module docstring); `read_only` (`strata ui`):
    no writer lock, no event log, POST /api/v1/lineage refused; `on_ready(url)` once listening."""
    handler = setup_logging()
    log = logging.getLogger("strata.serve")
    sock, url = bind(host, port)
    service = ReadOnlyService(store, url, engine) if read_only else Service(store, url, engine, keep_index)
    try:
        if host not in LOOPBACK and not api_key:
            log.warning("listening on %s without an API key: anyone who reaches it can write", host)
        settings = Settings(api_key=api_key or None, cors_origins=cors_origins,
                            **({"max_body": max_body} if max_body else {}))
        app = create_app(service, settings)
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                                timeout_graceful_shutdown=30, server_header=False)
        log.info("serving %s (version %d, %d event(s) recovered from the log) on %s",
                 service.root, service.version, service.recovered, url)
        name = "strata ui" if read_only else "strata serve"
        print(f"{name}: {url} (store {service.root})", file=sys.stderr, flush=True)
        if on_ready is not None:
            on_ready(url)
        # uvicorn stops on SIGTERM, then raises it again under the handler it found: a quiet one,
        # so that the service closes below (the default handler would end the process first)
        signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        log.info("stopping" if read_only else "stopping: folding what the log holds")
        service.close()
        sock.close()
        log.info("stopped")
        handler.flush()
