"""A loopback TCP proxy in front of the test PostgreSQL server that a test can take down.

The shared server itself must never be restarted (other runs use it); from a store's point of
view, a proxy that drops every connection and refuses new ones *is* the server going away, and
letting connections through again is it coming back.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit


class PgProxy:
    """Forwards 127.0.0.1:<port> to the server of ``url``; ``down()`` / ``up()`` toggle it."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._url = parts
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._refusing = False
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="pg-proxy").start()

    def url(self) -> str:
        """The upstream URL with this proxy's address instead of the server's."""
        user = self._url.netloc.rsplit("@", 1)[0] + "@" if "@" in self._url.netloc else ""
        return urlunsplit(self._url._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def down(self) -> None:
        """Drop every connection now and refuse new ones (as a stopped server would)."""
        with self._lock:
            self._refusing = True
            dropped, self._open = self._open, []
        for sock in dropped:
            _close(sock)

    def up(self) -> None:
        with self._lock:
            self._refusing = False

    def close(self) -> None:
        self._closed = True
        self.down()
        _close(self._listener)

    def __enter__(self) -> PgProxy:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refusing = self._refusing
            if refusing:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._open.extend((client, server))
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(src, dst), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        _close(src)
        _close(dst)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
