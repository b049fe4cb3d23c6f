"""``AutoCompaction`` wraps a session's turns from outside (issue 24 item 6: no import cycle
between compaction and the session): the session knows nothing of compaction, a turn sent
through ``AutoCompaction`` with nothing to compact is the session's own turn, and one turn at a
time holds for the wrapped turn, its compaction included."""

from __future__ import annotations

import asyncio

import pytest
from compaction_support import TOOLS, deepseek, run, tool_loop

from thoughtline import AutoCompaction, CompactionSettings, Session
from thoughtline.errors import UsageError
from thoughtline.events import Done
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator


def test_the_session_has_no_compaction_of_its_own(emu: ChatEmulator, store: Store) -> None:
    session = Session.create(store, deepseek(emu))
    assert not hasattr(session, "compaction")



def test_setting_the_old_attribute_says_where_compaction_went(emu: ChatEmulator,
                                                             store: Store) -> None:
    # Code written against the old API set ``session.compaction = auto``: it must not silently
    # compact nothing.
    session = Session.create(store, deepseek(emu))
    with pytest.raises(AttributeError, match=r"AutoCompaction\(\.\.\.\)\.send\(session"):
        session.compaction = AutoCompaction(CompactionSettings(windows={"deepseek": 100}))

def test_a_turn_with_nothing_to_compact_is_the_sessions_own_turn(emu: ChatEmulator,
                                                                 store: Store) -> None:
    auto = AutoCompaction(CompactionSettings(windows={"deepseek": 100_000}))

    async def scenario() -> tuple[bytes, bytes]:
        plain = Session.create(store, deepseek(emu), system="Be brief.")
        wrapped = Session.create(store, deepseek(emu), system="Be brief.")
        start = len(emu.received)
        await plain.send("Hello")
        sent_plain = emu.received[start].raw
        start = len(emu.received)
        done = await auto.send(wrapped, "Hello")
        assert isinstance(done, Done) and wrapped.history[-1] == done.message
        sent_wrapped = emu.received[start].raw
        assert len(emu.received) == start + 1  # one request, no summary
        await plain.aclose()
        await wrapped.aclose()
        return sent_plain, sent_wrapped

    sent_plain, sent_wrapped = run(scenario())
    assert sent_wrapped == sent_plain
    assert auto.compactions == auto.summary_requests == 0


def test_a_second_turn_while_the_first_is_compacting_is_refused(emu: ChatEmulator,
                                                                store: Store) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(prompt: object) -> tuple[str, str | None]:
        entered.set()
        await release.wait()
        return "summary", "stop"

    auto = AutoCompaction(CompactionSettings(windows={"deepseek": 500}, keep=2), summarize=slow)

    async def scenario() -> int:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        for i in range(3):
            await tool_loop(session, i)
        start = len(emu.received)
        first = asyncio.create_task(auto.send(session, "Next question, please."))
        await entered.wait()  # the first turn is compacting the session: not yet sent
        with pytest.raises(UsageError, match="already answering a turn"):
            await auto.send(session, "Second question")
        sent_meanwhile = len(emu.received) - start
        release.set()
        await first
        await session.aclose()
        return sent_meanwhile

    assert run(scenario()) == 0
    assert auto.compactions == 1
