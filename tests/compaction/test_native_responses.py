"""``[compaction] native = true`` on the Responses emulator: server-side compaction (a final
``compaction_trigger`` input item, developers.openai.com/api/docs/guides/compaction) answers with
one encrypted ``compaction`` item, stored verbatim in the checkpoint and replayed alone, in its
place, only to the provider that made it; our summary is the checkpoint's readable text (the item
has none) and what every other route gets; failures fall back to ours."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from compaction_support import TOOLS, run

from thoughtline import Session, ToolResult, config
from thoughtline.compaction import CompactionSettings, compress, is_checkpoint
from thoughtline.messages import Opaque
from thoughtline.store.base import Store
from thoughtline.testing.responses_emulator import ResponsesEmulator

KEY_ENV = "TL_CMP_NATIVE_RESPONSES_KEY"
NATIVE = CompactionSettings(native=True)


@pytest.fixture(scope="module")
def responses() -> Iterator[ResponsesEmulator]:
    with ResponsesEmulator("openai") as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def responses_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "fake-native-key")


def _provider(emu: ResponsesEmulator, pid: str = "openai-responses") -> config.ProviderConfig:
    return config.ProviderConfig(id=pid, api="openai-responses", base_url=emu.base_url,
                                 key_env=KEY_ENV, model="gpt-5.5")


async def _conversation(session: Session, loops: int) -> None:
    for i in range(loops):
        done = await session.send(f"Question {i}: what is the weather in city {i}?")
        calls = done.message.tool_calls
        if calls:
            await session.send([ToolResult(call_id=c.id, content=f"sunny, {20 + i} C")
                                for c in calls])
    await session.send("status?")


def _typed(body: Any, kind: str) -> list[tuple[int, bytes]]:
    return [(i, orjson.dumps(item)) for i, item in enumerate(body.get("input", ()))
            if isinstance(item, dict) and item.get("type") == kind]


def test_the_trigger_brings_one_compaction_item_that_goes_back_in_place(
        responses: ResponsesEmulator, store: Store) -> None:
    async def scenario() -> tuple[Session, Any]:
        session = Session.create(store, _provider(responses), tools=TOOLS)
        await _conversation(session, 4)
        result = await compress(session, keep=5, settings=NATIVE)
        await session.send("and now?")
        await session.aclose()
        return session, result

    start = len(responses.received)
    session, result = run(scenario())
    sent = responses.received[start:]
    assert all(r.status == 200 for r in sent)
    assert result.compacted and "own compaction" in result.describe()
    trigger, ours, after = sent[-3], sent[-2], sent[-1]
    assert trigger.body["input"][-1] == {"type": "compaction_trigger"}
    assert not _typed(ours.body, "compaction_trigger")  # our summary prompt, for the text
    mark = session.history[0]
    assert is_checkpoint(mark) and mark.text.strip()
    stored = [p.native["openai-responses"] for p in mark.parts if isinstance(p, Opaque)]
    assert len(stored) == 1 and stored[0]["type"] == "compaction"
    assert stored[0]["encrypted_content"].startswith("gAAAAAB")
    item = orjson.dumps(stored[0])
    assert _typed(after.body, "compaction") == [(0, item)]  # verbatim, where the checkpoint is
    assert "[Summary of the earlier part" not in orjson.dumps(after.body).decode()


def test_another_provider_gets_our_summary_text_never_the_item(
        responses: ResponsesEmulator, store: Store) -> None:
    # Same issuer and secret: it would even accept the item; it is left out because another
    # provider id did not make it.
    with ResponsesEmulator("openai") as other:
        async def scenario() -> None:
            session = Session.create(store, _provider(responses), tools=TOOLS)
            await _conversation(session, 4)
            await compress(session, keep=5, settings=NATIVE)
            session.set_provider(_provider(other, "other-responses"))
            await session.send("still there?")
            await session.aclose()

        run(scenario())
        last = other.received[-1]
    assert last.status == 200
    assert _typed(last.body, "compaction") == []
    assert "[Summary of the earlier part" in orjson.dumps(last.body).decode()


def test_a_reply_without_the_item_falls_back_to_ours(responses: ResponsesEmulator,
                                                     store: Store) -> None:
    async def scenario() -> tuple[Session, Any]:
        session = Session.create(store, _provider(responses), tools=TOOLS)
        await _conversation(session, 4)
        responses.fail_next(400, {"error": {"message": "Invalid 'input': unsupported item.",
                                            "type": "invalid_request_error", "param": "input",
                                            "code": None}})
        result = await compress(session, keep=5, settings=NATIVE)
        await session.send("and now?")
        await session.aclose()
        return session, result

    start = len(responses.received)
    session, result = run(scenario())
    sent = responses.received[start:]
    assert result.compacted and "our summarizer stood in" in result.describe()
    assert "off for this session" not in result.describe()  # it did not name compaction
    assert not any(isinstance(p, Opaque) for p in session.history[0].parts)
    assert _typed(sent[-1].body, "compaction") == [] and sent[-1].status == 200
