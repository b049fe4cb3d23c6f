"""The Bedrock Converse codec on real recorded traffic (tests/fixtures/bedrock; see SOURCES.md).

Expectations come from the recordings (what Bedrock returned, what a client replayed and Bedrock
accepted with 200) and from the ReasoningContentBlock reference and the public threads in
src/thoughtline/routes/bedrock.toml; never from the codec's
own output. Opaque values are compared as bytes.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from botocore.eventstream import EventStreamBuffer

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import Encoded, RequestSpec
from thoughtline.codecs.bedrock import CODEC, claude_key, model_id
from thoughtline.config import ProviderConfig
from thoughtline.errors import ProtocolError, ProviderError, UsageError
from thoughtline.events import ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    dumps,
    fingerprint,
    loads,
    tool_results,
    user,
)
from thoughtline.wire.cache import WireCache

FIXTURES = Path(__file__).parents[1] / "fixtures"
BEDROCK = FIXTURES / "bedrock"

CLAUDE_37 = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
CLAUDE_45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
DEEPSEEK = "us.deepseek.r1-v1:0"
GPT_OSS = "openai.gpt-oss-120b-1:0"
GPT_56 = "us.openai.gpt-5.6-luna"
KIMI_K2 = "moonshot.kimi-k2-thinking"
KIMI_K3 = "moonshotai.kimi-k3"

#: The model each recording came from (SOURCES.md "what it is" column).
WHOLE = {
    "pydantic-ai-bedrock-claude-redacted.i0.response.json": CLAUDE_37,
    "pydantic-ai-bedrock-claude-redacted.i1.response.json": CLAUDE_37,
    "pydantic-ai-bedrock-claude-thinking.i0.response.json": CLAUDE_37,
    "pydantic-ai-bedrock-claude-thinking.i1.response.json": CLAUDE_37,
    "pydantic-ai-bedrock-claude-tool-with-thinking.i0.response.json": CLAUDE_37,
    "pydantic-ai-bedrock-claude-tool-with-thinking.i1.response.json": CLAUDE_37,
    "pydantic-ai-bedrock-deepseek-r1.i0.response.json": DEEPSEEK,
    "pydantic-ai-bedrock-deepseek-r1.i1.response.json": DEEPSEEK,
    "pydantic-ai-bedrock-gpt-oss-reasoning-text-no-signature.i0.response.json": GPT_OSS,
    "pydantic-ai-bedrock-kimi-k2-tool-call.i0.response.json": KIMI_K2,
    "pydantic-ai-bedrock-kimi-k2-tool-call.i1.response.json": KIMI_K2,
    "vercel-amazon-bedrock-reasoning.json": CLAUDE_45,
    "vercel-amazon-bedrock-gpt56-luna-redacted-content.json": GPT_56,
}
STREAMS = {
    "pydantic-ai-bedrock-claude-redacted-stream.i0.response": CLAUDE_37,
    "pydantic-ai-bedrock-claude-thinking-stream.i0.response": CLAUDE_37,
}
CHUNKS = {
    "vercel-amazon-bedrock-reasoning.chunks.txt": CLAUDE_45,
    "vercel-amazon-bedrock-gpt56-luna-redacted-content.chunks.txt": GPT_56,
}


def origin(model: str) -> Origin:
    return Origin(api="bedrock", provider="bedrock", model=model)


def load(name: str) -> Any:
    return orjson.loads((BEDROCK / name).read_bytes())


def frames(name: str) -> list[tuple[str, Any]]:
    """A raw ``.eventstream.bin`` recording parsed by botocore, as the transport yields it."""
    buffer = EventStreamBuffer()
    buffer.add_data((BEDROCK / f"{name}.eventstream.bin").read_bytes())
    return [(m.headers[":event-type"], orjson.loads(m.payload)) for m in buffer]


def decoded_lines(path: Path) -> list[tuple[str, Any]]:
    """``{"<event type>": payload}`` per line (the decoded siblings and vercel chunks)."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            ((kind, payload),) = orjson.loads(line).items()
            out.append((kind, payload))
    return out


def fold(events: list[tuple[str, Any]], model: str) -> tuple[Message, list[Any]]:
    state = CODEC.new_fold(origin(model))
    shown: list[Any] = []
    for kind, payload in events:
        shown.extend(state.add_event(kind, payload))
    assert state.finished
    return state.finish().message, shown


def plan_for(model: str, history: list[Message] | None = None, *, region: str = "",
             verdicts: tuple[Any, ...] = (), fingerprints: frozenset[str] = frozenset()):
    route = CODEC.resolve("bedrock", None, model)
    return replay.plan(route, verdicts, fingerprints=fingerprints, region=region)


