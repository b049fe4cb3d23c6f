"""The store for async callers (the gateway): every ``Store`` call, awaitable.

``AsyncStore`` wraps any synchronous store (SQLite or PostgreSQL) and runs each call on its own
worker threads, so the event loop never blocks on the database::

    store = store.open_async_store(None, home)     # or AsyncStore(open_store(...))
    record = await store.create_session(title="t", tenant=tenant)
    stored = await store.append(record.id, [message, ...])
    loaded = await store.load_history(record.id)
    merged = await store.update_model_config(record.id, lambda current: {...})
    await store.record_verdict(verdict)
    await store.aclose()                           # or: async with open_async_store(...) as store

The methods, their arguments, results and errors are exactly ``thoughtline.store.base.Store``'s
(the common ones spelled out here, any other method of the wrapped store reached the same way)
— ``NotFound``, ``StoreError``; ``StoreUnavailable`` when the database server cannot be reached or
dropped the connection mid-call: a gateway answers 503. Each call is one transaction.

Threads: a PostgreSQL store gets one worker per pooled connection (``PoolSettings.max_size``), so
that many calls run at once; a SQLite store gets one worker (its connection serializes calls
anyway, and SQLite's busy timeout would otherwise block several threads).

Cancellation: cancelling an awaiting task never interrupts a transaction: a call still queued
is dropped, a started one runs to commit or rollback on its thread, so a turn is stored whole or
not at all. The ``update_model_config`` callback runs on the worker thread, inside the
transaction, and must be a quick pure function of the current config (it may run again if the
call is retried). Keyword options the wrapped store's ``append``/``load_history`` take pass
through unchanged.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

from thoughtline.messages import Message
from thoughtline.store.base import LoadedHistory, SessionRecord, Store, StoredMessage
from thoughtline.verdicts import Verdict

T = TypeVar("T")


class AsyncStore:
    """Awaitable ``Store`` calls on worker threads (see the module docstring)."""

    def __init__(self, store: Store, *, workers: int | None = None) -> None:
        self.store = store
        settings = getattr(store, "settings", None)
        count = workers or (settings.max_size if settings is not None else 1)
        self._executor = ThreadPoolExecutor(max_workers=count,
                                            thread_name_prefix="thoughtline-store")

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on a store worker thread: several store calls in one visit."""
        loop = asyncio.get_running_loop()
        call = functools.partial(fn, *args, **kwargs)
        # A cancelled caller stops waiting: a call not yet started never runs, a started one
        # finishes (commit or rollback) on its thread.
        return await loop.run_in_executor(self._executor, call)

    async def create_session(self, *, title: str = "",
                             model_config: Mapping[str, Any] | None = None,
                             tenant: str = "") -> SessionRecord:
        return await self.run(self.store.create_session, title=title,
                               model_config=model_config, tenant=tenant)

    async def get_session(self, ref: str, *, tenant: str | None = None) -> SessionRecord:
        return await self.run(self.store.get_session, ref, tenant=tenant)

    async def latest_session(self, *, tenant: str | None = None) -> SessionRecord | None:
        return await self.run(self.store.latest_session, tenant=tenant)

    async def list_sessions(self, *, tenant: str | None = None,
                            limit: int | None = None) -> list[SessionRecord]:
        return await self.run(self.store.list_sessions, tenant=tenant, limit=limit)

    async def load_history(self, session_id: str, **options: Any) -> LoadedHistory:
        return await self.run(self.store.load_history, session_id, **options)

    async def append(self, session_id: str, messages: Sequence[Message],
                     **options: Any) -> list[StoredMessage]:
        return await self.run(self.store.append, session_id, tuple(messages), **options)

    async def set_model_config(self, session_id: str, model_config: Mapping[str, Any]) -> None:
        await self.run(self.store.set_model_config, session_id, model_config)

    async def update_model_config(self, session_id: str,
                                  update: Callable[[Mapping[str, Any]], Mapping[str, Any]],
                                  ) -> SessionRecord:
        return await self.run(self.store.update_model_config, session_id, update)

    async def set_title(self, session_id: str, title: str) -> None:
        await self.run(self.store.set_title, session_id, title)

    async def branch(self, session_id: str, *, at: int | None = None,
                     title: str = "") -> SessionRecord:
        return await self.run(self.store.branch, session_id, at=at, title=title)

    async def delete_session(self, session_id: str) -> None:
        await self.run(self.store.delete_session, session_id)

    async def record_verdict(self, verdict: Verdict, *, tenant: str = "") -> Verdict:
        return await self.run(self.store.record_verdict, verdict, tenant=tenant)

    async def verdicts(self, *, tenant: str = "") -> list[Verdict]:
        return await self.run(self.store.verdicts, tenant=tenant)

    async def forget_verdicts(self, *, provider: str | None = None, host: str | None = None,
                              model: str | None = None) -> int:
        return await self.run(self.store.forget_verdicts, provider=provider, host=host,
                               model=model)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Any other store method (backends grow some: compaction, the rehydration index…),
        awaitable the same way: ``await store.method(...)`` runs ``store.store.method(...)``."""
        method = getattr(self.store, name)  # AttributeError for a name the store lacks
        if name.startswith("_") or not callable(method):
            raise AttributeError(name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self.run(method, *args, **kwargs)

        call.__name__ = name
        return call

    async def aclose(self) -> None:
        """Wait for running calls, then close the store (and its connections)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._executor.shutdown, True)
        self.store.close()

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
