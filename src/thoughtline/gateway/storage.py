"""The gateway's only door to the store: every call runs in a worker thread, never on the loop.

The store is synchronous (SQLite, psycopg); a call made on the event loop would stall every other
request for its duration. Each method here is one store call handed to the store's async facade
(``thoughtline.store.aio``): its worker threads match the backend (one per pooled PostgreSQL
connection, one for SQLite), so a busy gateway queues calls instead of oversubscribing the pool.

Also owns how the gateway opens its store (``serve``, each worker, ``serve --check``): with a
short wait for PostgreSQL, so a store that is down is a 503 (and ``/readyz`` unready) in
``STORE_WAIT_S``, inside a readiness probe's timeout, rather than the library's 10 s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from thoughtline.errors import StoreError
from thoughtline.messages import Message
from thoughtline.store import aio, open_store
from thoughtline.store.base import Store, StoredMessage
from thoughtline.store.rehydration import IndexKey
from thoughtline.verdicts import Verdict

T = TypeVar("T")

#: Seconds a store call waits for a PostgreSQL connection before it fails (a connection attempt
#: gets libpq's minimum, 2 s): under the image's 3 s health-check timeout.
STORE_WAIT_S = 1.5


def open_gateway_store(store: str, home: Path, *, fail_fast: bool = False) -> Store:
    """The gateway's store (``[server] store``; "" for ``$THOUGHTLINE_DATABASE_URL`` or the
    home's), created and migrated as needed, with the gateway's short wait (``fail_fast``: a
    PostgreSQL server that refuses the first connection is an error at once, for ``--check``)."""
    # WAL without an fsync per commit: every answered turn survives SIGKILL of the gateway.
    return open_store(store or None, home, crash_durable_only=True, wait=STORE_WAIT_S,
                      fail_fast=fail_fast)


class AsyncStore:
    """Awaitable wrappers of the few store calls the gateway makes.

    ``call`` runs any function of the store in one worker-thread visit (the lookups before a
    turn are several store calls made in one visit, see ``conversation``).
    """

    def __init__(self, store: Store, *, on_error: Callable[[], None] | None = None) -> None:
        self.store = store
        self._facade = aio.AsyncStore(store)
        self._on_error = on_error

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker thread (several store calls may share one visit);
        a ``StoreError`` is told to ``on_error`` (the metrics) and raised."""
        try:
            return await self._facade.run(fn, *args, **kwargs)
        except StoreError:
            if self._on_error is not None:
                self._on_error()
            raise

    async def append_indexed(self, session_id: str, messages: Sequence[Message], *,
                             tenant: str, keys: Sequence[IndexKey]) -> list[StoredMessage]:
        return await self.call(self.store.append_indexed, session_id, messages, tenant=tenant,
                               keys=keys)

    async def learned(self, session_id: str | None, update: Callable[[Mapping[str, Any]],
                                                                       Mapping[str, Any]],
                      verdicts: Sequence[Verdict], *, tenant: str) -> None:
        """Merge lessons into the session's config and ``tenant``'s ledger (never another's);
        ``session_id`` None: a session not stored yet (its config is stored with its turn)."""
        def write() -> None:
            if session_id is not None:
                self.store.update_model_config(session_id, update)
            for verdict in verdicts:
                self.store.record_verdict(verdict, tenant=tenant)

        await self.call(write)

    async def close(self) -> None:
        await self._facade.aclose()