def encode(history: list[Message], model: str, **kwargs: Any) -> dict[str, Any]:
    spec_args = {k: kwargs.pop(k) for k in ("tools", "params") if k in kwargs}
    spec = RequestSpec(model=model, **spec_args)
    return dict(CODEC.encode_request(history, plan_for(model, **kwargs), spec).body)


def b(value: Any) -> bytes:
    return orjson.dumps(value)


# --- decode and fold on every recording ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_every_whole_recording_decodes_to_its_blocks(name: str) -> None:
    body = load(name)
    done = CODEC.decode_response(body, origin(WHOLE[name]))
    content = body["output"]["message"]["content"]
    assert len(done.message.parts) == len(content)
    for part, block in zip(done.message.parts, content, strict=True):
        if "text" in block:
            assert isinstance(part, Text) and part.text == block["text"]
        elif "toolUse" in block:
            assert isinstance(part, ToolCall) and part.id == block["toolUse"]["toolUseId"]
            assert part.arguments == b(block["toolUse"]["input"]).decode()
        else:
            assert isinstance(part, Reasoning)
    assert done.finish == {"end_turn": "stop", "tool_use": "tool_calls"}[body["stopReason"]]
    assert done.usage.input_tokens == body["usage"]["inputTokens"]


def test_claude_signed_thinking_is_stored_in_the_shared_anthropic_shape() -> None:
    body = load("pydantic-ai-bedrock-claude-thinking.i0.response.json")
    wire = body["output"]["message"]["content"][0]["reasoningContent"]["reasoningText"]
    part = CODEC.decode_response(body, origin(CLAUDE_37)).message.parts[0]
    assert isinstance(part, Reasoning) and part.kind == "signed" and part.complete
    assert part.signature.encode() == wire["signature"].encode()
    assert part.text.encode() == wire["text"].encode()
    assert not part.native  # neutral fields only: the Anthropic codec can replay it


def test_claude_redacted_content_is_stored_as_the_anthropic_data_string() -> None:
    # SOURCES.md observation 5: redactedContent is base64 of the Anthropic data string.
    body = load("pydantic-ai-bedrock-claude-redacted.i0.response.json")
    wire = body["output"]["message"]["content"][0]["reasoningContent"]["redactedContent"]
    part = CODEC.decode_response(body, origin(CLAUDE_37)).message.parts[0]
    assert isinstance(part, Reasoning) and part.kind == "redacted"
    assert part.data.encode() == base64.b64decode(wire)
    assert part.data.startswith("E")


def test_gpt56_redacted_content_is_kept_verbatim_as_encrypted_reasoning() -> None:
    body = load("vercel-amazon-bedrock-gpt56-luna-redacted-content.json")
    wire = body["output"]["message"]["content"][0]["reasoningContent"]["redactedContent"]
    part = CODEC.decode_response(body, origin(GPT_56)).message.parts[0]
    assert isinstance(part, Reasoning) and part.kind == "encrypted"
    assert part.data.encode() == wire.encode()
    assert base64.b64decode(part.data).startswith(b"rsn_")


def test_unsigned_reasoning_of_other_models_is_readable_text() -> None:
    for name, model in (("pydantic-ai-bedrock-deepseek-r1.i0.response.json", DEEPSEEK),
                        ("pydantic-ai-bedrock-gpt-oss-reasoning-text-no-signature.i0"
                         ".response.json", GPT_OSS)):
        parts = CODEC.decode_response(load(name), origin(model)).message.reasoning
        assert [(p.kind, p.complete, p.signature) for p in parts] == [("text", True, None)]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_raw_event_stream_and_its_decoded_frames_fold_to_the_same_message(name: str) -> None:
    model = STREAMS[name]
    raw, shown = fold(frames(name), model)
    lines, _ = fold(decoded_lines(BEDROCK / f"{name}.eventstream.decoded.jsonl"), model)
    assert dumps(raw) == dumps(lines)
    assert not raw.incomplete
    reasoning = "".join(e.text for e in shown if isinstance(e, ReasoningDelta))
    assert reasoning == "".join(p.text or "" for p in raw.reasoning)
    assert "".join(e.text for e in shown if isinstance(e, TextDelta)) == raw.text


def test_streamed_signature_is_joined_from_its_own_frame() -> None:
    events = frames("pydantic-ai-bedrock-claude-thinking-stream.i0.response")
    message, _ = fold(events, CLAUDE_37)
    signature = next(p["delta"]["reasoningContent"]["signature"] for k, p in events
                     if k == "contentBlockDelta" and "signature" in
                     p["delta"].get("reasoningContent", {}))
    (part,) = message.reasoning
    assert part.kind == "signed" and part.signature.encode() == signature.encode()
    texts = [p["delta"]["reasoningContent"]["text"] for k, p in events
             if k == "contentBlockDelta" and "text" in p["delta"].get("reasoningContent", {})]
    assert part.text == "".join(texts)


