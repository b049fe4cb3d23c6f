"""The SQLite backend: ``state.db`` under the thoughtline home.

Owns the file and the connection: owner-only permissions (SQLite gives the ``-wal``/``-shm`` files
the database file's mode), WAL journal, ``synchronous=FULL`` (``NORMAL`` on request: a WAL commit
then survives a process crash or SIGKILL but not a power loss), a busy timeout so the CLI and a
gateway can share the file, foreign keys, memory-mapped reads, and one connection shared by
threads behind a lock.
Writers take the write lock up front (``BEGIN IMMEDIATE``) so two processes never deadlock
upgrading a read. sqlite3 errors become ``StoreError`` here and nowhere else.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from thoughtline.errors import StoreError
from thoughtline.store.db import SQLITE, Row
from thoughtline.store.engine import SqlStore

BUSY_TIMEOUT_MS = 5000
_PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    # Pages read through a memory map, not copied into each connection's page cache first: a
    # resume reads every stored form of a session once, in a new connection (measured: the
    # 4,000 forms of a 1,000-round Gemini session 17.0 -> 9.6 ms). sqlite.org/mmap.html: an I/O
    # error on the file then ends the process instead of failing the query (the page cache's
    # behaviour, and WAL's durability, are unchanged; the file is local and private).
    "PRAGMA mmap_size = 268435456",
)
_SYNCHRONOUS = ("FULL", "NORMAL")


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self._conn.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._conn.execute(sql, params).fetchall()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Row]:
        return iter(self._conn.execute(sql, params))  # the cursor steps as it is read

    def lock(self, name: str, *, shared: bool = False) -> None:
        """SQLite writers already hold the database's single write lock."""


class SqliteDatabase:
    """One sqlite3 connection, shared by threads, one transaction at a time."""

    dialect = SQLITE

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        if synchronous not in _SYNCHRONOUS:
            raise StoreError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}")
        self.path = path
        self.location = str(path)
        self._lock = threading.RLock()
        _create_private(path)
        try:
            self._conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000,
                                         isolation_level=None, check_same_thread=False)
            for pragma in (*_PRAGMAS, f"PRAGMA synchronous = {synchronous}"):
                _execute_waiting(self._conn, pragma)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the state database {path}: {exc}") from exc
        _restrict_siblings(path)

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[_SqliteTx]:
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield _SqliteTx(conn)
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.rollback()
                raise StoreError(f"state database {self.path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _execute_waiting(conn: sqlite3.Connection, pragma: str) -> None:
    """Run a pragma, waiting out "database is locked" as long as the busy timeout.

    Switching a new file to WAL needs an exclusive lock and SQLite does not call the busy handler
    for it: a second process opening the same new file at that moment (two gateways starting
    together) would fail at once instead of waiting like for any other lock.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute(pragma)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _create_private(path: Path) -> None:
    """Create the home (0700) and the database file (0600) before SQLite touches them.

    An existing file is never opened here: closing a descriptor of a file releases every POSIX
    lock this process holds on it (sqlite.org/howtocorrupt.html, 2.2), so a store opened while
    another connection of the process has the file (the inspector's, a gateway's) would take that
    connection's shared lock away. Another process closing the database then finds itself the
    last user and deletes the -wal and -shm that connection still reads through: its next read
    after a new write is "file is not a database" or "malformed".
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            os.close(fd)
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
    except OSError as exc:
        raise StoreError(f"cannot create the state database {path}: {exc}") from exc


def _restrict_siblings(path: Path) -> None:
    """``-wal``/``-shm`` files left by an older, laxer writer get the database file's mode too."""
    for suffix in ("-wal", "-shm", "-journal"):
        sibling = path.with_name(path.name + suffix)
        try:
            if sibling.exists() and sibling.stat().st_mode & 0o077:
                sibling.chmod(0o600)
        except OSError as exc:
            raise StoreError(f"cannot restrict permissions of {sibling}: {exc}") from exc


class SQLiteStore(SqlStore):
    """The default store: a SQLite file (usually ``$THOUGHTLINE_HOME/state.db``)."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        self.path = Path(path)
        super().__init__(SqliteDatabase(self.path, synchronous=synchronous))
