"""The gateway's only door to the store: every call runs in a worker thread, never on the loop.

The store is synchronous (SQLite, psycopg); a call made on the event loop would stall every other
request for its duration. Each method here is one store call handed to the store's async facade
(``thoughtline.store.aio``): its worker threads match the backend (one per pooled PostgreSQL
connection, one for SQLite), so a busy gateway queues calls instead of oversubscribing the pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from thoughtline.errors import StoreError
from thoughtline.messages import Message
from thoughtline.store import aio
from thoughtline.store.base import Store, StoredMessage
from thoughtline.store.rehydration import IndexKey
from thoughtline.verdicts import Verdict

T = TypeVar("T")


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

    async def learned(self, session_id: str, update: Callable[[Mapping[str, Any]],
                                                                Mapping[str, Any]],
                      verdicts: Sequence[Verdict], *, tenant: str) -> None:
        """Merge lessons into the session's config and ``tenant``'s ledger (never another's)."""
        def write() -> None:
            self.store.update_model_config(session_id, update)
            for verdict in verdicts:
                self.store.record_verdict(verdict, tenant=tenant)

        await self.call(write)

    async def close(self) -> None:
        await self._facade.aclose()