def test_streamed_redacted_blocks_keep_their_index_order_and_bytes() -> None:
    events = frames("pydantic-ai-bedrock-claude-redacted-stream.i0.response")
    message, _ = fold(events, CLAUDE_37)
    wire = [p["delta"]["reasoningContent"]["redactedContent"] for k, p in events
            if k == "contentBlockDelta" and "redactedContent" in
            p["delta"].get("reasoningContent", {})]
    assert [getattr(p, "kind", "text") for p in message.parts] == ["redacted", "redacted",
                                                                   "text"]
    assert [base64.b64encode(p.data.encode()).decode() for p in message.reasoning] == wire


@pytest.mark.parametrize("name", sorted(CHUNKS))
def test_vercel_stream_recordings_fold(name: str) -> None:
    message, shown = fold(decoded_lines(BEDROCK / name), CHUNKS[name])
    assert not message.incomplete
    if "gpt56" in name:
        # One redactedContent delta, no contentBlockStart (SOURCES.md observation 6).
        (part,) = message.reasoning
        assert part.kind == "encrypted" and base64.b64decode(part.data).startswith(b"rsn_")
        (call,) = message.tool_calls
        started = [e for e in shown if isinstance(e, ToolCallStarted)]
        assert [(s.id, s.name) for s in started] == [(call.id, call.name)]
        fragments = "".join(e.text for e in shown if isinstance(e, ToolCallDelta))
        assert call.arguments == b(orjson.loads(fragments)).decode()
    else:
        (part,) = message.reasoning
        assert part.kind == "signed" and part.signature.startswith("Ep0C")


def test_tool_input_is_the_same_compact_text_streamed_and_whole() -> None:
    whole = load("vercel-amazon-bedrock-gpt56-luna-redacted-content.json")
    call = CODEC.decode_response(whole, origin(GPT_56)).message.tool_calls[0]
    streamed = CODEC.new_fold(origin(GPT_56))
    streamed.add_event("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
        "toolUseId": call.id, "name": call.name}}})
    text = b(whole["output"]["message"]["content"][1]["toolUse"]["input"]).decode()
    for i in range(0, len(text), 7):
        streamed.add_event("contentBlockDelta", {"contentBlockIndex": 0,
                                                 "delta": {"toolUse": {"input": text[i:i + 7]}}})
    streamed.add_event("messageStop", {"stopReason": "tool_use"})
    assert streamed.finish().message.tool_calls[0].arguments == call.arguments


def test_a_stream_cut_before_the_signature_is_incomplete_and_never_sent_signed() -> None:
    events = frames("pydantic-ai-bedrock-claude-thinking-stream.i0.response")
    cut = [e for e in events if "signature" not in str(e[1].get("delta", ""))][:8]
    state = CODEC.new_fold(origin(CLAUDE_37))
    for kind, payload in cut:
        state.add_event(kind, payload)
    message = state.finish(complete=False).message
    assert message.incomplete and not message.reasoning[0].complete
    history = [user("hi"), message, user("again")]
    assert b"reasoningContent" not in b(encode(history, CLAUDE_37)["messages"])


def test_stream_exceptions_raise_typed_errors() -> None:
    state = CODEC.new_fold(origin(CLAUDE_37))
    with pytest.raises(ProviderError) as error:
        state.add_event("exception:throttlingException", {"message": "Too many requests"})
    assert error.value.status == 429
    with pytest.raises(ProtocolError):
        CODEC.new_fold(origin(CLAUDE_37)).add_event("exception:somethingNew", {"message": "x"})


# --- replaying the recorded requests as bytes ---------------------------------------------------


def _first_prompt(name: str) -> str:
    return load(name)["messages"][0]["content"][0]["text"]


@pytest.mark.parametrize("case", ["claude-thinking", "claude-redacted"])
def test_recorded_claude_follow_up_request_replays_byte_identical(case: str) -> None:
    stem = f"pydantic-ai-bedrock-{case}"
    recorded = load(f"{stem}.i1.request.json")
    answer = CODEC.decode_response(load(f"{stem}.i0.response.json"), origin(CLAUDE_37)).message
    history = [user(_first_prompt(f"{stem}.i0.request.json")), answer,
               user(recorded["messages"][2]["content"][0]["text"])]
    body = encode(history, CLAUDE_37, params={"thinking_budget": 1024})
    assert b(body["messages"]) == b(recorded["messages"])
    assert b(body["additionalModelRequestFields"]) == b(recorded["additionalModelRequestFields"])


