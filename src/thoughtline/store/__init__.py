"""Durable sessions, messages and verdicts behind one interface (``Store``).

``open_store`` picks the backend: SQLite for a path (default ``$THOUGHTLINE_HOME/state.db``),
PostgreSQL for a ``postgresql://`` URL (given, or from ``THOUGHTLINE_DATABASE_URL``). The
PostgreSQL driver and its pool are an optional dependency (``thoughtline[postgres]``), imported
only when used. Async callers (the gateway) use ``open_async_store`` / ``AsyncStore`` (``aio``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from thoughtline.errors import StoreError
from thoughtline.store.base import (
    LoadedHistory,
    LoadProblem,
    ProblemKind,
    SessionRecord,
    Store,
    StoredMessage,
)
from thoughtline.store.codec import EncodedMessage, PayloadRef, encode_message
from thoughtline.store.engine import SqlStore
from thoughtline.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from thoughtline.store.aio import AsyncStore

DATABASE_URL_ENV = "THOUGHTLINE_DATABASE_URL"
STATE_DB = "state.db"
_PG_SCHEMES = ("postgresql://", "postgres://")

__all__ = [
    "DATABASE_URL_ENV",
    "STATE_DB",
    "AsyncStore",
    "EncodedMessage",
    "LoadProblem",
    "LoadedHistory",
    "PayloadRef",
    "ProblemKind",
    "SQLiteStore",
    "SessionRecord",
    "SqlStore",
    "Store",
    "StoredMessage",
    "encode_message",
    "open_async_store",
    "open_store",
]


def open_store(url_or_path: str | Path | None, home: Path, *,
               crash_durable_only: bool = False, wait: float | None = None,
               fail_fast: bool = False) -> SqlStore:
    """Open (creating and migrating as needed) the store named by a URL or path.

    ``None`` means ``$THOUGHTLINE_DATABASE_URL`` when set, else ``home / "state.db"``. A directory
    means its ``state.db``. ``crash_durable_only`` lets a SQLite store skip the fsync per commit
    (``synchronous=NORMAL``): commits survive a crash or SIGKILL of the process, not a power loss
    (the gateway's choice; PostgreSQL has its own settings). ``wait`` (seconds) is how long a
    PostgreSQL call waits for a connection before ``StoreUnavailable`` (default: 10 s).
    ``fail_fast`` makes one PostgreSQL connection attempt first and raises ``StoreUnavailable``
    at once when it fails, instead of waiting out a restart (a one-shot check's choice).
    """
    target: str | Path = url_or_path if url_or_path is not None else (
        os.environ.get(DATABASE_URL_ENV, "").strip() or Path(home) / STATE_DB)
    if isinstance(target, str) and target.startswith(_PG_SCHEMES):
        return _open_postgres(target, wait, fail_fast=fail_fast)
    if isinstance(target, str) and "://" in target:
        scheme = target.split("://", 1)[0]
        raise StoreError(f"unsupported store URL scheme {scheme!r}: use a file path for SQLite "
                         "or a postgresql:// URL")
    path = Path(target).expanduser()
    if path.is_dir():
        path = path / STATE_DB
    return SQLiteStore(path, synchronous="NORMAL" if crash_durable_only else "FULL")


def _open_postgres(url: str, wait: float | None = None, *, fail_fast: bool = False) -> SqlStore:
    try:
        from thoughtline.store.pool import PoolSettings, reach
        from thoughtline.store.postgres import PostgresStore, redact
    except ImportError as exc:
        raise StoreError("a postgresql:// store needs psycopg and psycopg-pool: "
                         "pip install 'thoughtline[postgres]'") from exc
    settings = PoolSettings() if wait is None else PoolSettings.waiting(wait)
    if fail_fast:
        reach(url, redact(url), settings)
    return PostgresStore(url, settings=settings)


def open_async_store(url_or_path: str | Path | None, home: Path, *,
                     workers: int | None = None) -> AsyncStore:
    """``open_store`` for async callers (opening itself is synchronous: call it at startup)."""
    from thoughtline.store.aio import AsyncStore

    return AsyncStore(open_store(url_or_path, home), workers=workers)


def __getattr__(name: str) -> object:
    # The async facade imports asyncio: only the gateway needs it, so it loads on first use.
    if name == "AsyncStore":
        from thoughtline.store.aio import AsyncStore

        return AsyncStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
