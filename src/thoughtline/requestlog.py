"""The request log: one JSON line per HTTP request under ``$THOUGHTLINE_HOME/logs/``.

Owns the files and the record shape. Records say where a request went and which reasoning fields
it carried — never message text, keys or headers. The log rotates by size: when a record would
take ``requests.jsonl`` past ``max_bytes`` it becomes ``requests.jsonl.1`` (older ones shift up to
``.{keep}``; the oldest is dropped). Reading goes oldest first across the rotated files, skips
(and counts) lines that are not a well-formed record, and ``Follower`` keeps reading across a
rotation without losing what was written just before it.

Logging never fails a request: a record that cannot be written (a full disk, an unwritable
directory) is dropped, and the failure is reported once through ``on_error`` (by default one line
on stderr) until a write succeeds again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

LOG_NAME = "requests.jsonl"
LOCK_NAME = ".requests.lock"
MAX_BYTES = 8 * 1024 * 1024  # ~20,000 records
KEEP = 3

# Types of the fields readers rely on (a record may carry more; those are passed through).
_NUMBER = (int, float)
_FIELDS: Mapping[str, tuple[type, ...]] = {
    "time": _NUMBER, "session": (str,), "route": (str,), "api": (str,), "provider": (str,),
    "host": (str,), "model": (str,), "outcome": (str,), "status": (int, type(None)),
    "attempt": (int,), "stream": (bool,), "duration_ms": _NUMBER, "retries": (int,),
    "carriers": (dict,), "native": (dict,), "pads": (int,), "body_extras": (list,),
    "verdicts": (list,), "assistant_turns": (int,), "prompt_tokens": (int,), "purpose": (str,),
    "usage": (dict,), "response_model": (str,), "finish": (str,),
}


class RecordWriter(Protocol):
    """Where request records go: a ``RequestLog``, or a stand-in that also counts them."""

    def write(self, record: Mapping[str, Any]) -> None: ...


class RequestLog:
    def __init__(self, directory: Path, *, max_bytes: int = MAX_BYTES, keep: int = KEEP,
                 on_error: Callable[[str], None] | None = None) -> None:
        self.directory = directory
        self.path = directory / LOG_NAME
        self.max_bytes = max_bytes
        self.keep = keep
        #: Lines skipped by the last ``read`` (torn, not JSON, or fields of the wrong type).
        self.skipped = 0
        #: Told (once per run of failures) why a record could not be written.
        self.on_error = on_error
        self._failing = False

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record; a failure to write it is reported, never raised."""
        line = orjson.dumps({"time": round(time.time(), 3), **record}) + b"\n"
        try:
            self._append(line)
        except OSError as exc:
            if not self._failing:
                self._failing = True
                self._report(f"cannot write the request log {self.path}: {exc}; requests "
                             "are answered as usual, their records are dropped until it "
                             "can be written again")
            return
        self._failing = False

    def _report(self, text: str) -> None:
        if self.on_error is not None:
            self.on_error(text)
            return
        from thoughtline.termsafe import safe_line

        with contextlib.suppress(OSError, ValueError):  # stderr closed or gone: nowhere to say it
            print(f"thoughtline: {safe_line(text)}", file=sys.stderr, flush=True)

    def _append(self, line: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = os.open(self.directory / LOCK_NAME, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            # Writers in other processes rotate too: one at a time, so none renames a file
            # another has just started.
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._rotate_if_full(len(line))
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)  # one write per record: concurrent writers never interleave
            finally:
                os.close(fd)
        finally:
            os.close(lock)  # releases the lock

    def _rotate_if_full(self, adding: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0 or size + adding <= self.max_bytes:
            return
        for number in range(self.keep, 0, -1):
            older = self.rotated(number)
            if number == self.keep:
                older.unlink(missing_ok=True)
            elif older.exists():
                older.rename(self.rotated(number + 1))
        if self.keep:
            self.path.rename(self.rotated(1))
        else:
            self.path.unlink()

    def rotated(self, number: int) -> Path:
        return self.path.with_name(f"{LOG_NAME}.{number}")

    def files(self) -> list[Path]:
        """The log files that exist, oldest first."""
        candidates = [self.rotated(n) for n in range(self.keep, 0, -1)] + [self.path]
        return [p for p in candidates if p.exists()]

    def read(self, *, session: str | None = None) -> Iterator[dict[str, Any]]:
        self.skipped = 0
        for path in self.files():
            try:
                handle = path.open("rb")
            except FileNotFoundError:  # rotated away meanwhile
                continue
            with handle:
                for line in handle:
                    if not line.strip():
                        continue
                    record = parse_record(line)
                    if record is None:
                        self.skipped += 1
                    elif session is None or record.get("session") == session:
                        yield record


def parse_record(line: bytes) -> dict[str, Any] | None:
    """A record, or None for a line that is not one: a torn last line from a crash, text that
    is not JSON, or known fields of the wrong type (a hand-edited or foreign file)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    for name, types in _FIELDS.items():
        if name in record and not isinstance(record[name], types):
            return None
    for name in ("carriers", "native"):
        counts = record.get(name) or {}
        if not all(isinstance(v, int) for v in counts.values()):
            return None
    if not all(isinstance(v, str) for v in record.get("body_extras") or ()):
        return None
    if not all(isinstance(v, dict) for v in record.get("verdicts") or ()):
        return None
    return record


class Follower:
    """Reads records as they are appended, across rotations and truncation.

    The file being read stays open: when it is renamed away (rotation), whatever was written to
    it before the rename is still read from it, then the new ``requests.jsonl`` is read from its
    start. ``poll`` returns what arrived since the last call; it never waits.
    """

    def __init__(self, log: RequestLog, *, from_end: bool = True) -> None:
        self.log = log
        self.skipped = 0
        self._handle: IO[bytes] | None = None
        self._pending = b""
        self._open(seek_end=from_end)

    def _open(self, *, seek_end: bool) -> None:
        try:
            self._handle = self.log.path.open("rb")
        except FileNotFoundError:
            self._handle = None
            return
        if seek_end:
            self._handle.seek(0, os.SEEK_END)

    def poll(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        if self._handle is None:
            self._open(seek_end=False)
            if self._handle is None:
                return records
        self._restart_if_truncated()
        records += self._drain()
        if self._replaced():
            records += self._drain(final=True)
            mine = os.fstat(self._handle.fileno())
            self._handle.close()
            # Several rotations may have happened since the last poll: read every rotated file
            # newer than the one just finished, whole, then the current file from its start.
            for path in self._newer_than(mine):
                records += self._read_whole(path)
            self._open(seek_end=False)
            if self._handle is not None:
                records += self._drain()
        return records

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def _restart_if_truncated(self) -> None:
        assert self._handle is not None
        try:
            now = os.stat(self.log.path)
        except FileNotFoundError:
            return
        mine = os.fstat(self._handle.fileno())
        same = (now.st_ino, now.st_dev) == (mine.st_ino, mine.st_dev)
        if same and now.st_size < self._handle.tell():  # truncated in place: start over
            self._handle.seek(0)
            self._pending = b""

    def _replaced(self) -> bool:
        assert self._handle is not None
        try:
            now = os.stat(self.log.path)
        except FileNotFoundError:
            return False  # rotated, the new file not written yet: keep the old one for now
        mine = os.fstat(self._handle.fileno())
        return (now.st_ino, now.st_dev) != (mine.st_ino, mine.st_dev)

    def _newer_than(self, mine: os.stat_result) -> list[Path]:
        """Rotated files written after the file ``mine`` (oldest first)."""
        rotated = [self.log.rotated(n) for n in range(self.log.keep, 0, -1)]
        newer: list[Path] = []
        for path in rotated:
            try:
                info = os.stat(path)
            except FileNotFoundError:
                continue
            if (info.st_ino, info.st_dev) == (mine.st_ino, mine.st_dev):
                newer = []  # everything before (older than) this one was already read
            else:
                newer.append(path)
        return newer

    def _read_whole(self, path: Path) -> list[dict[str, Any]]:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        self._pending = data
        return self._parse(final=True)

    def _drain(self, *, final: bool = False) -> list[dict[str, Any]]:
        assert self._handle is not None
        self._pending += self._handle.read()
        return self._parse(final=final)

    def _parse(self, *, final: bool) -> list[dict[str, Any]]:
        *complete, self._pending = self._pending.split(b"\n")
        if final and self._pending:
            complete.append(self._pending)  # a torn last line of a rotated file stays torn
            self._pending = b""
        out = []
        for line in complete:
            if not line.strip():
                continue
            record = parse_record(line)
            if record is None:
                self.skipped += 1
            else:
                out.append(record)
        return out
