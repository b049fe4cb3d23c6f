"""The client side of the Chat wire (``codecs.openai_chat.client``) on recorded payloads.

A recorded client request parses into canonical turns with arguments and ids exact; a recorded
answer rendered back to a client — whole or as chunks — decodes/folds to the same Message the
upstream's answer did (stream and whole agree), with ``reasoning_content`` on the message and in
the deltas.
"""

from __future__ import annotations

import orjson
import pytest

from helpers_fixtures import fixture, load_json, sse_payloads
from thoughtline.codecs.openai_chat import decode_response
from thoughtline.codecs.openai_chat.client import (
    ChunkWriter,
    ClientRequestError,
    completion_json,
    parse_request,
)
from thoughtline.codecs.openai_chat.fold import fold
from thoughtline.events import Done
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, ToolResult, dumps

ORIGIN = Origin(api="openai-chat", provider="deepseek", host="api.deepseek.com",
                model="deepseek-reasoner")
ROUNDTRIP = "openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip"
STREAM = "openai-compat/pydantic-ai-deepseek-reasoner-stream.i0.response.sse.txt"


def _visible(message: Message) -> Message:
    """The message without origins (a client's copy has none)."""
    parts = []
    for part in message.parts:
        if isinstance(part, Reasoning):
            part = Reasoning(kind=part.kind, text=part.text, complete=part.complete)
        parts.append(part)
    return Message(role=message.role, parts=tuple(parts))


def test_a_recorded_client_request_parses_to_exact_canonical_turns() -> None:
    raw = load_json(f"{ROUNDTRIP}.i1.request.json")
    request = parse_request(raw)
    wire = raw["messages"]
    assert [m.role for m in request.messages] == ["system", "system", "user", "assistant",
                                                  "tool", "assistant", "tool"]
    first = request.messages[3]
    assert first.reasoning_text() == wire[3]["reasoning_content"]
    assert first.text == wire[3]["content"]
    [call] = first.tool_calls
    assert (call.id, call.name, call.arguments) == (
        wire[3]["tool_calls"][0]["id"], "load_capability",
        wire[3]["tool_calls"][0]["function"]["arguments"])
    assert request.messages[5].reasoning == ()  # "" is no reasoning
    assert request.messages[4].parts == (ToolResult(call_id=wire[4]["tool_call_id"],
                                                    content="{}"),)
    assert request.model == raw["model"] and request.stream is False
    assert {t.name for t in request.tools} == {t["function"]["name"] for t in raw["tools"]}
    assert "messages" not in request.params and "tools" not in request.params


def test_consecutive_tool_results_are_one_turn_and_content_lists_are_text() -> None:
    request = parse_request({"model": "m", "stream": True,
                             "stream_options": {"include_usage": True}, "temperature": 0.2,
                             "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text",
                                                                      "text": "b"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "[1]"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"}]})
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[1].text == "ab"
    assert [r.call_id for r in request.messages[3].tool_results] == ["c1", "c2"]
    assert request.include_usage and request.params == {"temperature": 0.2}


@pytest.mark.parametrize("body", [[], {"model": "m"}, {"model": "", "messages": [{}]},
                                  {"model": "m", "messages": [{"role": "robot"}]},
                                  {"model": "m", "messages": [{"role": "user"}], "tools": 3},
                                  {"model": "m", "messages": [{"role": "assistant",
                                                               "tool_calls": [{"id": "x"}]}]}])
def test_invalid_requests_are_refused_by_name(body: object) -> None:
    with pytest.raises(ClientRequestError):
        parse_request(body)


def _render_both(done: Done) -> tuple[Done, Done]:
    ids = {"response_id": "chatcmpl-test", "model": "ds/deepseek-reasoner", "created": 1}
    whole = decode_response(orjson.loads(orjson.dumps(completion_json(done, **ids))), ORIGIN)
    writer = ChunkWriter(**ids, include_usage=True)
    frames = b"".join(f for f in (writer.event(e) for e in _events(done)) if f)
    frames += writer.finish(done)
    streamed = fold(sse_payloads(frames.decode()), ORIGIN)
    return whole, streamed


def _events(done: Done) -> list[object]:
    from thoughtline.events import ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted

    out: list[object] = []
    message = done.message
    text = message.reasoning_text()
    out.extend(ReasoningDelta(text[i:i + 7]) for i in range(0, len(text), 7))
    out.extend(TextDelta(message.text[i:i + 5]) for i in range(0, len(message.text), 5))
    for index, call in enumerate(message.tool_calls):
        out.append(ToolCallStarted(index=index, id=call.id, name=call.name))
        out.extend(ToolCallDelta(index=index, text=call.arguments[i:i + 3])
                   for i in range(0, len(call.arguments), 3))
    return out


@pytest.mark.parametrize("name", [f"{ROUNDTRIP}.i0.response.json",
                                  f"{ROUNDTRIP}.i1.response.json"])
def test_a_recorded_answer_renders_whole_and_streamed_to_the_same_message(name: str) -> None:
    upstream = decode_response(load_json(name), ORIGIN)
    whole, streamed = _render_both(upstream)
    assert dumps(whole.message) == dumps(streamed.message)
    assert dumps(_visible(whole.message)) == dumps(_visible(upstream.message))
    assert whole.finish_reason == streamed.finish_reason == (
        "tool_calls" if upstream.message.tool_calls else "stop")
    assert whole.usage == streamed.usage == upstream.usage


def test_a_recorded_stream_renders_back_with_reasoning_in_the_deltas() -> None:
    upstream = fold(sse_payloads(fixture(STREAM).read_text("utf-8")), ORIGIN)
    assert upstream.message.reasoning_text()
    whole, streamed = _render_both(upstream)
    assert dumps(whole.message) == dumps(streamed.message) == dumps(upstream.message)


def test_tool_calls_without_a_streamed_id_are_sent_whole_at_the_end() -> None:
    call = ToolCall(id="call_tl_made_up_at_the_end", name="f", arguments='{"x": 1}')
    done = Done(message=Message(role="assistant", parts=(Text(text="ok"), call)),
                usage=decode_response(load_json(f"{ROUNDTRIP}.i0.response.json"),
                                      ORIGIN).usage, finish_reason="tool_calls")
    from thoughtline.events import ToolCallDelta, ToolCallStarted

    writer = ChunkWriter(response_id="r", model="m", created=0)
    assert writer.event(ToolCallStarted(index=0, id="", name="f")) is None
    assert writer.event(ToolCallDelta(index=0, text='{"x": 1}')) is None
    folded = fold(sse_payloads(writer.finish(done).decode()), ORIGIN)
    assert [(c.id, c.arguments) for c in folded.message.tool_calls] == [
        (call.id, call.arguments)]
