"""Run any ASGI app on a loopback port in a background thread (every emulator uses this).

Owns the server lifecycle: bind 127.0.0.1 (an OS-chosen port unless one is given), start uvicorn in
a daemon thread, wait until it accepts connections, and stop it (in-flight streams get about a
second). Knows nothing about what the app emulates.

    with LoopbackServer(app, name="anthropic-emulator") as server:
        httpx.post(f"http://127.0.0.1:{server.port}/v1/messages", ...)
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import uvicorn

HOST = "127.0.0.1"
_START_TIMEOUT = 10.0


class LoopbackServer:
    """One ASGI app served on loopback until ``stop``."""

    def __init__(self, app: Any, *, port: int = 0, name: str = "emulator") -> None:
        self._app = app
        self._requested_port = port
        self._name = name
        self._port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"the {self._name} is not running; call start() first")
        return self._port

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://{HOST}:{self.port}"

    def start(self) -> Self:
        """Start serving; returns once the port accepts connections."""
        if self._thread is not None:
            return self
        # An explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted connections; without
        # it every response waits out a delayed ACK (about 40 ms per request).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, self._requested_port))
        config = uvicorn.Config(self._app, log_config=None, lifespan="off",
                                timeout_graceful_shutdown=1)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                  name=self._name, daemon=True)
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not server.started:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"the {self._name} did not start")
        self._port = sock.getsockname()[1]
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server thread."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(_START_TIMEOUT)
        if thread.is_alive():
            server.force_exit = True
            thread.join(_START_TIMEOUT)
        self._server = self._thread = None
        self._port = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
