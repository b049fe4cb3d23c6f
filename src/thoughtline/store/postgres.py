"""The PostgreSQL backend (psycopg 3 with ``psycopg_pool``), for gateways on several machines.

Owns the transaction protocol on a pooled connection: translating ``?`` placeholders, advisory
locks (migrations run once; content garbage collection never races an append), the isolation of
each transaction (writers READ COMMITTED, so a row lock taken first makes every later statement
see what the previous holder committed; readers one REPEATABLE READ READ ONLY snapshot), and where
a failure happened (before or during ``COMMIT``), which ``pool`` turns into a retry or a
``StoreUnavailable``. Each public store call is one transaction and is retried by ``pool.retrying``
only when nothing was committed (every public ``SqlStore`` method is wrapped, also ones added
later; a method that is not one transaction must be listed in ``NOT_RETRIED``).

How concurrent writers stay correct (several gateway processes on one database):

* ``append`` updates the session's row first: a row lock that serializes appends to one
  conversation, so sequence numbers never collide and each turn stays contiguous; content rows
  are written in digest order with ``ON CONFLICT`` upserts, so two appends sharing content
  neither fail nor deadlock.
* ``update_model_config`` takes the same row lock before reading, so a read-merge-write never
  loses a verdict or fingerprint another process merged meanwhile.
* ``record_verdict`` reads-merges-writes under an advisory lock (the row may not exist yet).

The schema lives in the connection's ``search_path`` (pass ``options=-csearch_path=NAME`` in the
URL to use a dedicated schema).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import IsolationLevel

from thoughtline.errors import StoreError
from thoughtline.store import pool
from thoughtline.store.db import POSTGRES, Row
from thoughtline.store.engine import SqlStore
from thoughtline.store.pool import PoolSettings

#: Public calls that are not one transaction each, so never retried as a whole
#: (``latest_session`` calls the retried ``list_sessions``).
NOT_RETRIED = frozenset({"close", "latest_session"})

#: ``INSERT INTO t (cols) VALUES (?, …)`` plus an optional ``ON CONFLICT …`` tail.
_INSERT_VALUES = re.compile(r"^(\s*INSERT INTO [^()]+\([^()]*\) VALUES )(\([?, ]+\))(.*)$", re.S)
_ROWS_PER_INSERT = 500
_UPSERT_TARGET = re.compile(r"ON CONFLICT \(([^()]*)\) DO UPDATE")


def _last_per_conflict_key(head: str, tail: str, rows: list[Sequence[Any]]) -> list[Sequence[Any]]:
    """One statement may not update a row twice: for ``ON CONFLICT (key) DO UPDATE`` keep each
    key's last row, which is what row-by-row upserts leave behind."""
    target = _UPSERT_TARGET.search(tail)
    if target is None:  # plain inserts fail on a repeated key anyway; DO NOTHING keeps the first
        return rows
    columns = [c.strip() for c in head[head.index("(") + 1:head.rindex(")")].split(",")]
    key = [columns.index(c.strip()) for c in target.group(1).split(",")]
    last = {tuple(row[i] for i in key): row for row in rows}
    return list(last.values()) if len(last) < len(rows) else rows


def _pg(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


def redact(url: str) -> str:
    """The URL without its password (user info or a ``password=`` parameter), for messages."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = re.sub(r":[^@]*@", ":***@", netloc, count=1)
    query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(_pg(sql), params).rowcount

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """An ``INSERT … VALUES (…)`` becomes one multi-row statement per chunk (one round trip
        instead of one per row), with the same outcome as running it row by row."""
        rows = list(rows)
        if not rows:
            return
        match = _INSERT_VALUES.match(sql)
        if match is None:
            with self._conn.cursor() as cur:
                cur.executemany(_pg(sql), rows)
            return
        head, one_row, tail = match.groups()
        rows = _last_per_conflict_key(head, tail, rows)
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            chunk = rows[start:start + _ROWS_PER_INSERT]
            values = ", ".join([one_row] * len(chunk))
            self._conn.execute(_pg(f"{head}{values}{tail}"),
                               [value for row in chunk for value in row])

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self._conn.execute(_pg(sql), params, binary=True).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        # Binary results: payload bytes arrive as they are, not hex-encoded and parsed back.
        return self._conn.execute(_pg(sql), params, binary=True).fetchall()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Row]:
        # A client-side cursor: libpq has the whole result already; rows are handed out as read.
        return iter(self._conn.execute(_pg(sql), params, binary=True))

    def lock(self, name: str, *, shared: bool = False) -> None:
        """A transaction-scoped advisory lock, per schema so separate stores never contend."""
        fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        self._conn.execute(f"SELECT {fn}(hashtext(current_schema() || '/' || %s))", (name,))


class PostgresDatabase:
    """A pool of psycopg connections; each transaction runs on one checked-out connection."""

    dialect = POSTGRES

    def __init__(self, url: str, settings: PoolSettings | None = None) -> None:
        self.url = url
        self.location = redact(url)
        self.settings = settings or PoolSettings()
        self._busy = 0  # transactions holding a connection now (pooled or direct)
        self._busy_lock = threading.Lock()
        try:
            self._pool = pool.open_pool(url, self.settings, name=f"thoughtline {self.location}")
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the store at {self.location}: {exc}") from exc

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[_PgTx]:
        conn, pooled = self._checkout()
        committing = False
        try:
            conn.isolation_level = (IsolationLevel.READ_COMMITTED if write
                                    else IsolationLevel.REPEATABLE_READ)
            conn.read_only = not write
            try:
                yield _PgTx(conn)
            except BaseException:
                with suppress(psycopg.Error):  # a dead connection has nothing to roll back
                    conn.rollback()
                raise
            committing = write  # a read-only transaction cut at COMMIT wrote nothing
            conn.commit()
        except psycopg.Error as exc:
            raise pool.transaction_error(exc, self.location, committing=committing,
                                         broken=conn.broken) from exc
        finally:
            self._release(conn, pooled)

    def _checkout(self) -> tuple[psycopg.Connection[Any], bool]:
        with self._busy_lock:
            busy = self._busy
            self._busy += 1
        try:
            return pool.checkout(self._pool, self.url, self.settings, busy=busy,
                                 location=self.location)
        except BaseException as exc:
            with self._busy_lock:
                self._busy -= 1
            if isinstance(exc, psycopg.Error):  # e.g. the pool was closed
                raise StoreError(f"store at {self.location}: {exc}") from exc
            raise

    def _release(self, conn: psycopg.Connection[Any], pooled: bool) -> None:
        with self._busy_lock:
            self._busy -= 1
        if pooled:
            self._pool.putconn(conn)
        else:
            with suppress(psycopg.Error):  # a direct connection is never reused
                conn.close()

    def close(self) -> None:
        self._pool.close()


class PostgresStore(SqlStore):
    """The shared store on PostgreSQL (``postgresql://`` URLs); see the module docstring."""

    def __init__(self, url: str, *, settings: PoolSettings | None = None) -> None:
        self.url = url
        self.settings = settings or PoolSettings()
        super().__init__(PostgresDatabase(url, self.settings))


def retried_calls() -> list[str]:
    """Every public method of the shared store: each runs exactly one transaction (the rule
    for ``SqlStore`` methods; ``NOT_RETRIED`` lists the exceptions), so each is safe to retry."""
    return sorted(name for name in dir(SqlStore)
                  if not name.startswith("_") and name not in NOT_RETRIED
                  and callable(getattr(SqlStore, name)))


for _name in retried_calls():
    setattr(PostgresStore, _name, pool.retrying(getattr(SqlStore, _name)))