def test_recorded_claude_tool_loop_replays_byte_identical() -> None:
    stem = "pydantic-ai-bedrock-claude-tool-with-thinking"
    recorded = load(f"{stem}.i1.request.json")
    answer = CODEC.decode_response(load(f"{stem}.i0.response.json"), origin(CLAUDE_37)).message
    result = recorded["messages"][2]["content"][0]["toolResult"]
    history = [user(_first_prompt(f"{stem}.i0.request.json")), answer,
               tool_results([ToolResult(call_id=result["toolUseId"],
                                        content=result["content"][0]["text"])])]
    tool = recorded["toolConfig"]["tools"][0]["toolSpec"]
    body = encode(history, CLAUDE_37, params={"thinking_budget": 1024},
                  tools=(ToolSpec(name=tool["name"], parameters=tool["inputSchema"]["json"]),))
    assert b(body["messages"]) == b(recorded["messages"])
    assert b(body["toolConfig"]) == b(recorded["toolConfig"])
    assert "anthropic_beta" not in body["additionalModelRequestFields"]  # Claude 3.7: no beta


def test_replay_survives_a_round_trip_through_the_stored_form() -> None:
    stem = "pydantic-ai-bedrock-claude-redacted"
    answer = CODEC.decode_response(load(f"{stem}.i0.response.json"), origin(CLAUDE_37)).message
    fresh = [user("q"), answer, user("again")]
    stored = [loads(dumps(m)) for m in fresh]
    assert b(encode(fresh, CLAUDE_37)) == b(encode(stored, CLAUDE_37))


def test_kimi_k2_tool_use_and_result_replay_as_recorded() -> None:
    stem = "pydantic-ai-bedrock-kimi-k2-tool-call"
    recorded = load(f"{stem}.i1.request.json")
    answer = CODEC.decode_response(load(f"{stem}.i0.response.json"), origin(KIMI_K2)).message
    result = recorded["messages"][2]["content"][0]["toolResult"]
    history = [user(_first_prompt(f"{stem}.i0.request.json")), answer,
               tool_results([ToolResult(call_id=result["toolUseId"],
                                        content=result["content"][0]["text"])])]
    body = encode(history, KIMI_K2)
    # pydantic-ai sent the thinking as <think> text; the unsigned policy sends reasoningText.
    assert b(body["messages"][1]["content"][1]) == b(recorded["messages"][1]["content"][1])
    assert b(body["messages"][2]) == b(recorded["messages"][2])
    assert body["messages"][1]["content"][0] == {"reasoningContent": {"reasoningText": {
        "text": answer.reasoning[0].text}}}


# --- per-model policy ---------------------------------------------------------------------------


def _turns() -> dict[str, Message]:
    def answer(name: str, model: str) -> Message:
        return CODEC.decode_response(load(name), origin(model)).message

    return {
        "claude": answer("pydantic-ai-bedrock-claude-thinking.i0.response.json", CLAUDE_37),
        "claude-redacted": answer("pydantic-ai-bedrock-claude-redacted.i0.response.json",
                                  CLAUDE_37),
        "gpt56": answer("vercel-amazon-bedrock-gpt56-luna-redacted-content.json", GPT_56),
        "gpt-oss": answer("pydantic-ai-bedrock-gpt-oss-reasoning-text-no-signature.i0"
                          ".response.json", GPT_OSS),
    }


def _reasoning_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [block["reasoningContent"] for m in body["messages"] if m["role"] == "assistant"
            for block in m["content"] if "reasoningContent" in block]


def _prior_history(turn: Message) -> list[Message]:
    """``turn`` as a turn before the current loop, followed by a tool loop without reasoning."""
    results = [tool_results([ToolResult(call_id=c.id, content="ok")]) for c in turn.tool_calls]
    return [user("first"), turn, *results, user("second")]


