"""Compaction on the other APIs' emulators: Gemini native (signed parts; whole exchanges kept) and
OpenAI Responses (encrypted reasoning items). The kept turns' items reach the emulator byte for
byte, and the route accepts the compacted history."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from compaction_support import TOOLS, run

from thoughtline import Session, ToolResult, config
from thoughtline.compaction import compress, is_checkpoint
from thoughtline.store.base import Store
from thoughtline.testing.gemini_emulator import GeminiEmulator
from thoughtline.testing.responses_emulator import ResponsesEmulator


@dataclass(frozen=True)
class Api:
    name: str
    start: Callable[[], Any]
    provider: Callable[[Any], config.ProviderConfig]
    key_env: str
    items: Callable[[Any], list[bytes]]  # the model's own items in a request body, as bytes


def _before(entries: list[Any], marker: str) -> list[Any]:
    """The entries before the first one whose JSON mentions ``marker`` (all when none does)."""
    for index, entry in enumerate(entries):
        if marker in orjson.dumps(entry).decode():
            return entries[:index]
    return entries


def _gemini_items(body: Any, until: str = "\0") -> list[bytes]:
    return [orjson.dumps(part) for content in _before(list(body.get("contents", ())), until)
            if content.get("role") == "model" for part in content["parts"]]


def _responses_items(body: Any, until: str = "\0") -> list[bytes]:
    return [orjson.dumps(item) for item in _before(list(body.get("input", ())), until)
            if isinstance(item, dict) and item.get("type") in ("reasoning", "function_call")]


APIS = (
    Api("gemini", lambda: GeminiEmulator(),
        lambda emu: config.provider("gemini", base_url=emu.base_url,
                                    model="gemini-3-pro-preview"),
        "GEMINI_API_KEY", _gemini_items),
    Api("responses", lambda: ResponsesEmulator("openai"),
        lambda emu: config.ProviderConfig(id="openai-responses", api="openai-responses",
                                          base_url=emu.base_url, key_env="TL_CMP_RESPONSES_KEY",
                                          model="gpt-5.5"),
        "TL_CMP_RESPONSES_KEY", _responses_items),
)


@pytest.fixture(params=APIS, ids=[a.name for a in APIS])
def api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    spec: Api = request.param
    monkeypatch.setenv(spec.key_env, "fake-compaction-key")
    emulator = spec.start()
    emulator.start()
    try:
        yield spec, emulator
    finally:
        emulator.stop()


def test_compaction_keeps_the_models_own_items_and_stays_accepted(api: Any,
                                                                  store: Store) -> None:
    spec, emu = api

    async def scenario() -> tuple[Session, Any]:
        session = Session.create(store, spec.provider(emu), tools=TOOLS)
        for i in range(5):
            done = await session.send(f"Question {i}: what is the weather in city {i}?")
            calls = done.message.tool_calls
            if calls:
                await session.send([ToolResult(call_id=c.id, content=f"sunny, {20 + i} C")
                                    for c in calls])
        await session.send("status?")
        result = await compress(session, keep=5)
        await session.send("and now?")
        await session.aclose()
        return session, result

    start = len(emu.received)
    session, result = run(scenario())
    sent = emu.received[start:]
    assert all(r.status == 200 for r in sent)
    assert result.compacted and is_checkpoint(session.history[0])
    before = set(spec.items(sent[-3].body))  # the last request before compaction ("status?")
    kept = spec.items(sent[-1].body, "status?")  # the kept turns before that question
    assert len(kept) >= 2, "the compacted request carries too few of the model's items"
    assert all(item in before for item in kept)  # each exactly as it went before
    if spec.name == "gemini":  # whole exchanges: the kept tail starts at a user turn
        assert session.history[1].role == "user" and not session.history[1].tool_results
