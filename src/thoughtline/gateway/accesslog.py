"""The access log: one JSON line per request, on stderr or appended to a file.

Records say what was asked and how it ended — method, path, status, ``outcome`` ("ok", "refused":
turned down before anything went upstream, "error": an upstream or store failure, "client_closed"),
duration, the worker's process id under ``serve --workers``, tenant id (a digest, never the token),
session, upstream, model, stream, sizes, rehydration hits and misses (and by which key), the
wording rows of rejections learned, the error type. Never a header, a key, a token or message text.
What the server itself reports is a line with an ``event`` field instead. Every line is JSON (the
start and stop banners go to stdout). One ``write`` per line, so concurrent requests never
interleave within a line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

import orjson


class AccessLog:
    def __init__(self, target: str = "", *, tags: Mapping[str, Any] | None = None) -> None:
        self.path = target if target not in ("", "-") else ""
        self._fd: int | None = None
        #: Fields every line carries (e.g. ``worker``: the process id under ``--workers``).
        self._tags = dict(tags or {})

    def _descriptor(self) -> int:
        if not self.path:
            return sys.stderr.fileno()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return self._fd

    def write(self, record: Mapping[str, Any]) -> None:
        line = orjson.dumps({"time": round(time.time(), 3), **self._tags, **record}) + b"\n"
        with contextlib.suppress(OSError):  # a full disk or closed stderr must not fail a request
            os.write(self._descriptor(), line)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _JsonLines(logging.Handler):
    """Log records (warnings and errors) of any logger as access-log JSON lines."""

    def __init__(self, access: AccessLog) -> None:
        super().__init__(logging.WARNING)
        self._access = access

    def emit(self, record: logging.LogRecord) -> None:
        line = {"event": "server", "level": record.levelname.lower(), "logger": record.name,
                "message": record.getMessage()}
        if record.exc_info:
            line["exception"] = logging.Formatter().formatException(record.exc_info)
        self._access.write(line)


def log_as_json(access: AccessLog) -> None:
    """Every warning and error logged in this process (uvicorn's, psycopg_pool's reconnects,
    any library's, Python's warnings) as JSON lines of ``access``: at the root logger, so none
    reaches logging's plain-text fallback on stderr, which is the access log's by default."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _JsonLines)]:
        root.removeHandler(handler)  # one destination per process
    root.addHandler(_JsonLines(access))
    logging.captureWarnings(True)
