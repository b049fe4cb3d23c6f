"""The request log: one JSON line per HTTP request under ``$THOUGHTLINE_HOME/logs/``.

Owns the file and its record shape. Records say where a request went and which reasoning fields
it carried — never message text, keys or headers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

LOG_NAME = "requests.jsonl"


class RequestLog:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOG_NAME

    def write(self, record: Mapping[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        line = orjson.dumps({"time": round(time.time(), 3), **record}) + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)  # one write per record: concurrent writers never interleave
        finally:
            os.close(fd)

    def read(self, *, session: str | None = None) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            for line in handle:
                record = parse_record(line)
                if record is not None and (session is None or record.get("session") == session):
                    yield record


def parse_record(line: bytes) -> dict[str, Any] | None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # a torn last line from a crash is skipped, not fatal
    return record if isinstance(record, dict) else None
