"""The gateway's only door to the store: every call runs in a worker thread, never on the loop.

The store is synchronous (SQLite, psycopg); a call made on the event loop would stall every other
request for its duration. Each method here is one store call handed to ``anyio.to_thread``. When
an async store facade lands, this module is the one place to switch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

from thoughtline.messages import Message
from thoughtline.store.base import SessionRecord, Store, StoredMessage
from thoughtline.store.rehydration import IndexKey, Rehydrated
from thoughtline.verdicts import Verdict

T = TypeVar("T")


class AsyncStore:
    """Awaitable wrappers of the few store calls the gateway makes."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker thread (several store calls may share one visit)."""
        return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))

    async def rehydrate(self, tenant: str, keys: Sequence[IndexKey | None], *,
                        session_id: str | None) -> list[Rehydrated | None]:
        return await self.call(self.store.rehydrate, tenant, keys, session_id=session_id)

    async def session(self, ref: str, *, tenant: str) -> SessionRecord:
        return await self.call(self.store.get_session, ref, tenant=tenant)

    async def create_session(self, *, tenant: str, model_config: Mapping[str, Any],
                             title: str) -> SessionRecord:
        return await self.call(self.store.create_session, title=title,
                               model_config=model_config, tenant=tenant)

    async def verdicts(self) -> list[Verdict]:
        return await self.call(self.store.verdicts)

    async def append_indexed(self, session_id: str, messages: Sequence[Message], *,
                             tenant: str, keys: Sequence[IndexKey]) -> list[StoredMessage]:
        return await self.call(self.store.append_indexed, session_id, messages, tenant=tenant,
                               keys=keys)

    async def learned(self, session_id: str, update: Callable[[Mapping[str, Any]],
                                                                Mapping[str, Any]],
                      verdicts: Sequence[Verdict]) -> None:
        def write() -> None:
            self.store.update_model_config(session_id, update)
            for verdict in verdicts:
                self.store.record_verdict(verdict)

        await self.call(write)

    async def close(self) -> None:
        await self.call(self.store.close)