@pytest.mark.parametrize(("target", "expected"), [
    (CLAUDE_37, {"claude": {"reasoningText"}, "claude-redacted": {"redactedContent"},
                 "gpt56": set(), "gpt-oss": set()}),
    (DEEPSEEK, {"claude": set(), "claude-redacted": set(), "gpt56": set(), "gpt-oss": set()}),
    (GPT_56, {"claude": set(), "claude-redacted": set(), "gpt56": {"redactedContent"},
              "gpt-oss": set()}),
    (GPT_OSS, {"claude": {"reasoningText"}, "claude-redacted": set(), "gpt56": set(),
               "gpt-oss": {"reasoningText"}}),
    (KIMI_K3, {"claude": set(), "claude-redacted": set(), "gpt56": set(), "gpt-oss": set()}),
])
def test_turns_before_the_loop_carry_what_the_target_policy_allows(
        target: str, expected: dict[str, set[str]]) -> None:
    for name, turn in _turns().items():
        blocks = _reasoning_blocks(encode(_prior_history(turn), target))
        assert {k for block in blocks for k in block} == expected[name], name
        signed = [blk["reasoningText"] for blk in blocks if "reasoningText" in blk]
        if "claude" not in target:
            assert all("signature" not in item for item in signed)  # never a Claude signature
        else:
            assert all("signature" in item for item in signed)  # never unsigned to Claude


def test_in_loop_turns_are_verbatim_where_the_model_reads_them() -> None:
    turns = _turns()
    gpt = turns["gpt56"]
    history = [user("q"), gpt, tool_results([ToolResult(call_id=gpt.tool_calls[0].id,
                                                        content="ok")])]
    (block,) = _reasoning_blocks(encode(history, GPT_56))
    wire = load("vercel-amazon-bedrock-gpt56-luna-redacted-content.json")
    assert b(block) == b(wire["output"]["message"]["content"][0]["reasoningContent"])
    assert _reasoning_blocks(encode(history, DEEPSEEK)) == []  # rejects any reasoning


def test_signature_only_claude_blocks_carry_an_empty_text() -> None:
    turn = Message(role="assistant", origin=origin(CLAUDE_45), parts=(
        Reasoning(kind="signed", text="", signature="EqwCsig", origin=origin(CLAUDE_45)),
        Text(text="answer")))
    (block,) = _reasoning_blocks(encode([user("q"), turn, user("next")], CLAUDE_45))
    assert b(block) == b'{"reasoningText":{"text":"","signature":"EqwCsig"}}'


def test_anthropic_origin_claude_thinking_replays_on_bedrock_for_the_same_model() -> None:
    anthropic = Origin(api="anthropic", provider="anthropic", model="claude-sonnet-4-5-20250929")
    turn = Message(role="assistant", origin=anthropic, parts=(
        Reasoning(kind="signed", text="t", signature="Esig", origin=anthropic),
        Reasoning(kind="redacted", data="EmRk", origin=anthropic), Text(text="a")))
    blocks = _reasoning_blocks(encode([user("q"), turn, user("n")], CLAUDE_45))
    assert b(blocks) == b([{"reasoningText": {"text": "t", "signature": "Esig"}},
                           {"redactedContent": base64.b64encode(b"EmRk").decode()}])
    # Another Claude model cannot verify it (extended-thinking page: blocks from a different
    # model fail).
    other = "us.anthropic.claude-opus-4-6-v1"
    assert _reasoning_blocks(encode([user("q"), turn, user("n")], other)) == []
    assert claude_key(CLAUDE_45) == claude_key("claude-sonnet-4-5@20250929")


def test_an_assistant_turn_is_never_sent_holding_only_reasoning() -> None:
    only = Message(role="assistant", origin=origin(CLAUDE_45), parts=(
        Reasoning(kind="signed", text="t", signature="Esig", origin=origin(CLAUDE_45)),))
    body = encode([user("a"), only, user("b")], CLAUDE_45)
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert b(body["messages"][0]["content"]) == b'[{"text":"a"},{"text":"b"}]'


def test_conversation_starts_and_ends_with_a_user_message_and_has_no_empty_text() -> None:
    turn = Message(role="assistant", origin=origin(GPT_OSS),
                   parts=(Text(text=""), Text(text="hello")))
    body = encode([Message(role="system", parts=(Text(text="sys"),)), turn], GPT_OSS)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert body["system"] == [{"text": "sys"}]
    assert all(block.get("text", "x") for m in body["messages"] for block in m["content"])


def test_rejected_fingerprints_are_never_sent_again() -> None:
    turn = _turns()["claude"]
    fp = fingerprint("thinking", turn.reasoning[0].signature)
    body = encode(_prior_history(turn), CLAUDE_37, fingerprints=frozenset({fp}))
    assert _reasoning_blocks(body) == []


def test_encoding_never_changes_the_history() -> None:
    turns = list(_turns().values())
    history = [m for t in turns for m in _prior_history(t)]
    before = [dumps(m) for m in history]
    for target in (CLAUDE_37, DEEPSEEK, GPT_56, GPT_OSS, KIMI_K3):
        encode(history, target)
    assert [dumps(m) for m in history] == before


# --- model ids, region-bound reasoning, request fields ------------------------------------------


