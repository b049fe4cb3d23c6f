"""The client side of the Messages wire (``codecs.anthropic.client``) on recorded payloads.

Recorded Claude Code requests (tests/fixtures/clients) parse into canonical turns in their order —
system blocks first, a turn-scoped ``role: "system"`` message in its place, signed, unsigned,
redacted and minted thinking told apart — with per-API parameters and the session the client
names. A recorded answer rendered back to a client, whole or as SSE events, reads back (through
the Anthropic decoder and fold) as the same turn: real signatures byte for byte, other reasoning
signed with the minted value.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from helpers_fixtures import fixture, load_json, sse_payloads
from thoughtline.codecs import registry
from thoughtline.codecs.anthropic import decode_response
from thoughtline.codecs.anthropic.client import (
    MINT_PREFIX,
    MessageStreamWriter,
    error_frame,
    error_json,
    message_json,
    parse_request,
)
from thoughtline.codecs.anthropic.fold import fold as anthropic_fold
from thoughtline.codecs.face import ClientRequestError
from thoughtline.codecs.openai_chat import decode_response as chat_decode
from thoughtline.events import Done
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, ToolResult

CLAUDE = Origin(api="anthropic", provider="anthropic", model="claude-sonnet-4-20250514")
DEEPSEEK = Origin(api="openai-chat", provider="deepseek", model="deepseek-reasoner")
MINTED = MINT_PREFIX + "AAAA.turn"


def _recorded(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in
            fixture(f"clients/{name}.requests.jsonl").read_bytes().splitlines() if line]


def _parse(name: str, index: int) -> Any:
    record = _recorded(name)[index]
    return parse_request(record["body"], record["headers"])


# --- requests -------------------------------------------------------------------------------------


def test_claude_code_request_parses_in_order_with_system_in_place() -> None:
    parsed = _parse("claude_code_run1", 1)
    roles = [m.role for m in parsed.messages]
    assert roles == ["system", "user", "system", "assistant", "tool"]
    top = parsed.messages[0]
    assert [p.native.get("anthropic", {}).get("cache_control") for p in top.parts] == [
        None, {"type": "ephemeral"}, {"type": "ephemeral"}]
    turn_scoped = parsed.messages[2]
    assert turn_scoped.native["anthropic"]["in_place"] is True
    assert turn_scoped.native["anthropic"]["output_config"] == {"effort": "medium"}
    assistant = parsed.messages[3]
    thinking, call = assistant.parts
    assert thinking == Reasoning(kind="signed", text="I should run a probe command first.",
                                 signature="MOCKSIG_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==")
    assert isinstance(call, ToolCall) and call.id == "toolu_mock_72bb9d41aa6f"
    assert orjson.loads(call.arguments) == {"command": "echo thoughtline-probe",
                                            "description": "probe"}
    (result,) = parsed.messages[4].parts
    assert result == ToolResult(call_id="toolu_mock_72bb9d41aa6f", content="thoughtline-probe",
                                is_error=False)
    assert parsed.minted == ()
    assert parsed.stream is True and parsed.model == "claude-opus-5-5"
    assert {t.name for t in parsed.tools} >= {"Bash"}


def test_claude_code_session_and_headers() -> None:
    record = _recorded("claude_code_run1")[1]
    parsed = parse_request(record["body"], record["headers"])
    assert parsed.session_hint == record["headers"]["X-Claude-Code-Session-Id"]
    passed = parsed.headers_for["anthropic"]
    assert passed["anthropic-beta"] == record["headers"]["anthropic-beta"]
    assert passed["anthropic-version"] == "2023-06-01"
    # Without the header the session comes from metadata.user_id (a JSON string).
    headers = {k: v for k, v in record["headers"].items() if k != "X-Claude-Code-Session-Id"}
    again = parse_request(record["body"], headers)
    assert again.session_hint == orjson.loads(record["body"]["metadata"]["user_id"])["session_id"]
    body = {**record["body"], "metadata": {"user_id": "not json"}}
    assert parse_request(body, headers).session_hint == ""


def test_parameters_per_target_api() -> None:
    record = _recorded("claude_code_run1")[1]
    parsed = parse_request(record["body"], record["headers"])
    own = parsed.params_to("anthropic")
    for key in ("thinking", "context_management", "metadata", "max_tokens"):
        assert own[key] == record["body"][key]
    assert own["reasoning_effort"] == "medium" and "output_config" not in own
    assert "system" not in own and "tools" not in own  # canonical turns and tools carry them
    chat = parsed.params_to("openai-chat")
    assert chat == {"max_tokens": 128000, "reasoning_effort": "medium"}
    assert set(parsed.dropped_to("openai-chat")) == {"thinking", "context_management",
                                                     "metadata", "cache_control"}
    assert parsed.params_to("openai-responses") == chat
    assert "tool_choice" not in parsed.params_to("gemini")
    body = {**record["body"], "tool_choice": {"type": "tool", "name": "Bash"},
            "stop_sequences": ["END"], "temperature": 1}
    mapped = parse_request(body).params_to("openai-chat")
    assert mapped["tool_choice"] == {"type": "function", "function": {"name": "Bash"}}
    assert mapped["stop"] == ["END"] and mapped["temperature"] == 1
    assert parse_request(body).params_to("openai-responses").get("stop") is None


def test_unsigned_redacted_and_minted_thinking() -> None:
    unsigned = _parse("claude_code_run3_unsigned", 1).messages[3]
    assert unsigned.parts[0] == Reasoning(kind="text", text=unsigned.parts[0].text)
    redacted = _parse("claude_code_run4_redacted", 1).messages[3]
    kinds = [p.kind if isinstance(p, Reasoning) else type(p).__name__ for p in redacted.parts]
    assert kinds == ["signed", "redacted", "ToolCall"]
    assert redacted.parts[1].data
    record = _recorded("claude_code_run1")[1]
    body = orjson.loads(orjson.dumps(record["body"]))
    body["messages"][2]["content"][0]["signature"] = MINTED
    parsed = parse_request(body)
    (minted,) = parsed.minted
    assert minted.value == MINTED and parsed.messages[minted.message].role == "assistant"
    assert parsed.messages[minted.message].parts[0] == Reasoning(
        kind="text", text="I should run a probe command first.")


def test_resume_and_stripped_history_parse() -> None:
    resumed = _parse("claude_code_run2_resume", 1)
    assistants = [m for m in resumed.messages if m.role == "assistant"]
    assert len(assistants) == 3
    assert all(isinstance(m.parts[0], Reasoning) and m.parts[0].signature for m in assistants)
    stripped = _parse("claude_code_run6_reject_signature", 2).messages
    assert [type(p) for p in stripped[3].parts] == [ToolCall]


def test_user_blocks_kept_verbatim() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}
    content = [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                "content": [{"type": "text", "text": "boom"}, image]},
               {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}}, image]
    parsed = parse_request({"model": "m", "messages": [{"role": "user", "content": content}]})
    tool, user = parsed.messages
    assert tool.parts == (ToolResult(call_id="t1", content="boom", is_error=True),)
    assert tool.native["anthropic"]["content"] == content
    assert user.parts[0] == Text(text="look", native={"anthropic": {
        "cache_control": {"type": "ephemeral"}}})
    assert user.parts[1].native["anthropic"] == image
    assert parsed.dropped_to("gemini") == ("cache_control", "image blocks")
    assert parsed.dropped_to("anthropic") == ()


@pytest.mark.parametrize(("body", "param"), [
    ([], None),
    ({"messages": [{"role": "user", "content": "hi"}]}, "model"),
    ({"model": "m", "messages": []}, "messages"),
    ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
    ({"model": "m", "messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
    ({"model": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]},
     "messages[0].content[0]"),
    ({"model": "m", "system": 5, "messages": [{"role": "user", "content": "x"}]}, "system"),
    ({"model": "m", "tools": [{}], "messages": [{"role": "user", "content": "x"}]}, "tools[0]"),
])
def test_bad_requests_name_what_is_wrong(body: Any, param: str | None) -> None:
    with pytest.raises(ClientRequestError) as caught:
        parse_request(body)
    assert caught.value.param == param


# --- answers --------------------------------------------------------------------------------------


def _events(frames: bytes) -> list[tuple[str, Any]]:
    out = []
    for chunk in frames.decode().split("\n\n"):
        if not chunk.strip():
            continue
        name, data = chunk.split("\n", 1)
        assert name.startswith("event: ") and data.startswith("data: ")
        out.append((name[7:], orjson.loads(data[6:])))
    return out


def _render_stream(events: list[Any], done: Done, minted: str = "") -> list[tuple[str, Any]]:
    writer = MessageStreamWriter(response_id="msg_1", model="client-model", minted=minted)
    frames = [writer.start()]
    frames.extend(f for f in map(writer.event, events) if f)
    frames.append(writer.finish(done))
    return _events(b"".join(frames))


def _upstream_events(api: str, origin: Origin, rel: str) -> tuple[list[Any], Done]:
    fold = registry.codec(api).new_fold(origin)
    events: list[Any] = []
    for payload in sse_payloads(fixture(rel).read_text("utf-8")):
        events.extend(fold.add_event(payload.get("type", "") if api == "anthropic" else "",
                                     payload))
    return events, fold.finish()


def _blocks(message: Message) -> list[Any]:
    return [(type(p).__name__, getattr(p, "kind", None), getattr(p, "text", None),
             getattr(p, "signature", None), getattr(p, "data", None),
             getattr(p, "arguments", None)) for p in message.parts]


@pytest.mark.parametrize("rel", [
    "anthropic/fantasy-anthropic-thinking-tool-use-stream.i0.response.sse.txt",
    "anthropic/pydantic-ai-anthropic-redacted-thinking-stream.i0.response.sse.txt",
    "anthropic/pydantic-ai-anthropic-sonnet5-empty-thinking-signature-only-stream"
    ".i0.response.sse.txt",
])
def test_anthropic_answer_streams_back_byte_for_byte(rel: str) -> None:
    events, done = _upstream_events("anthropic", CLAUDE, rel)
    rendered = _render_stream(events, done, MINTED)
    names = [name for name, _ in rendered]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta",
                                                                      "message_stop"]
    assert rendered[-2][1]["delta"]["stop_reason"] == done.finish_reason
    again = anthropic_fold(rendered, CLAUDE)
    assert _blocks(again.message) == _blocks(done.message)
    assert MINT_PREFIX not in orjson.dumps(rendered).decode()
    whole = message_json(done, response_id="msg_1", model="m", minted=MINTED)
    assert _blocks(decode_response(whole, CLAUDE).message) == _blocks(done.message)


def test_other_reasoning_is_signed_with_the_minted_value() -> None:
    events, done = _upstream_events(
        "openai-chat", DEEPSEEK, "openai-compat/pydantic-ai-deepseek-reasoner-stream"
        ".i0.response.sse.txt")
    rendered = _render_stream(events, done, MINTED)
    again = anthropic_fold(rendered, CLAUDE).message
    thought = done.message.reasoning_text()
    assert thought and again.reasoning_text() == thought
    assert [p.signature for p in again.reasoning] == [MINTED]
    assert again.text == done.message.text
    body = load_json("openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip"
                     ".i0.response.json")
    whole = chat_decode(body, DEEPSEEK)
    answer = message_json(whole, response_id="msg_2", model="m", minted=MINTED)
    kinds = [b["type"] for b in answer["content"]]
    assert kinds[0] == "thinking" and answer["content"][0]["signature"] == MINTED
    assert "tool_use" in kinds and answer["stop_reason"] == "tool_use"
    calls = [b for b in answer["content"] if b["type"] == "tool_use"]
    assert [orjson.loads(c.arguments) for c in whole.message.tool_calls] == [
        c["input"] for c in calls]
    streamed = anthropic_fold(_render_stream([], whole, MINTED), CLAUDE).message
    assert [c.id for c in streamed.tool_calls] == [c.id for c in whole.message.tool_calls]


def test_opaque_only_reasoning_gets_one_empty_minted_block() -> None:
    hidden = Message(role="assistant", origin=Origin(api="openai-responses", provider="openai"),
                     parts=(Reasoning(kind="encrypted", data="gAAAA"), Text(text="Done.")))
    done = Done(message=hidden, usage=_usage(), finish_reason="completed", finish="stop")
    content = message_json(done, response_id="m", model="m", minted=MINTED)["content"]
    assert content == [{"type": "thinking", "thinking": "", "signature": MINTED},
                       {"type": "text", "text": "Done."}]
    streamed = _render_stream([], done, MINTED)
    blocks = [p["content_block"]["type"] for n, p in streamed if n == "content_block_start"]
    assert blocks == ["thinking"]  # text is streamed live; here no delta came


def _usage() -> Any:
    from thoughtline.messages import Usage

    return Usage(input_tokens=10, output_tokens=3, cached_tokens=4)


def test_errors_in_messages_shape() -> None:
    assert error_json("no such model", status=404) == {
        "type": "error", "error": {"type": "not_found_error", "message": "no such model"}}
    assert error_json("slow down", status=429)["error"]["type"] == "rate_limit_error"
    assert error_json("bad gateway", status=502)["error"]["type"] == "api_error"
    ((name, payload),) = _events(error_frame("upstream failed", status=503))
    assert name == "error" and payload["error"] == {"type": "api_error",
                                                    "message": "upstream failed"}


# --- what an Anthropic upstream receives ---------------------------------------------------------


def test_anthropic_upstream_gets_the_clients_blocks_in_place() -> None:
    from thoughtline import replay
    from thoughtline.codecs.base import RequestSpec

    record = _recorded("claude_code_run1")[1]
    body = orjson.loads(orjson.dumps(record["body"]))
    body["messages"][3]["content"].append({"type": "text", "text": "a reminder"})
    parsed = parse_request(body, record["headers"])
    codec = registry.codec("anthropic")
    model = "claude-opus-5-5"
    plan = replay.plan(codec.resolve("anthropic", None, model), ())
    history = [replace_origin(m) for m in parsed.messages]
    sent = orjson.loads(orjson.dumps(codec.encode_request(
        history, plan, RequestSpec(model=model, tools=parsed.tools,
                                   params=parsed.params_to("anthropic"))).body))
    assert sent["system"] == body["system"] and sent["tools"] == body["tools"]
    assert [m["role"] for m in sent["messages"]] == ["user", "system", "assistant", "user"]
    assert sent["messages"][0] == body["messages"][0]
    assert sent["messages"][1] == body["messages"][1]  # in place, output_config kept
    assert sent["messages"][3] == body["messages"][3]  # tool_result + text, cache_control kept
    for key in ("thinking", "context_management", "output_config", "metadata", "max_tokens"):
        assert sent[key] == body[key]
    assert MINT_PREFIX not in orjson.dumps(sent).decode()


def replace_origin(message: Message) -> Message:
    """A client turn as the gateway sends it after rehydration found nothing (signed blocks are
    kept only with an Anthropic origin)."""
    if message.role != "assistant":
        return message
    return Message(role="assistant", parts=tuple(
        Reasoning(kind=p.kind, text=p.text, signature=p.signature, data=p.data, origin=CLAUDE)
        if isinstance(p, Reasoning) else p for p in message.parts), origin=CLAUDE)
