"""The Gemini-compat emulator's Gemini 2.5 replies follow the recording, not invention: no
``reasoning_content``, one message-level signature, calls without their own signature. The
recording is ``tests/fixtures/gemini-openai-compat/pydantic-ai-gemini25-openai-compat-extra-
content-thought-signature.i0.response.json`` (see tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from helpers_fixtures import load_json
from thoughtline import ProviderConfig, Session, open_store
from thoughtline.codecs.openai_chat import decode_response, fold
from thoughtline.messages import Origin, ToolResult, ToolSpec
from thoughtline.testing import ChatEmulator

RECORDING = ("gemini-openai-compat/"
             "pydantic-ai-gemini25-openai-compat-extra-content-thought-signature.i0.response.json")
TOOLS = [{"type": "function", "function": {"name": "get_current_time", "description": "now",
                                            "parameters": {"type": "object", "properties": {}}}}]
ORIGIN = Origin(api="openai-chat", provider="gemini-openai", model="gemini-2.5-pro")


@pytest.fixture(scope="module")
def emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("gemini-openai", require_auth=False) as emulator:
        yield emulator


def ask(emu: ChatEmulator, *, stream: bool) -> Any:
    body = {"model": "gemini-2.5-pro", "stream": stream, "tools": TOOLS,
            "messages": [{"role": "user", "content": "what time is it?"}]}
    response = httpx.post(f"{emu.base_url}/chat/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    if not stream:
        return response.json()
    return [orjson.loads(line[6:]) for line in response.text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def shape(value: Any) -> Any:
    """Keys and value types, recursively: the shape, not the content."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def test_the_whole_reply_has_the_recorded_shape(emu: ChatEmulator) -> None:
    recorded = load_json(RECORDING)["choices"][0]["message"]
    ours = ask(emu, stream=False)["choices"][0]["message"]
    assert shape(ours) == shape(recorded)
    assert "reasoning_content" not in ours
    assert ours["thought_signature"] == ours["extra_content"]["google"]["thought_signature"]
    assert "extra_content" not in ours["tool_calls"][0] and ours["tool_calls"][0]["id"] == ""


def test_streamed_and_whole_replies_fold_to_the_same_message(emu: ChatEmulator) -> None:
    whole = decode_response(ask(emu, stream=False), ORIGIN).message
    streamed = fold(ask(emu, stream=True), ORIGIN).message
    assert orjson.dumps(streamed.native) == orjson.dumps(whole.native)
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == \
        [(c.name, c.arguments) for c in whole.tool_calls]


def test_a_tool_loop_on_gemini_25_replays_the_signature(tmp_path: Path,
                                                        emu: ChatEmulator) -> None:
    store = open_store(tmp_path / "state.db", tmp_path)
    provider = ProviderConfig(id="gemini-openai", base_url=emu.base_url, model="gemini-2.5-pro")

    async def loop() -> None:
        session = Session.create(store, provider, tools=[ToolSpec(name="get_current_time")])
        try:
            done = await session.send("what time is it?")
            [call] = done.message.tool_calls
            await session.send([ToolResult(call_id=call.id, content="noon")])
        finally:
            await session.aclose()

    start = len(emu.received)
    try:
        asyncio.run(loop())
    finally:
        store.close()
    first, second = emu.received[start:]
    assert (first.status, second.status) == (200, 200)
    [replayed] = [m for m in second.body["messages"] if m["role"] == "assistant"]
    signature = replayed["extra_content"]["google"]["thought_signature"]
    assert signature  # replayed, and the emulator verified it (status 200 above)
    assert "reasoning_content" not in replayed or replayed["reasoning_content"].strip() == ""