def test_profile_ids_and_arns_resolve_to_their_model_family() -> None:
    cases = {
        "global.anthropic.claude-opus-4-6-v1": ("claude", "signed"),
        "eu.anthropic.claude-sonnet-4-5-20250929-v1:0": ("claude", "signed"),
        "arn:aws:bedrock:us-east-1::foundation-model/deepseek.r1-v1:0": ("deepseek-r1", "strip"),
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.openai.gpt-5.6-sol":
            ("openai-gpt-5", "redacted-only"),
        "apac.amazon.nova-pro-v1:0": ("nova", "unsigned"),
        "global.moonshotai.kimi-k3": ("kimi-k3", "region-bound"),
        "xai.grok-4": ("xai", "redacted-only"),
        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3":
            ("application-profile", "own"),
    }
    for model, (family, policy) in cases.items():
        profile = CODEC.resolve("bedrock", None, model).profile
        assert (profile.family, profile.policy) == (family, policy), model
    assert model_id("us.deepseek.r1-v1:0").cross_region
    assert not model_id("deepseek.r1-v1:0").cross_region


def _kimi_turn(model: str, region: str) -> Message:
    where = Origin(api="bedrock", provider="bedrock", model=model, region=region)
    return Message(role="assistant", origin=where, parts=(
        Reasoning(kind="encrypted", data="cnNuX2tpbWk=", origin=where),
        ToolCall(id="t1", name="f", arguments="{}")))


@pytest.mark.parametrize(("model", "region", "sent"), [
    ("moonshotai.kimi-k3", "us-east-1", True),
    ("moonshotai.kimi-k3", "us-west-2", False),
    ("global.moonshotai.kimi-k3", "us-east-1", False),
    ("us.moonshotai.kimi-k3", "us-east-1", False),
])
def test_kimi_k3_encrypted_reasoning_stays_in_its_region(model: str, region: str,
                                                        sent: bool) -> None:
    turn = _kimi_turn(model, "us-east-1")
    history = [user("q"), turn, tool_results([ToolResult(call_id="t1", content="ok")])]
    blocks = _reasoning_blocks(encode(history, model, region=region))
    assert (blocks == [{"redactedContent": "cnNuX2tpbWk="}]) is sent


