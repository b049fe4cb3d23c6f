"""Behaviours of issue 10 that no test protected (a deliberate bug in each went unnoticed):
``reasoning_details`` replayed as the recorded bytes (key order included), ``WireCache`` prefix
reuse keyed on content, and "replay text is RC first, then R" with two different texts."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from helpers_fixtures import load_json
from helpers_wire import RC, RD, R, assistants, encode_on
from thoughtline import replay
from thoughtline.codecs.openai_chat import WireCache, decode_response, encode_request
from thoughtline.codecs.openai_chat.profile import resolve_chat as resolve
from thoughtline.messages import Message, Origin, Reasoning, Text, user

ORIGIN = Origin(api="openai-chat", provider="openrouter", host="openrouter.ai", model="m")

# Whole (non-streamed) responses carrying reasoning_details; tests/fixtures/SOURCES.md cites them.
RD_RESPONSES = [
    "openrouter/pydantic-ai-openrouter-reasoning-details-encrypted-summary.i1.response.json",
    "openrouter/fantasy-vercel-gateway-gpt5-reasoning-summary-encrypted.i0.response.json",
    "openrouter/pydantic-ai-openrouter-reasoning-details-text.i0.response.json",
]


@pytest.mark.parametrize("rel", RD_RESPONSES)
def test_reasoning_details_replay_as_the_recorded_bytes(rel: str) -> None:
    response: dict[str, Any] = load_json(rel)
    recorded = response["choices"][0]["message"][RD]
    message = decode_response(response, ORIGIN).message
    _, _, body = encode_on([user("q"), message], "openrouter", None, "m")
    (sent,) = assistants(body)
    # Bytes, not dict ==: a re-ordered key inside an item would break a signed/encrypted item
    # and compare equal as dicts.
    assert orjson.dumps(sent[RD]) == orjson.dumps(recorded)


def test_a_reordered_item_is_not_the_recorded_bytes() -> None:
    """The check above can fail: the same item with its keys in another order differs."""
    response: dict[str, Any] = load_json(RD_RESPONSES[0])
    item = response["choices"][0]["message"][RD][0]
    shuffled = dict(reversed(list(item.items())))
    assert shuffled == item and orjson.dumps(shuffled) != orjson.dumps(item)


def _turns(tag: str) -> list[Message]:
    return [user(f"question {tag}"), Message(role="assistant", origin=ORIGIN, parts=(
        Reasoning(kind="text", text=f"thinking {tag}", origin=ORIGIN),
        Text(text=f"answer {tag}")))]


def test_wire_cache_reuses_a_prefix_only_when_its_content_matches() -> None:
    plan = replay.plan(resolve("deepseek", None, "deepseek-reasoner"))
    cache = WireCache()
    first = encode_request(_turns("A"), plan, model="m", cache=cache)
    second = encode_request(_turns("B"), plan, model="m", cache=cache)  # same length, other text
    assert orjson.dumps(second) == orjson.dumps(encode_request(_turns("B"), plan, model="m"))
    assert b"question B" in orjson.dumps(second) and b"question A" not in orjson.dumps(second)
    grown = encode_request([*_turns("A"), user("more")], plan, model="m", cache=cache)
    assert orjson.dumps(grown) == orjson.dumps(
        encode_request([*_turns("A"), user("more")], plan, model="m"))
    assert first != second


def test_replay_text_is_reasoning_content_first_then_reasoning() -> None:
    # A provider sending both flat fields with different texts (no recording shows one, so this
    # one is synthetic): the turn's readable reasoning is reasoning_content's.
    response = {"id": "r1", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "done", RC: "from reasoning_content",
        R: "from reasoning"}}]}
    message = decode_response(response, ORIGIN).message
    assert message.reasoning_text() == "from reasoning_content"
    for provider, carrier in (("deepseek", RC), ("cerebras", R)):
        _, _, body = encode_on([user("q"), message], provider, None, "m")
        (sent,) = assistants(body)
        assert sent[carrier] == "from reasoning_content", provider
    only_r = {"id": "r2", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "done", RC: "  ", R: "from reasoning"}}]}
    assert decode_response(only_r, ORIGIN).message.reasoning_text() == "from reasoning"


def test_kimi_gets_the_thinking_flag_and_never_reasoning_effort_too() -> None:
    # routes/openai-chat.toml: K2.6/K2.7 take `thinking`; `reasoning_effort` is dropped so a
    # relay that 400s on both (hermes-agent PR #34794) never sees them together. K3 models,
    # whose knob *is* reasoning_effort (platform.kimi.ai docs), keep it.
    history = [user("q")]
    for model, thinking, effort in (("kimi-k2.6", True, False), ("kimi-k3", False, True)):
        _, _, body = encode_on(history, "kimi", None, model, params={"reasoning_effort": "high"})
        assert ("thinking" in body, "reasoning_effort" in body) == (thinking, effort), model
