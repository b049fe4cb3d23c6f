"""Running the gateway: bind, serve with uvicorn, shut down gracefully.

The server stack is uvicorn on uvloop with the httptools parser (dependencies: uvicorn picks
both when installed, else asyncio and h11); chosen by the per-request profile in
``docs/benchmarks.md`` ("Profile"), which also has the numbers for the alternatives.

Owns the listening socket (bound before uvicorn starts, so ``--port 0`` works and the real port is
announced; an address in use is a usage error, not a traceback), the start and stop lines on
stdout (a warning per upstream whose key variable is unset, then ``thoughtline gateway listening
on http://HOST:PORT``), every logged warning and error (uvicorn's, the store pool's, any
library's) as JSON lines of the access log (so stderr, the access log's default, carries JSON
lines only and a consumer never skips a banner),
and graceful shutdown: on SIGTERM or SIGINT uvicorn stops accepting connections and lets in-flight
requests (streams included) finish for up to ``GRACE_SECONDS`` before closing the store.

With ``workers`` > 1, uvicorn's supervisor spawns that many processes serving the one socket,
each with its own store connection (SQLite in WAL, or a PostgreSQL pool: the store is what they
share, so any worker answers any turn of any conversation), and replaces a worker that dies
(clearing its live gauges, so a worker killed mid-request leaves no request "in flight");
Prometheus values go to a temporary directory this process owns and removes on exit. A worker
whose supervisor dies stops as on SIGTERM, so no orphan keeps serving the port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import uvicorn

from thoughtline.errors import UsageError
from thoughtline.gateway.accesslog import AccessLog, log_as_json
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import GatewayConfig, check_exposure
from thoughtline.gateway.metrics import MULTIPROC_ENV, worker_died
from thoughtline.gateway.storage import open_gateway_store
from thoughtline.gateway.upstreams import missing_keys
from thoughtline.requestlog import RequestLog
from thoughtline.termsafe import safe_line

GRACE_SECONDS = 30
#: How often a worker checks that its supervisor is still its parent.
ORPHAN_POLL_S = 0.5


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


class _WorkerApp:
    """The app factory one worker process calls (picklable: it crosses to the spawned worker).

    Each worker opens the store itself (SQLite in WAL, or its own PostgreSQL pool) and serves
    the shared socket; its access-log lines say which worker (``worker``: its process id). It
    watches for the death of ``supervisor`` (a process id).
    """

    def __init__(self, config: GatewayConfig, home: Path, *, supervisor: int) -> None:
        self.config, self.home, self.supervisor = config, home, supervisor

    def __call__(self) -> Any:
        _stop_when_orphaned(self.supervisor)
        access = AccessLog(self.config.access_log, tags={"worker": os.getpid()})
        log_as_json(access)
        store = open_gateway_store(self.config.store, self.home)
        gateway = Gateway(self.config, store, request_log=RequestLog(self.home / "logs"),
                          access_log=access)
        return create_app(gateway)


def _stop_when_orphaned(supervisor: int) -> None:
    """SIGTERM to this worker once its parent is no longer ``supervisor`` (it died and the
    worker was re-parented): in-flight requests finish, nothing new is accepted.

    A polled parent id rather than Linux's ``PR_SET_PDEATHSIG``: it needs no ctypes, works on
    every platform uvicorn's supervisor runs on (macOS included), and cannot miss a supervisor
    that died before the worker got this far; the cost is up to ``ORPHAN_POLL_S`` of delay.
    """
    def watch() -> None:
        while os.getppid() == supervisor:
            time.sleep(ORPHAN_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="thoughtline-orphan-watch", daemon=True).start()


def serve(config: GatewayConfig, home: Path, *, workers: int = 1) -> None:
    """Serve until SIGTERM/SIGINT (blocking), in ``workers`` processes sharing one socket."""
    check_exposure(config)
    warn_missing_keys(config)
    access = AccessLog(config.access_log)
    log_as_json(access)
    sock = bind(config.host, config.port)  # a port in use is said before the store is opened
    try:
        # Opened (created, migrated) here once, so workers never migrate it concurrently.
        store = open_gateway_store(config.store, home)
    except BaseException:
        sock.close()
        raise
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    announce = f"thoughtline gateway listening on http://{shown}:{port}"
    try:
        if workers > 1:
            store.close()
            _serve_workers(config, home, sock, workers, announce)
            return
        gateway = Gateway(config, store, request_log=RequestLog(home / "logs"),
                          access_log=access)
        uv: Any = uvicorn.Config(create_app(gateway), log_config=None, access_log=False,
                                 lifespan="on", timeout_graceful_shutdown=GRACE_SECONDS,
                                 server_header=False)
        _Server(uv, announce).run(sockets=[sock])
    finally:
        sock.close()


def _serve_workers(config: GatewayConfig, home: Path, sock: socket.socket, workers: int,
                   announce: str) -> None:
    """uvicorn's supervisor over ``workers`` spawned processes; the Prometheus values of all of
    them in a temporary directory of this process's (removed when it stops)."""
    from uvicorn.supervisors import Multiprocess

    metrics_dir = tempfile.mkdtemp(prefix="thoughtline-metrics-")
    previous = os.environ.get(MULTIPROC_ENV)
    os.environ[MULTIPROC_ENV] = metrics_dir  # inherited by the workers
    uv: Any = uvicorn.Config(_WorkerApp(config, home, supervisor=os.getpid()), factory=True,
                             log_config=None, access_log=False, lifespan="on",
                             timeout_graceful_shutdown=GRACE_SECONDS, server_header=False,
                             workers=workers)
    try:
        supervisor = Multiprocess(uv, sockets=[sock])
        supervisor.init_processes()
        for process in supervisor.processes:  # announced once every worker serves
            process.wait_until_ready(uv.timeout_worker_healthcheck, supervisor.should_exit)
        print(f"{announce} ({workers} workers)", file=sys.stdout, flush=True)
        while not supervisor.should_exit.wait(0.5):
            running = {process.pid for process in supervisor.processes}
            supervisor.handle_signals()
            supervisor.keep_subprocess_alive()
            for pid in running - {process.pid for process in supervisor.processes}:
                if pid is not None:  # reaped (died, or retired): its live gauges are cleared
                    worker_died(pid, metrics_dir)
        supervisor.terminate_all()
        supervisor.join_all()
        print("thoughtline gateway stopped (in-flight requests finished)", file=sys.stdout,
              flush=True)
    finally:
        if previous is None:
            os.environ.pop(MULTIPROC_ENV, None)
        else:
            os.environ[MULTIPROC_ENV] = previous
        shutil.rmtree(metrics_dir, ignore_errors=True)
