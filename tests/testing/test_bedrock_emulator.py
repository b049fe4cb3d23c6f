"""The Bedrock emulator speaks real Converse: botocore parses its frames, SigV4 is required, and
each model family's documented rules are enforced with the real error texts."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import httpx
import orjson
import pytest
from botocore.eventstream import EventStreamBuffer

from bedrock.aws_env import KEYS, fake_aws
from thoughtline.testing.bedrock_emulator import REDACTION_TRIGGER, BedrockEmulator
from thoughtline.testing.bedrock_frames import event_frame, exception_frame
from thoughtline.testing.bedrock_rules import Values, check_replay, check_shape
from thoughtline.testing.signing import Signer
from thoughtline.transport import HttpTransport, Target
from thoughtline.transport.auth import auth_for

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VALUES = Values(Signer())


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch):
    fake_aws(monkeypatch)
    with BedrockEmulator(credentials=KEYS) as emu:
        yield emu


def _target(emu: BedrockEmulator, model: str, *, stream: bool) -> Target:
    from urllib.parse import quote

    suffix = "converse-stream" if stream else "converse"
    return Target(url=f"{emu.endpoint_url}/model/{quote(model, safe='')}/{suffix}",
                  auth=auth_for("sigv4:bedrock", None, region="us-east-1"),
                  framing="aws-eventstream" if stream else "json", provider="bedrock")


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


async def _both(emu: BedrockEmulator, model: str, body: dict[str, Any]):
    transport = HttpTransport()
    try:
        whole = await transport.post_json(_target(emu, model, stream=False), orjson.dumps(body))
        events = [e async for e in transport.stream_events(_target(emu, model, stream=True),
                                                           orjson.dumps(body))]
    finally:
        await transport.aclose()
    return whole, events


def test_signed_requests_get_claude_thinking_whole_and_as_real_event_stream_frames(
        emulator: BedrockEmulator) -> None:
    whole, events = asyncio.run(_both(emulator, CLAUDE, {"messages": [_user("hi")]}))
    item = whole["output"]["message"]["content"][0]["reasoningContent"]["reasoningText"]
    assert VALUES.signature_ok(CLAUDE, item["text"], item["signature"])
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    signature = [p["delta"]["reasoningContent"]["signature"] for k, p in events
                 if k == "contentBlockDelta" and "signature" in p["delta"].get(
                     "reasoningContent", {})]
    assert signature == [item["signature"]]
    for record in emulator.received:
        assert record.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
        assert "/us-east-1/bedrock/aws4_request" in record.headers["authorization"]
    assert [r.path.rsplit("/", 1)[-1] for r in emulator.received] == ["converse",
                                                                      "converse-stream"]


def test_an_unsigned_request_is_refused(emulator: BedrockEmulator) -> None:
    response = httpx.post(f"{emulator.endpoint_url}/model/{CLAUDE}/converse",
                          json={"messages": [_user("hi")]})
    assert response.status_code == 403
    assert response.json() == {"message": "Missing Authentication Token"}


def test_the_redaction_trigger_returns_redacted_content(emulator: BedrockEmulator) -> None:
    whole, _ = asyncio.run(_both(emulator, CLAUDE, {"messages": [_user(REDACTION_TRIGGER)]}))
    wire = whole["output"]["message"]["content"][0]["reasoningContent"]["redactedContent"]
    assert base64.b64decode(wire).startswith(b"Eo") and VALUES.redacted_ok(CLAUDE, wire)


def test_frames_parse_with_botocore_including_exceptions() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(event_frame("messageStart", {"role": "assistant"}) +
                    exception_frame("throttlingException", "slow down"))
    first, second = list(buffer)
    assert first.headers[":event-type"] == "messageStart"
    assert orjson.loads(first.payload) == {"role": "assistant"}
    assert second.headers[":message-type"] == "exception"
    assert second.headers[":exception-type"] == "throttlingException"


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [*blocks, {"text": "answer"}]}


def _with(model: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [_user("q"), _assistant(*blocks), _user("again")]}


def _text(text: str, signature: str | None = None) -> dict[str, Any]:
    item = {"text": text} if signature is None else {"text": text, "signature": signature}
    return {"reasoningContent": {"reasoningText": item}}


def _message(model: str, body: dict[str, Any]) -> str | None:
    rejection = check_shape(body) or check_replay(model, body, VALUES, region="us-east-1")
    return None if rejection is None else rejection.message


def test_each_family_rejects_what_its_documentation_says() -> None:
    signed = _text("t", VALUES.claude_signature(CLAUDE, "t"))
    assert _message(CLAUDE, _with(CLAUDE, signed)) is None
    assert _message(CLAUDE, _with(CLAUDE, _text("t"))).endswith("thinking.signature: Field "
                                                                 "required")
    assert "Invalid `signature`" in _message(CLAUDE, _with(CLAUDE, _text("edited", signed[
        "reasoningContent"]["reasoningText"]["signature"])))
    other = "us.anthropic.claude-opus-4-6-v1"
    assert "Invalid `signature`" in _message(other, _with(other, signed))  # another model's
    assert _message("us.deepseek.r1-v1:0", _with("", _text("t"))).startswith(
        "User messages cannot contain reasoning content.")
    gpt = "us.openai.gpt-5.6-luna"
    assert "reasoningContent.reasoningText.text field for assistant messages" in _message(
        gpt, _with(gpt, _text("t")))
    own = {"reasoningContent": {"redactedContent": VALUES.encrypted(gpt, "")}}
    assert _message(gpt, _with(gpt, own)) is None
    oss = "openai.gpt-oss-120b-1:0"
    assert "reasoningContent.reasoningText.signature" in _message(oss, _with(oss, _text("t", "")))
    assert _message(oss, _with(oss, _text("t"))) is None
    assert "signature" in _message("amazon.nova-pro-v1:0", _with("", _text("t", "")))
    kimi = {"reasoningContent": {"redactedContent": VALUES.encrypted("moonshotai.kimi-k3",
                                                                     "us-east-1")}}
    assert _message("moonshotai.kimi-k3", _with("", kimi)) is None
    assert "different region" in _message("global.moonshotai.kimi-k3", _with("", kimi))


def test_conversation_shape_rules() -> None:
    assert "start with a user message" in _message(CLAUDE, {"messages": [
        _assistant(), _user("x")]})
    assert "end with a user message" in _message(CLAUDE, {"messages": [_user("x"),
                                                                      _assistant()]})
    assert "alternate" in _message(CLAUDE, {"messages": [_user("x"), _user("y")]})
    assert "is blank" in _message(CLAUDE, {"messages": [_user(" ")]})
    only = {"messages": [_user("q"), {"role": "assistant", "content": [_text(
        "t", VALUES.claude_signature(CLAUDE, "t"))]}, _user("n")]}
    assert "prefill" in _message(CLAUDE, only)
    no_text = {"reasoningContent": {"reasoningText": {"signature": "x"}}}
    assert "Either 'text' or 'redactedContent' must be set" in _message(CLAUDE, _with(
        CLAUDE, no_text))


def test_claude_tool_loop_must_start_with_its_thinking() -> None:
    use = {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}
    result = {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [
        {"text": "ok"}], "status": "success"}}]}
    body = {"messages": [_user("q"), {"role": "assistant", "content": [use]}, result],
            "additionalModelRequestFields": {"thinking": {"type": "adaptive"}}}
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in _message(
        CLAUDE, body)
    signed = _text("t", VALUES.claude_signature(CLAUDE, "t"))
    body["messages"][1] = {"role": "assistant", "content": [signed, use]}
    assert _message(CLAUDE, body) is None


def test_injected_failures_and_records(emulator: BedrockEmulator) -> None:
    emulator.fail_next(400, "User messages cannot contain reasoning content.")
    with pytest.raises(Exception) as error:
        asyncio.run(_both(emulator, CLAUDE, {"messages": [_user("hi")]}))
    assert getattr(error.value, "status", None) == 400
    assert emulator.received[0].status == 400 and emulator.accepted() == []


def test_the_signature_is_recomputed_and_a_changed_body_or_key_is_refused(
        emulator: BedrockEmulator) -> None:
    import httpx as _httpx

    target = _target(emulator, CLAUDE, stream=False)
    signed = _httpx.Request("POST", target.url, content=orjson.dumps({"messages": [_user("a")]}),
                            headers={"content-type": "application/json"})
    flow = target.auth.sync_auth_flow(signed)
    request = next(flow)
    ok = _httpx.post(target.url, content=request.content, headers=dict(request.headers))
    assert ok.status_code == 200
    edited = _httpx.post(target.url, content=orjson.dumps({"messages": [_user("b")]}),
                         headers=dict(request.headers))
    assert edited.status_code == 403
    assert edited.json()["message"].startswith("The request signature we calculated does not")
    with BedrockEmulator(credentials=("AKIAOTHER", "another-secret")) as other:
        moved = _httpx.post(other.endpoint_url + target.url.split(emulator.endpoint_url)[1],
                            content=request.content, headers=dict(request.headers))
    assert moved.status_code == 403


@pytest.mark.parametrize("name", ["pydantic-ai-bedrock-claude-thinking-stream",
                                  "pydantic-ai-bedrock-claude-redacted-stream"])
def test_hand_built_frames_match_the_recorded_aws_bytes(name: str) -> None:
    # Each recorded frame rebuilt from its headers and payload gives AWS's exact bytes (prelude,
    # header encoding and both CRCs), so what botocore parses from the emulator is what it
    # parses from AWS.
    from pathlib import Path

    from thoughtline.testing.bedrock_frames import frame

    raw = (Path(__file__).parents[1] / "fixtures" / "bedrock" /
           f"{name}.i0.response.eventstream.bin").read_bytes()
    buffer = EventStreamBuffer()
    buffer.add_data(raw)
    rebuilt = b"".join(frame(dict(m.headers), m.payload) for m in buffer)
    assert rebuilt == raw
