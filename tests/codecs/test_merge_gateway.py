"""The Merge Gateway carrier (issue 28 item 6): its OpenAI surface returns
the reasoning in ``message.thinking`` with ``message.thinking_signature``
(docs.merge.dev/merge-gateway/capabilities/reasoning, NousResearch/hermes-agent#101392), and both go
back as received to the model that made them. A route row and a native carrier of the route table.

SYNTHETIC: no public recording of a Merge Gateway answer exists; the bodies below follow the
documented field names and the Chat Completions envelope."""

from __future__ import annotations

import orjson

from thoughtline import replay
from thoughtline.codecs.openai_chat import NS_MERGE, decode_response, encode_request, fold
from thoughtline.codecs.openai_chat.profile import resolve_chat as resolve
from thoughtline.messages import Origin, user

MODEL = "anthropic/claude-sonnet-5"
BASE = "https://api-gateway.merge.dev/v1/openai"
THINKING = "The user wants the weather; call the lookup tool."
SIGNATURE = "EqQBCkgIARABGAIiQL3Zsig"
ORIGIN = Origin(api="openai-chat", provider="merge-gateway", host="api-gateway.merge.dev",
                model=MODEL)

SYNTHETIC_WHOLE = {
    "id": "chatcmpl-merge-1", "object": "chat.completion", "model": MODEL,
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "thinking": THINKING,
        "thinking_signature": SIGNATURE,
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "lookup", "arguments": "{\"q\": \"Oslo\"}"}}]}}],
    "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
}


def _chunks() -> list[dict]:
    head = {"id": "chatcmpl-merge-1", "object": "chat.completion.chunk", "model": MODEL}
    deltas = [{"role": "assistant", "thinking": THINKING[:20]}, {"thinking": THINKING[20:]},
              {"thinking_signature": SIGNATURE},
              {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                               "function": {"name": "lookup", "arguments": ""}}]},
              {"tool_calls": [{"index": 0, "function": {"arguments": "{\"q\": \"Oslo\"}"}}]}]
    out = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
           for d in deltas]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return out


def _assistant_wire(route_provider: str, base: str | None, model: str, turn: object) -> dict:
    route = resolve(route_provider, base, model)
    body = encode_request([user("weather in Oslo?"), turn, user("and tomorrow?")],
                          replay.plan(route), model=model)  # type: ignore[list-item]
    (wire,) = [m for m in orjson.loads(orjson.dumps(body))["messages"]
               if m["role"] == "assistant"]
    return wire


def test_the_route_row_and_its_carrier() -> None:
    route = resolve("merge-gateway", BASE, MODEL)
    assert route.row == "merge-gateway" and route.profile.carriers == frozenset()
    assert route.profile.native == frozenset({NS_MERGE})
    assert resolve("openai", None, "gpt-5").profile.native == frozenset()


def test_thinking_is_read_whole_and_streamed_alike() -> None:
    whole = decode_response(SYNTHETIC_WHOLE, ORIGIN).message
    streamed = fold(_chunks(), ORIGIN).message
    assert whole.reasoning_text() == THINKING
    assert whole.native[NS_MERGE] == {"thinking": THINKING, "thinking_signature": SIGNATURE}
    assert streamed.parts == whole.parts and streamed.native == whole.native


def test_thinking_and_its_signature_go_back_as_received_to_their_own_model_only() -> None:
    turn = decode_response(SYNTHETIC_WHOLE, ORIGIN).message
    own = _assistant_wire("merge-gateway", BASE, MODEL, turn)
    assert own["thinking"] == THINKING and own["thinking_signature"] == SIGNATURE
    assert not {"reasoning_content", "reasoning", "reasoning_details"} & set(own)
    # another model behind the same gateway: the signature stays home
    other = _assistant_wire("merge-gateway", BASE, "openai/gpt-5.5", turn)
    assert "thinking_signature" not in other and "thinking" not in other
    # another route reads the readable text in its own carrier, never the Merge fields
    elsewhere = _assistant_wire("openrouter", None, MODEL, turn)
    assert elsewhere["reasoning_content"] == THINKING
    assert "thinking" not in elsewhere and "thinking_signature" not in elsewhere