def test_claude_thinking_request_fields_follow_the_model_version() -> None:
    adaptive = encode([user("q")], "global.anthropic.claude-opus-4-6-v1",
                      params={"effort": "high", "max_tokens": 2048})
    assert adaptive["additionalModelRequestFields"] == {
        "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}
    manual = encode([user("q")], CLAUDE_45, params={"temperature": 0.2, "max_tokens": 2048},
                    tools=(ToolSpec(name="f"),))
    assert manual["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2047},
        "anthropic_beta": ["interleaved-thinking-2025-05-14"]}
    assert manual["inferenceConfig"] == {"maxTokens": 2048}  # temperature 1 only
    gpt = encode([user("q")], GPT_56, params={"reasoning_effort": "low"})
    assert gpt["additionalModelRequestFields"] == {"reasoning": {"effort": "low"}}
    oss = encode([user("q")], GPT_OSS, params={"reasoning_effort": "high"})
    recorded = load("pydantic-ai-bedrock-gpt-oss-reasoning-text-no-signature.i0.request.json")
    assert b(oss["additionalModelRequestFields"]) == b(recorded["additionalModelRequestFields"])


# --- endpoint and auth --------------------------------------------------------------------------


def test_endpoint_quotes_the_model_id_and_picks_the_framing() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2"
    provider = ProviderConfig(id="bedrock", api="bedrock", region="eu-west-1")
    whole = CODEC.endpoint(provider, arn, stream=False)
    assert whole.url == ("https://bedrock-runtime.eu-west-1.amazonaws.com/model/arn%3Aaws%3A"
                         "bedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile"
                         "%2Fa1b2/converse")
    assert whole.framing == "json"
    local = ProviderConfig(id="bedrock", api="bedrock", base_url="http://127.0.0.1:9/")
    streamed = CODEC.endpoint(local, CLAUDE_45, stream=True)
    assert streamed.url == f"http://127.0.0.1:9/model/{CLAUDE_45.replace(':', '%3A')}" \
                           "/converse-stream"
    assert streamed.framing == "aws-eventstream"
    assert CODEC.auth_scheme(provider) == "sigv4:bedrock"
    assert registry.codec("bedrock") is CODEC


def test_region_comes_from_config_then_the_aws_environment(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    from thoughtline.platforms import aws_region as region_of

    bare = ProviderConfig(id="bedrock", api="bedrock")
    assert region_of(bare, {"AWS_DEFAULT_REGION": "ap-south-1"}) == "ap-south-1"
    assert region_of(bare, {"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "x"}) == "us-west-2"
    assert region_of(ProviderConfig(id="b", region="eu-central-1"), {"AWS_REGION": "x"}) == \
        "eu-central-1"
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(UsageError):
        CODEC.endpoint(bare, CLAUDE_45, stream=False)


# --- rejections ---------------------------------------------------------------------------------

_WORDINGS = {
    "signature": ("This model doesn't support the reasoningContent.reasoningText.signature field."
                  " Remove reasoningContent.reasoningText.signature and try again."),
    "text": ("This model doesn't support the reasoningContent.reasoningText.text field for "
             "assistant messages. Remove reasoningContent.reasoningText.text and try again."),
    "deepseek": ("User messages cannot contain reasoning content. Please remove the reasoning "
                 "content and try again."),
    "redacted": ("This model doesn't support the reasoningContent.redactedContent field. Remove "
                 "reasoningContent.redactedContent and try again."),
    "region": ('The model returned the following errors: {"error":{"code":"validation_error",'
               '"message":"Encrypted content cannot be used in a different region from the one '
               'that created it."}}'),
}


def _classify(history: list[Message], model: str, message: str, status: int = 400,
              **kwargs: Any):
    plan = plan_for(model, **kwargs)
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=model))
    return CODEC.classify(status, orjson.dumps({"message": message}).decode(), encoded, plan)


def _as_unknown(turn: Message) -> Message:
    """The same turn as if the model behind an application profile had made it."""
    arn = "arn:aws:bedrock:us-east-1:1:application-inference-profile/x"
    where = Origin(api="bedrock", provider="bedrock", model=arn)
    parts = tuple(Reasoning(kind=p.kind, text=p.text, signature=p.signature, data=p.data,
                            origin=where) if isinstance(p, Reasoning) else p for p in turn.parts)
    return Message(role="assistant", origin=where, parts=parts)


@pytest.mark.parametrize(("wording", "turn", "drop"), [
    ("signature", "claude", {"signature"}),
    ("text", "claude", {"reasoningText"}),
    ("deepseek", "claude", {"reasoningContent"}),
    ("region", "claude-redacted", {"redactedContent"}),
    # No public source gives the redacted-content wording; the family's wording
    # naming the field is read the same way (design for both outcomes).
    ("redacted", "claude-redacted", {"redactedContent"}),
])
def test_documented_wordings_teach_one_drop_then_the_retry_carries_less(
        wording: str, turn: str, drop: set[str]) -> None:
    arn = "arn:aws:bedrock:us-east-1:1:application-inference-profile/x"
    history = _prior_history(_as_unknown(_turns()[turn]))
    lesson = _classify(history, arn, _WORDINGS[wording])
    assert lesson is not None and lesson.verdict is not None
    assert lesson.verdict.drop == frozenset(drop) and lesson.notice
    retry = plan_for(arn, verdicts=(lesson.verdict,))
    body = CODEC.encode_request(history, retry, RequestSpec(model=arn)).body
    names = {k for blk in _reasoning_blocks(dict(body)) for k in blk}
    names |= {k for blk in _reasoning_blocks(dict(body)) for k in blk.get("reasoningText", {})}
    assert not names & ({"reasoningText", "signature", "redactedContent"}
                        if drop == {"reasoningContent"} else drop)
    # The same body again teaches nothing: the error surfaces instead of a third request.
    again = CODEC.encode_request(history, retry, RequestSpec(model=arn))
    assert CODEC.classify(400, orjson.dumps({"message": _WORDINGS[wording]}).decode(), again,
                          retry) is None


def test_a_wording_naming_what_was_not_sent_teaches_nothing() -> None:
    assert _classify([user("q")], GPT_OSS, _WORDINGS["signature"]) is None
    assert _classify(_prior_history(_turns()["claude"]), CLAUDE_37, _WORDINGS["deepseek"],
                     status=503) is None


@pytest.mark.parametrize("name", ["bedrock-openai-gpt56-400-unsupported-field-temperature",
                                  "bedrock-claude-400-unsupported-field-s3Uri",
                                  "bedrock-nova-400-extraneous-key-not-permitted"])
def test_recorded_non_reasoning_rejections_are_not_lessons(name: str) -> None:
    # Same wording family as the reasoning rejections, naming a field that is not reasoning.
    folder = FIXTURES / ("bedrock/errors" if "gpt56" in name else "errors")
    body = folder / f"{name}.i{'0' if 'gpt56' in name else '1'}.response.json"
    history = _prior_history(_turns()["claude"])
    plan = plan_for(CLAUDE_37)
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=CLAUDE_37))
    assert CODEC.classify(400, body.read_text(), encoded, plan) is None


