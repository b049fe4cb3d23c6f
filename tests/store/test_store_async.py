"""The async facade: every store call awaitable from an event loop, on both backends."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from store_backends import Backend
from store_samples import rich_history

from thoughtline.errors import NotFound
from thoughtline.messages import dumps, user
from thoughtline.replay import Verdict
from thoughtline.store import AsyncStore, SQLiteStore, Store, open_async_store, open_store


def test_the_facade_covers_the_whole_store_interface(tmp_path: Path) -> None:
    protocol = {n for n in vars(Store) if not n.startswith("_")} - {"close"}
    spelled_out = {"create_session", "get_session", "latest_session", "list_sessions",
                   "load_history", "append", "set_model_config", "update_model_config",
                   "set_title", "branch", "delete_session", "record_verdict", "verdicts",
                   "forget_verdicts"}
    for name in spelled_out:
        assert asyncio.iscoroutinefunction(getattr(AsyncStore, name)), name
    with SQLiteStore(tmp_path / "state.db") as sync:
        facade = AsyncStore(sync)
        for name in protocol:  # the rest (backends grow methods) through the same workers
            assert asyncio.iscoroutinefunction(getattr(facade, name)), name


def test_every_call_round_trips_through_the_event_loop(backend: Backend) -> None:
    store = AsyncStore(backend.store)
    loop_thread: list[int] = []

    async def scenario() -> None:
        loop_thread.append(threading.get_ident())
        made = await store.create_session(title="async", tenant="t")
        stored = await store.append(made.id, rich_history())
        assert [s.seq for s in stored] == list(range(len(rich_history())))
        loaded = await store.load_history(made.id)
        assert [dumps(m.message) for m in loaded.messages] == [dumps(m) for m in rich_history()]
        assert (await store.get_session("async", tenant="t")).id == made.id
        assert (await store.latest_session()) == (await store.list_sessions(limit=1))[0]
        await store.set_title(made.id, "renamed")
        await store.set_model_config(made.id, {"fingerprints": ["a"]})
        merged = await store.update_model_config(
            made.id, lambda c: {**c, "fingerprints": [*c["fingerprints"], "b"]})
        assert merged.model_config == {"fingerprints": ["a", "b"]}
        child = await store.branch(made.id, at=2, title="child")
        assert child.turns == 2
        verdict = Verdict(provider="p", host="h", model="m", drop=frozenset({"x"}))
        assert await store.record_verdict(verdict) == verdict
        assert await store.verdicts() == [verdict]
        assert await store.forget_verdicts(provider="p") == 1
        await store.delete_session(child.id)
        with pytest.raises(NotFound):
            await store.get_session(child.id)

    asyncio.run(scenario())
    # The sync store ran on worker threads, never on the loop's own thread.
    assert backend.store.get_session("renamed").title == "renamed"
    assert loop_thread and threading.get_ident() == loop_thread[0]


def test_concurrent_awaits_on_one_session_lose_nothing(backend: Backend) -> None:
    store = AsyncStore(backend.store, workers=4)
    sid = backend.store.create_session().id

    async def one(n: int) -> Any:
        return await store.append(sid, [user(f"{n}-a"), user(f"{n}-b")])

    async def scenario() -> list[Any]:
        return await asyncio.gather(*(one(n) for n in range(20)))

    results = asyncio.run(scenario())
    seqs = sorted(s.seq for batch in results for s in batch)
    assert seqs == list(range(40))
    texts = [m.message.text for m in backend.store.load_history(sid).messages]
    for i in range(0, 40, 2):
        assert texts[i + 1] == texts[i][:-1] + "b"


def test_workers_follow_the_backend(backend: Backend) -> None:
    store = AsyncStore(backend.store)
    expected = 1 if backend.name == "sqlite" else backend.store.settings.max_size  # type: ignore[attr-defined]
    assert store._executor._max_workers == expected


def test_open_async_store_and_aclose(tmp_path: Path) -> None:
    async def scenario() -> str:
        async with open_async_store(tmp_path / "state.db", tmp_path) as store:
            made = await store.create_session(title="x")
            await store.append(made.id, [user("hi")])
            return made.id

    sid = asyncio.run(scenario())
    with open_store(tmp_path / "state.db", tmp_path) as sync:  # type: ignore[attr-defined]
        assert [m.message.text for m in sync.load_history(sid).messages] == ["hi"]


def test_cancelling_never_cuts_a_transaction_in_half(backend: Backend) -> None:
    """A started call finishes whole after its caller is cancelled; a queued one never runs."""
    store = AsyncStore(backend.store, workers=1)
    sid = backend.store.create_session(model_config={"n": 0}).id
    inside, release = threading.Event(), threading.Event()

    def slow(current: Any) -> dict[str, Any]:
        inside.set()
        assert release.wait(30)
        return {"n": current["n"] + 1}

    async def scenario() -> None:
        started = asyncio.create_task(store.update_model_config(sid, slow))
        while not inside.is_set():
            await asyncio.sleep(0.001)
        queued = asyncio.create_task(store.append(sid, [user("never")]))
        await asyncio.sleep(0)
        started.cancel()
        queued.cancel()
        for task in (started, queued):
            with pytest.raises(asyncio.CancelledError):
                await task
        release.set()
        await store.aclose()

    asyncio.run(scenario())
    with open_store(backend.target, Path("/nonexistent-home")) as again:  # type: ignore[attr-defined]
        assert again.get_session(sid).model_config == {"n": 1}
        assert again.load_history(sid).messages == ()


def test_other_store_methods_are_awaitable_too(tmp_path: Path) -> None:
    class Grown(SQLiteStore):
        """A store with a method the facade does not spell out (as backends grow them)."""

        def stamp(self, value: str, *, twice: bool = False) -> tuple[int, str]:
            return threading.get_ident(), value * (2 if twice else 1)

    store = AsyncStore(Grown(tmp_path / "state.db"))

    async def scenario() -> tuple[int, str]:
        return await store.stamp("x", twice=True)

    thread, value = asyncio.run(scenario())
    assert value == "xx" and thread != threading.get_ident()
    for missing in ("nope", "_db", "location"):  # unknown, private, not a method
        with pytest.raises(AttributeError):
            getattr(store, missing)
    store.store.close()
