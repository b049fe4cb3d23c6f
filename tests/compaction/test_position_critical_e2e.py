"""Position-critical items through compaction, branching and the tail walk, on the emulators
(issue 28 item 4; openai-python types/responses, docs/compaction.md): the Responses emulator answers
with ``configuration_update`` and ``program`` items and refuses one that comes back altered or
moved; after a compaction and on a branch they still go back byte for byte and in place, and a
Chat Completions route gets nothing of them (the documented rendering: none)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from compaction_support import TOOLS, deepseek, run

from thoughtline import Session, ToolResult, config
from thoughtline.compaction import compress, is_checkpoint
from thoughtline.store.base import Store
from thoughtline.testing.responses_emulator import ResponsesEmulator

KEY_ENV = "TL_CMP_PINNED_KEY"
PINNED = ("configuration_update", "program")


@pytest.fixture
def responses() -> Iterator[ResponsesEmulator]:
    with ResponsesEmulator("openai") as emulator:
        emulator.pin_items()
        yield emulator


@pytest.fixture(autouse=True)
def responses_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "fake-pinned-key")


def _provider(emu: ResponsesEmulator) -> config.ProviderConfig:
    return config.ProviderConfig(id="openai-responses", api="openai-responses",
                                 base_url=emu.base_url, key_env=KEY_ENV, model="gpt-5.6")


async def _conversation(session: Session, loops: int) -> None:
    for i in range(loops):
        done = await session.send(f"Question {i}: what is the weather in city {i}?")
        calls = done.message.tool_calls
        if calls:
            await session.send([ToolResult(call_id=c.id, content=f"sunny, {20 + i} C")
                                for c in calls])
    await session.send("status?")


def _sequence(body: Any) -> list[tuple[str, bytes]]:
    """Each replayed item's id (or role) and bytes, in order."""
    return [(str(i.get("id") or i.get("role")), orjson.dumps(i, option=orjson.OPT_SORT_KEYS))
            for i in body["input"]]


def _pinned(body: Any) -> list[tuple[int, str]]:
    return [(n, i["id"]) for n, i in enumerate(body["input"]) if i.get("type") in PINNED]


def test_the_emulator_refuses_a_moved_or_altered_item(responses: ResponsesEmulator,
                                                      store: Store) -> None:
    async def scenario() -> None:
        session = Session.create(store, _provider(responses), tools=TOOLS)
        await _conversation(session, 1)
        await session.aclose()

    run(scenario())
    body = responses.received[-1].body
    assert _pinned(body)  # they were issued and came back, accepted
    items = list(body["input"])
    first = next(n for n, i in enumerate(items) if i.get("type") == "configuration_update")
    moved = [*items[:first - 1], items[first], items[first - 1], *items[first + 1:]]
    altered = [{**i, "fingerprint": i["fingerprint"][:-4] + "AAAA"}
               if i.get("type") == "program" else i for i in items]
    for variant, wording in ((moved, "original position"), (altered, "altered")):
        url = responses.base_url.split("/v1")[0] + responses.received[-1].path
        reply = httpx.post(url, json={**body, "input": variant},
                           headers={"authorization": "Bearer k"})
        assert reply.status_code == 400 and wording in reply.text


def test_compaction_and_a_branch_keep_them_verbatim_and_in_place(responses: ResponsesEmulator,
                                                                 store: Store) -> None:
    async def scenario() -> tuple[Session, Session, Any]:
        session = Session.create(store, _provider(responses), tools=TOOLS)
        await _conversation(session, 4)
        result = await compress(session, keep=5)
        await session.send("and now?")
        branch = session.branch(at=len(session.history) - 2)
        await branch.send("on the branch?")
        await session.aclose()
        await branch.aclose()
        return session, branch, result

    start = len(responses.received)
    session, _branch, result = run(scenario())
    sent = responses.received[start:]
    assert all(r.status == 200 for r in sent)
    assert result.compacted and is_checkpoint(session.history[0])
    issued = responses.pinned_issued  # id → the bytes it was answered with, its answer's order
    for after in (sent[-2].body, sent[-1].body):  # after compacting, and on the branch
        kept = _pinned(after)
        assert len(kept) >= 4
        seq = _sequence(after)
        for n, item_id in kept:  # the same bytes, beside the same items of its own answer
            sent_bytes, order = issued[item_id]
            assert seq[n][1] == sent_bytes
            here = [i for i, _ in seq]
            mine = [i for i in order if i in here]
            at = mine.index(item_id)
            if at:
                assert here[n - 1] == mine[at - 1]
            if at + 1 < len(mine):
                assert here[n + 1] == mine[at + 1]


def test_a_chat_route_gets_nothing_of_them(responses: ResponsesEmulator, store: Store,
                                           emu: Any) -> None:
    async def scenario() -> None:
        session = Session.create(store, _provider(responses), tools=TOOLS)
        await _conversation(session, 2)
        session.set_provider(deepseek(emu))
        await session.send("still there?")
        await session.aclose()

    run(scenario())
    text = emu.received[-1].raw.decode()
    assert emu.received[-1].status == 200
    assert "configuration_update" not in text and "prg_" not in text and "cfg_" not in text


def test_unpinned_emulator_never_sends_them(store: Store) -> None:
    with ResponsesEmulator("openai") as plain:
        async def scenario() -> None:
            session = Session.create(store, _provider(plain), tools=TOOLS)
            await _conversation(session, 1)
            await session.aclose()

        run(scenario())
        assert not _pinned(plain.received[-1].body)
