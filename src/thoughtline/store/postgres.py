"""The PostgreSQL backend (psycopg 3), for gateways running on several machines.

Owns the connection (reconnecting after it breaks), translating ``?`` placeholders, advisory locks
(migrations run once; content garbage collection never races an append), repeatable-read snapshots
for reads, and mapping psycopg errors to ``StoreError``. The schema lives in the connection's
``search_path`` (pass ``options=-csearch_path=NAME`` in the URL to use a dedicated schema).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from thoughtline.errors import StoreError
from thoughtline.store.db import POSTGRES, Row
from thoughtline.store.engine import SqlStore

CONNECT_TIMEOUT_S = 10
_READ_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"


def _pg(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = re.sub(r":[^@]*@", ":***@", parts.netloc, count=1)
    return urlunsplit(parts._replace(netloc=netloc))


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(_pg(sql), params).rowcount

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany(_pg(sql), rows)

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self._conn.execute(_pg(sql), params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._conn.execute(_pg(sql), params).fetchall()

    def lock(self, name: str, *, shared: bool = False) -> None:
        """A transaction-scoped advisory lock, per schema so separate stores never contend."""
        fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        self._conn.execute(f"SELECT {fn}(hashtext(current_schema() || '/' || %s))", (name,))


class PostgresDatabase:
    """One psycopg connection in autocommit mode, explicit transactions, shared behind a lock."""

    dialect = POSTGRES

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = redact(url)
        self._lock = threading.RLock()
        self._conn = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to the store at {self.location}: {exc}") from exc

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[_PgTx]:
        with self._lock:
            if self._conn.closed or self._conn.broken:
                self._conn = self._connect()
            try:
                with self._conn.transaction():
                    if not write:
                        self._conn.execute(_READ_SNAPSHOT)
                    yield _PgTx(self._conn)
            except psycopg.Error as exc:
                raise StoreError(f"store at {self.location}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class PostgresStore(SqlStore):
    """The shared store on PostgreSQL (``postgresql://`` URLs)."""

    def __init__(self, url: str) -> None:
        super().__init__(PostgresDatabase(url))
