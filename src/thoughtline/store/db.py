"""The seam between the shared SQL store and one database driver (sqlite3 or psycopg).

A driver adapter owns connecting, thread locking, transactions, its placeholder style, its lock
primitive and mapping its exceptions to ``StoreError``. Everything above this seam speaks portable
SQL with ``?`` placeholders and never imports a driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

Row: TypeAlias = tuple[Any, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Dialect:
    """The few column types that differ between backends (used by migrations)."""

    name: str
    blob: str
    real: str


SQLITE = Dialect(name="sqlite", blob="BLOB", real="REAL")
POSTGRES = Dialect(name="postgresql", blob="BYTEA", real="DOUBLE PRECISION")


class Tx(Protocol):
    """One open transaction. SQL uses ``?`` placeholders whatever the driver."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each row (a driver may batch them; the outcome is the same)."""
        ...

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def rows(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Row]:
        """The result rows one at a time (consume them inside the transaction): a large read
        need not hold every row at once where the driver streams them (sqlite3 does)."""
        ...

    def lock(self, name: str, *, shared: bool = False) -> None:
        """Hold a named lock until the transaction ends (a no-op where writers are serialized)."""
        ...


class Database(Protocol):
    """A connection (or a pool of them) to one store database, usable from several threads.

    Every transaction must be all or nothing. A backend whose connection can break mid-call
    (PostgreSQL) raises ``StoreUnavailable`` saying whether a retry is safe (nothing was
    committed) or not (the connection broke while committing).
    """

    dialect: Dialect
    location: str  # for messages: a path or a URL without credentials

    def transaction(self, *, write: bool) -> AbstractContextManager[Tx]:
        """Commit on success, roll back on any exception; driver errors become StoreError."""
        ...

    def close(self) -> None: ...
