"""Running the gateway: bind, serve with uvicorn, shut down gracefully.

Owns the listening socket (bound before uvicorn starts, so ``--port 0`` works and the real port is
announced; an address in use is a usage error, not a traceback), the start and stop lines on
stdout (a warning per upstream whose key variable is unset, then ``thoughtline gateway listening
on http://HOST:PORT``), uvicorn's own warnings and errors as JSON lines of the access log (so
stderr, the access log's default, carries JSON lines only and a consumer never skips a banner),
and graceful shutdown: on SIGTERM or SIGINT uvicorn stops accepting connections and lets in-flight
requests (streams included) finish for up to ``GRACE_SECONDS`` before closing the store.
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import uvicorn

from thoughtline.errors import UsageError
from thoughtline.gateway.accesslog import AccessLog
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import GatewayConfig, check_exposure
from thoughtline.gateway.upstreams import missing_keys
from thoughtline.requestlog import RequestLog
from thoughtline.termsafe import safe_line

GRACE_SECONDS = 30


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, announce: str) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self._announce, file=sys.stdout, flush=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        print("thoughtline gateway stopped (in-flight requests finished)", file=sys.stdout,
              flush=True)
        # uvicorn re-raises SIGTERM/SIGINT after a graceful shutdown, which would make a clean
        # stop exit as "killed by signal"; a finished shutdown is a normal exit here.
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()


class _JsonLines(logging.Handler):
    """uvicorn's log records (warnings and errors) as access-log JSON lines."""

    def __init__(self, access: AccessLog) -> None:
        super().__init__(logging.WARNING)
        self._access = access

    def emit(self, record: logging.LogRecord) -> None:
        line = {"event": "server", "level": record.levelname.lower(),
                "message": record.getMessage()}
        if record.exc_info:
            line["exception"] = logging.Formatter().formatException(record.exc_info)
        self._access.write(line)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # An explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted connections.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (is another "
                         "process using that port? pick another with --port, or [server] port "
                         "in gateway.toml)") from None
    sock.set_inheritable(True)
    return sock


def warn_missing_keys(config: GatewayConfig, environ: Mapping[str, str] | None = None) -> None:
    """One line per upstream whose key variable is unset: its requests would go without a key,
    and every one would fail (as a 502 naming the variable). On stdout with the start banner:
    stderr is the access log's and carries JSON lines only."""
    for name, variable in missing_keys(config, environ):
        print(safe_line(f"warning: upstream {name!r}: {variable} is not set, so requests to it "
                        "are sent without a key"), file=sys.stdout, flush=True)


def serve(config: GatewayConfig, home: Path) -> None:
    """Serve until SIGTERM/SIGINT (blocking)."""
    from thoughtline.store import open_store

    check_exposure(config)
    warn_missing_keys(config)
    sock = bind(config.host, config.port)  # a port in use is said before the store is opened
    try:
        # WAL without an fsync per commit: every answered turn survives SIGKILL of the gateway.
        store = open_store(config.store or None, home, crash_durable_only=True)
    except BaseException:
        sock.close()
        raise
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    gateway = Gateway(config, store, request_log=RequestLog(home / "logs"))
    app = create_app(gateway)
    uvicorn_log = logging.getLogger("uvicorn")
    uvicorn_log.addHandler(_JsonLines(gateway.access))
    uvicorn_log.propagate = False  # never to the root logger's plain-text stderr
    uv: Any = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on",
                             timeout_graceful_shutdown=GRACE_SECONDS, server_header=False)
    server = _Server(uv, f"thoughtline gateway listening on http://{shown}:{port}")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