def test_invalid_signature_fingerprints_the_named_block() -> None:
    turns = _turns()
    history = [user("a"), turns["claude"], user("b"), turns["claude-redacted"], user("c")]
    plan = plan_for(CLAUDE_37)
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=CLAUDE_37))
    body = orjson.dumps({"message": "messages.1.content.0: Invalid `signature` in `thinking` "
                                    "block"}).decode()
    lesson = CODEC.classify(400, body, encoded, plan)
    assert lesson is not None and lesson.verdict is None
    assert lesson.fingerprints == {fingerprint("thinking", turns["claude"].reasoning[0].signature)}
    retry = plan_for(CLAUDE_37, fingerprints=lesson.fingerprints)
    retried = CODEC.encode_request(history, retry, RequestSpec(model=CLAUDE_37))
    assert [list(blk) for blk in _reasoning_blocks(dict(retried.body))] == [["redactedContent"]]


def test_summary_counts_the_carriers_sent() -> None:
    history = _prior_history(_turns()["claude"])
    plan = plan_for(CLAUDE_37)
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=CLAUDE_37))
    assert isinstance(encoded, Encoded)
    summary = CODEC.summary(encoded)
    assert summary["carriers"] == {"reasoningText": 1, "signature": 1}
    assert summary["assistant_turns"] == 1


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_every_whole_recording_streamed_as_real_frames_folds_to_the_same_message(
        name: str) -> None:
    # The recording re-sent as AWS event-stream bytes (the emulator's framing), parsed by botocore.
    from thoughtline.testing.bedrock_frames import stream_bytes

    body = load(name)
    buffer = EventStreamBuffer()
    buffer.add_data(stream_bytes(body))
    events = [(m.headers[":event-type"], orjson.loads(m.payload)) for m in buffer]
    streamed, _ = fold(events, WHOLE[name])
    whole = CODEC.decode_response(body, origin(WHOLE[name])).message
    assert dumps(streamed) == dumps(whole)


@pytest.mark.parametrize("target", [CLAUDE_37, DEEPSEEK, GPT_56, GPT_OSS, KIMI_K3])
def test_the_wire_cache_gives_the_same_bytes_as_a_fresh_encode_as_the_history_grows(
        target: str) -> None:
    turns = _turns()
    grown: list[Message] = []
    cache = WireCache()
    plan = plan_for(target)
    spec = RequestSpec(model=target)
    steps: list[Message] = [user("first")]
    for turn in turns.values():
        steps.append(turn)
        steps += [tool_results([ToolResult(call_id=c.id, content="ok")])
                  for c in turn.tool_calls]
        steps.append(user("next"))
    for message in steps:
        grown.append(message)
        cached = CODEC.encode_request(grown, plan, spec, cache)
        fresh = CODEC.encode_request(grown, plan, spec)
        assert b(cached.body) == b(fresh.body)
        assert cached.index == fresh.index
    assert len(cache) > 0
    # Earlier bodies are never edited by later requests.
    first = CODEC.encode_request(grown[:3], plan, spec, cache)
    snapshot = b(first.body)
    CODEC.encode_request([*grown, user("more")], plan, spec, cache)
    assert b(first.body) == snapshot


@pytest.mark.parametrize("name", ["vercel-bedrock-openai-gpt56-unknown-parameter-reasoningConfig",
                                  "vercel-bedrock-openai-gpt56-unknown-parameter-reasoning_effort"])
def test_gpt56_unknown_parameter_errors_are_not_reasoning_lessons(name: str) -> None:
    # Request-field complaints (reasoningConfig / reasoning_effort): the codec sends GPT-5.6 its
    # effort as reasoning.effort instead (see the request-fields test); nothing to learn here.
    body = (FIXTURES / "bedrock" / "errors" / f"{name}.json").read_text()
    history = _prior_history(_turns()["gpt56"])
    plan = plan_for(GPT_56)
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=GPT_56))
    assert CODEC.classify(400, body, encoded, plan) is None


def test_a_tool_call_without_an_id_gets_one_unique_per_request() -> None:
    state = CODEC.new_fold(origin(GPT_OSS), seed="a1b2c3d4e5f6a7b8c9")
    state.add_event("contentBlockDelta", {"contentBlockIndex": 0,
                                          "delta": {"toolUse": {"input": "{}"}}})
    state.add_event("messageStop", {"stopReason": "tool_use"})
    (call,) = state.finish().message.tool_calls
    assert call.id == "tooluse_a1b2c3d4e5f6a7b8_0" and call.arguments == "{}"
