"""Readable reasoning from a Responses relay without encryption (issue 28 item 6;
NousResearch/hermes-agent#91104: Kimi on vLLM behind a Responses front returns ``reasoning_text``
and no ``encrypted_content``, and loops on tool calls unless the reasoning item goes back at the
head of its turn). Such a relay has no row of its own: it gets the catch-all row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from responses_support import KEY_ENV, LOOKUP, answer_calls, done_of, store_at, turn

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.openai_responses.encode import encode_message
from thoughtline.config import ProviderConfig
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall
from thoughtline.session import Session
from thoughtline.testing.responses_emulator import ResponsesEmulator


@pytest.fixture
def relay() -> Iterator[ResponsesEmulator]:
    with ResponsesEmulator("readable-relay") as emulator:
        yield emulator


def _at(emu: ResponsesEmulator) -> ProviderConfig:
    return ProviderConfig(id="kimi-relay", api="openai-responses", base_url=emu.base_url,
                          key_env=KEY_ENV, model="kimi-k3")


@pytest.mark.parametrize("stream", [True, False])
def test_readable_reasoning_goes_back_at_the_head_of_its_turn(relay: ResponsesEmulator,
                                                               home: Path, stream: bool) -> None:
    session = Session.create(store_at(home), _at(relay), tools=[LOOKUP])
    assert session.route.row == "default"
    first = done_of(turn(session, "what is the weather in Oslo?", stream=stream))
    assert first.message.tool_calls and first.message.reasoning[0].kind == "text"
    done_of(turn(session, answer_calls(first), stream=stream))
    done_of(turn(session, "and tomorrow?", stream=stream))
    assert all(r.status == 200 for r in relay.received)
    issued = [orjson.dumps(i) for i in relay.issued_items]
    last = relay.received[-1].body["input"]
    sent = [orjson.dumps(i) for i in last if i.get("type") == "reasoning"]
    assert sent == issued[:2]  # both earlier turns' reasoning, exactly as the relay gave it
    for item in relay.issued_items[:2]:  # each heads its turn: right after the input that asked
        at = [orjson.dumps(i) for i in last].index(orjson.dumps(item))
        before = last[at - 1]
        assert before.get("role") == "user" or before.get("type") == "function_call_output"


def test_a_readable_item_that_came_after_its_call_is_moved_to_the_head() -> None:
    codec = registry.codec("openai-responses")
    route = codec.resolve("kimi-relay", "https://relay.example.net/v1", "kimi-k3")
    plan = replay.plan(route, [])
    origin = Origin(api="openai-responses", provider=route.provider, host=route.host,
                    model="kimi-k3")
    readable = {"id": "rs_1", "type": "reasoning", "summary": [],
                "content": [{"type": "reasoning_text", "text": "check the weather tool"}]}
    reference = {"id": "rs_2", "type": "reasoning", "summary": []}  # no text, no data
    message = Message(role="assistant", origin=origin, parts=(
        Text(text="Let me look."),
        Reasoning(kind="text", text="check the weather tool", origin=origin,
                  native={"openai-responses": readable}),
        Reasoning(kind="summary", origin=origin, native={"openai-responses": reference}),
        ToolCall(id="call_1", name="lookup", arguments="{}")))
    items = encode_message(message, plan)
    assert items[0] == readable
    assert [i.get("type") for i in items] == ["reasoning", "message", "function_call"]
