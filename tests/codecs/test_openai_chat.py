"""The Chat Completions codec on real recorded traffic (tests/fixtures, sources in SOURCES.md).

Expectations come from the fixtures themselves (what the provider sent, what a client replayed and
the provider accepted) and from the providers' public docs and recorded replays
(tests/fixtures/SOURCES.md); never from the codec's own output.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_fixtures import (
    assistant_messages,
    chat_response_fixtures,
    chat_stream_fixtures,
    load_json,
    replay_request_for,
    sse_payloads,
    stream_chunks,
)
from helpers_wire import (
    ALL_CARRIERS,
    COPILOT_KEYS,
    OUR_KEYS,
    RC,
    RD,
    R,
    assistants,
    encode_on,
    walk_keys,
)
from thoughtline import replay
from thoughtline.codecs.openai_chat import (
    GEMINI_DUMMY_SIGNATURE,
    StreamFold,
    WireCache,
    decode_response,
    encode_message,
    encode_request,
    fold,
    wire_summary,
)
from thoughtline.codecs.openai_chat.profile import resolve_chat as resolve
from thoughtline.errors import ProtocolError
from thoughtline.events import Done, ReasoningDelta, TextDelta, ToolCallStarted
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    dumps,
    loads,
    system,
    user,
)

ORIGIN = Origin(api="openai-chat", provider="fixture", host="recorded.example", model="m")
RESPONSES = chat_response_fixtures()
STREAMS = chat_stream_fixtures()


def _choice_message(body: dict[str, Any]) -> dict[str, Any]:
    return body["choices"][0]["message"]


def _decode(rel: str) -> Message:
    return decode_response(load_json(rel), ORIGIN).message


def _fold(rel: str) -> Done:
    return fold(stream_chunks(rel), ORIGIN)


def _flat(a: Any, b: Any) -> str:
    """The contract's replay text: the first non-blank of the stored RC, then R."""
    for value in (a, b):
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _plain_reasoning(message: Message) -> list[Reasoning]:
    return [p for p in message.reasoning if not p.native]


def _calls(message: Message) -> list[tuple[str, str, str]]:
    return [(c.id, c.name, c.arguments) for c in message.tool_calls]


def test_the_fixture_set_is_complete() -> None:
    # Guards the parametrizations below against a silently empty glob.
    assert len(RESPONSES) >= 25
    assert len(STREAMS) >= 14
    assert any(r.startswith("gemini-openai-compat/") for r in RESPONSES)
    assert any(s.endswith(".chunks.txt") for s in STREAMS)
    assert any(s.endswith(".sse.txt") for s in STREAMS)


# --- every whole response decodes -----------------------------------------------------------------

@pytest.mark.parametrize("rel", RESPONSES)
def test_every_whole_response_decodes(rel: str) -> None:
    body = load_json(rel)
    done = decode_response(body, ORIGIN)
    wire = _choice_message(body)
    message = done.message

    assert message.role == "assistant"
    assert message.origin == ORIGIN and not message.incomplete
    content = wire.get("content")
    if isinstance(content, list):
        expected_text = "".join(c["text"] for c in content if c.get("type") == "text")
    else:
        expected_text = content or ""
    assert message.text == expected_text

    flat = _flat(wire.get(RC), wire.get(R))
    plain = _plain_reasoning(message)
    if flat:
        assert [(p.kind, p.text) for p in plain] == [("text", flat)]
    items = wire.get(RD) or []
    structured = [p for p in message.reasoning if "openrouter" in p.native]
    assert [p.native["openrouter"] for p in structured] == items

    recorded_calls = wire.get("tool_calls") or []
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in recorded_calls]
    for call, raw in zip(message.tool_calls, recorded_calls, strict=True):
        assert call.id == raw["id"] or (raw["id"] == "" and call.id)  # "" ids get a stable one

    usage = body.get("usage") or {}
    assert done.usage.input_tokens == (usage.get("prompt_tokens") or 0)
    assert done.usage.output_tokens == (usage.get("completion_tokens") or 0)
    assert done.finish_reason == body["choices"][0].get("finish_reason")
    # the canonical turn stores and reloads exactly
    assert loads(dumps(message)) == message


# --- every stream folds ---------------------------------------------------------------------------

def _deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c["delta"] for chunk in chunks for c in chunk.get("choices") or ()
            if c.get("index", 0) == 0 and isinstance(c.get("delta"), dict)]


@pytest.mark.parametrize("rel", STREAMS)
def test_every_stream_folds(rel: str) -> None:
    chunks = stream_chunks(rel)
    assert chunks, rel
    state = StreamFold(ORIGIN)
    events = [e for chunk in chunks for e in state.add(chunk)]
    done = state.finish()
    message = done.message
    deltas = _deltas(chunks)

    def joined(key: str) -> str:
        return "".join(d[key] for d in deltas if isinstance(d.get(key), str))

    assert message.text == joined("content")
    flat = _flat(joined(RC), joined(R))
    if flat:
        assert [p.text for p in _plain_reasoning(message)] == [flat]

    arguments: dict[int, str] = {}
    names: dict[int, str] = {}
    for delta in deltas:
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments[call["index"]] = arguments.get(call["index"], "") + (
                function.get("arguments") or "")
            names.setdefault(call["index"], function.get("name") or "")
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        (names[i], arguments[i]) for i in sorted(arguments)]

    # The neutral deltas shown while streaming add up to the stored turn.
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == message.text
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == \
        message.reasoning_text()
    assert [e.name for e in events if isinstance(e, ToolCallStarted)] == \
        [c.name for c in message.tool_calls]

    finishes = [c["finish_reason"] for chunk in chunks for c in chunk.get("choices") or ()
                if c.get("finish_reason")]
    assert done.finish_reason == (finishes[-1] if finishes else None)


@pytest.mark.parametrize("rel", STREAMS)
def test_fold_equals_decode_of_its_own_wire_message(rel: str) -> None:
    state = StreamFold(ORIGIN)
    for chunk in stream_chunks(rel):
        state.add(chunk)
    folded = state.finish()
    whole = {"id": state.response_id, "object": "chat.completion",
             "choices": [{"index": 0, "message": state.wire_message(),
                          "finish_reason": state.finish_reason}],
             "usage": state.usage}
    whole = orjson.loads(orjson.dumps(whole))  # a real JSON document, as if received whole
    assert decode_response(whole, ORIGIN) == folded


def test_sse_framing_comments_and_done() -> None:
    text = (": OPENROUTER PROCESSING\n\n"
            'data: {"a": 1}\n\n'
            ": another comment\n"
            'data: {"b":\n'
            'data: 2}\n\n'
            "event: ignored\n"
            "data: [DONE]\n\n"
            'data: {"after": "done"}\n\n')
    assert sse_payloads(text) == [{"a": 1}, {"b": 2}]


# --- DeepSeek -------------------------------------------------------------------------------------

def test_deepseek_reasoning_text_is_the_fixtures_reasoning_content() -> None:
    body = load_json("openai-compat/vercel-deepseek-reasoning.json")
    message = decode_response(body, ORIGIN).message
    assert message.reasoning_text() == _choice_message(body)[RC]
    assert message.text == _choice_message(body)["content"]
    assert decode_response(body, ORIGIN).usage.reasoning_tokens == \
        body["usage"]["completion_tokens_details"]["reasoning_tokens"]


def test_deepseek_stream_reasoning_and_text() -> None:
    chunks = stream_chunks("openai-compat/pydantic-ai-deepseek-reasoner-stream.i0.response.sse.txt")
    message = fold(chunks, ORIGIN).message
    deltas = _deltas(chunks)
    assert message.reasoning_text() == "".join(d.get(RC) or "" for d in deltas)
    assert message.text == "".join(d.get("content") or "" for d in deltas)
    assert message.reasoning_text() and message.text


def test_deepseek_tool_call_stream() -> None:
    message = _fold("openai-compat/vercel-deepseek-tool-call.chunks.txt").message
    (call,) = message.tool_calls
    assert call.name == "weather"
    assert "location" in orjson.loads(call.arguments)
    assert message.reasoning_text()


# --- what we send back equals what the provider accepted ------------------------------------------

# response fixture -> (route we would send it to, assistant index in the recorded next request,
#                      the carrier fields the recorded replay used)
REPLAYS: dict[str, tuple[tuple[str, str | None, str], int, tuple[str, ...]]] = {
    "openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i0.response.json":
        (("deepseek", None, "deepseek-reasoner"), 0, (RC,)),
    "openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i1.response.json":
        (("deepseek", None, "deepseek-reasoner"), 2, (RC,)),
    "openai-compat/fantasy-zai-glm47-reasoning-tool.i0.response.json":
        (("zai", None, "glm-4.7-flash"), 0, (RC,)),
    "openai-compat/pydantic-ai-zai-glm-preserved-thinking.i0.response.json":
        (("zai", None, "glm-4.7"), 0, (RC,)),
    "openai-compat/fantasy-xai-grok3mini-reasoning-tool.i0.response.json":
        (("xai", "https://api.x.ai/v1", "grok-3-mini"), 0, (RC,)),
    "openai-compat/pydantic-ai-ollama-cloud-reasoning-tool.i0.response.json":
        (("ollama-cloud", "https://ollama.com/v1", "gpt-oss:20b"), 0, (R,)),
    # Cerebras and Crusoe accepted `reasoning`; compared on a route that reads it (vLLM family).
    "openai-compat/pydantic-ai-cerebras-reasoning-multiturn.i0.response.json":
        (("vllm", None, "gpt-oss-120b"), 0, (R,)),
    "openai-compat/pydantic-ai-crusoe-reasoning-tool.i0.response.json":
        (("vllm", None, "zai/GLM-5.2"), 0, (R,)),
    "openai-compat/fantasy-llamacpp-gpt-oss-reasoning-content-stream.i0.response.sse.txt":
        (("llamacpp", "http://127.0.0.1:8080/v1", "openai/gpt-oss-20b"), 0, (RC,)),
    "openai-compat/fantasy-avian-kimi-reasoning-stream.i0.response.sse.txt":
        (("custom", "https://api.avian.io/v1", "moonshotai/kimi-k2.5"), 0, (RC,)),
    "openrouter/fantasy-openrouter-anthropic-thinking-tool-stream.i0.response.sse.txt":
        (("openrouter", None, "anthropic/claude-haiku-4.5"), 0, (R, RD)),
}


def _turn(rel: str) -> Message:
    return _fold(rel).message if rel.endswith(".sse.txt") else _decode(rel)


@pytest.mark.parametrize("rel", list(REPLAYS))
def test_replay_equals_the_recorded_accepted_request(rel: str) -> None:
    (provider, url, model), index, fields = REPLAYS[rel]
    request_rel = replay_request_for(rel)
    assert request_rel is not None
    recorded = assistant_messages(load_json(request_rel))[index]
    turn = _turn(rel)
    _, _, body = encode_on([user("q"), turn], provider, url, model)
    (ours,) = assistants(body)
    for field in fields:
        assert ours[field] == recorded[field], field
    if isinstance(recorded.get("content"), str) and recorded["content"].strip():
        assert ours["content"] == recorded["content"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in ours.get("tool_calls") or ()] == \
        [(c["id"], c["function"]["name"], c["function"]["arguments"])
         for c in recorded.get("tool_calls") or ()]


def test_deepseek_rc_we_send_equals_the_i1_request() -> None:
    rel = "openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i0.response.json"
    recorded = assistant_messages(load_json(replay_request_for(rel) or ""))[0]
    _, _, body = encode_on([user("q"), _decode(rel)], "deepseek", None, "deepseek-reasoner")
    (ours,) = assistants(body)
    assert ours[RC] == recorded[RC] == _choice_message(load_json(rel))[RC]
    assert R not in ours and RD not in ours


# --- OpenRouter / Vercel AI Gateway: reasoning_details --------------------------------------------

ANTHROPIC_STREAM = ("openrouter/"
                    "fantasy-openrouter-anthropic-thinking-tool-stream.i0.response.sse.txt")


def test_openrouter_anthropic_stream_folds_to_one_signed_item() -> None:
    chunks = stream_chunks(ANTHROPIC_STREAM)
    fragments = [item for d in _deltas(chunks) for item in d.get(RD) or ()]
    (signature,) = [f["signature"] for f in fragments if f.get("signature")]
    text = "".join(f.get("text") or "" for f in fragments)

    message = fold(chunks, ORIGIN).message
    (signed,) = [p for p in message.reasoning if p.native]
    assert signed.kind == "signed"
    assert signed.signature == signature
    assert signed.text == text
    item = signed.native["openrouter"]
    assert item["signature"] == signature and item["text"] == text
    assert (item["type"], item["format"], item["index"]) == \
        ("reasoning.text", "anthropic-claude-v1", 0)


def test_openrouter_rd_we_send_equals_the_recorded_i1_items() -> None:
    recorded = assistant_messages(load_json(replay_request_for(ANTHROPIC_STREAM) or ""))[0]
    _, _, body = encode_on([user("q"), _fold(ANTHROPIC_STREAM).message], "openrouter", None,
                           "anthropic/claude-haiku-4.5")
    (ours,) = assistants(body)
    assert ours[RD] == recorded[RD]
    assert ours[R] == recorded[R]
    assert ours[RC] == recorded[R]  # a route reading both gets the same text in both


@pytest.mark.parametrize(("provider", "url", "model"), [
    ("groq", None, "x"), ("deepseek", None, "deepseek-reasoner"), ("openai", None, "gpt-5"),
    ("gemini-openai", None, "gemini-3-pro"), ("copilot", None, "claude-sonnet-4.5"),
    ("custom", "http://localhost:8000/v1", "x"),
])
def test_signed_items_never_reach_a_route_without_rd(provider: str, url: str | None,
                                                     model: str) -> None:
    message = _fold(ANTHROPIC_STREAM).message
    (signed,) = [p for p in message.reasoning if p.native]
    _, _, body = encode_on([user("q"), message], provider, url, model)
    raw = orjson.dumps(body)
    assert signed.signature is not None and signed.signature.encode() not in raw
    assert RD not in assistants(body)[0]


GEMINI_GATEWAY = ("openrouter/"
                  "fantasy-vercel-gateway-gemini3-reasoning-encrypted-stream.i0.response.sse.txt")


def test_vercel_gateway_gemini_stream_text_and_encrypted_items_share_an_index() -> None:
    chunks = stream_chunks(GEMINI_GATEWAY)
    fragments = [item for d in _deltas(chunks) for item in d.get(RD) or ()]
    (data,) = [f["data"] for f in fragments if f.get("type") == "reasoning.encrypted"]

    message = fold(chunks, ORIGIN).message
    items = [p.native["openrouter"] for p in message.reasoning if p.native]
    assert [i["type"] for i in items] == ["reasoning.text", "reasoning.encrypted"]
    assert items[0]["index"] == items[1]["index"]
    encrypted = [p for p in message.reasoning if p.kind == "encrypted"]
    assert [p.data for p in encrypted] == [data]
    assert items[0]["text"] == "".join(
        f.get("text") or "" for f in fragments if f.get("type") == "reasoning.text")


def test_vercel_gateway_gemini_replay_contains_the_recorded_items() -> None:
    recorded = assistant_messages(load_json(replay_request_for(GEMINI_GATEWAY) or ""))[0]
    _, _, body = encode_on([user("q"), _fold(GEMINI_GATEWAY).message], "ai-gateway", None,
                           "google/gemini-3-pro-preview")
    (ours,) = assistants(body)
    # The array is replayed unmodified (openrouter.ai/docs/guides/best-practices/reasoning-tokens);
    # the recorded client sent a subset of it.
    for item in recorded[RD]:
        assert item in ours[RD]
    assert [i["type"] for i in ours[RD]] == ["reasoning.text", "reasoning.encrypted"]
    assert "extra_content" not in ours  # a gateway never gets the native Gemini slot
    assert all("extra_content" not in c for c in ours["tool_calls"])


GPT5 = "openrouter/fantasy-vercel-gateway-gpt5-reasoning-summary-encrypted.i0.response.json"


def test_gpt5_summary_and_encrypted_items_verbatim() -> None:
    body = load_json(GPT5)
    items = _choice_message(body)[RD]
    message = decode_response(body, ORIGIN).message
    structured = [p for p in message.reasoning if p.native]
    assert [p.kind for p in structured] == ["summary", "encrypted"]
    assert structured[0].summary == items[0]["summary"]
    assert structured[1].data == items[1]["data"]
    for part, item in zip(structured, items, strict=True):
        assert part.native["openrouter"] == item
        assert list(part.native["openrouter"]) == list(item)  # key order kept
        assert {"id", "format", "index"} <= part.native["openrouter"].keys()

    _, _, wire_body = encode_on([user("q"), message], "ai-gateway", None, "openai/gpt-5")
    (ours,) = assistants(wire_body)
    assert ours[RD] == items
    recorded = assistant_messages(load_json(replay_request_for(GPT5) or ""))[0]
    for mine, theirs in zip(ours[RD], recorded[RD], strict=True):
        assert {k: mine[k] for k in theirs} == theirs


@pytest.mark.parametrize("rel", [
    "openrouter/pydantic-ai-openrouter-reasoning-details-text.i0.response.json",
    "openrouter/pydantic-ai-openrouter-thinking-high.i0.response.json",
])
def test_openrouter_signed_text_item(rel: str) -> None:
    body = load_json(rel)
    (item,) = _choice_message(body)[RD]
    message = decode_response(body, ORIGIN).message
    (signed,) = [p for p in message.reasoning if p.native]
    assert signed.kind == "signed"
    assert (signed.text, signed.signature) == (item["text"], item["signature"])
    assert message.reasoning_text() == _choice_message(body)[R]


def test_openrouter_encrypted_stream_has_no_readable_reasoning() -> None:
    rel = "openrouter/pydantic-ai-openrouter-stream-reasoning-encrypted.i0.response.sse.txt"
    message = _fold(rel).message
    (encrypted,) = message.reasoning
    assert encrypted.kind == "encrypted" and encrypted.data
    assert message.reasoning_text() == ""
    _, _, body = encode_on([user("q"), message], "openrouter", None, "openai/o3")
    (ours,) = assistants(body)
    # No readable reasoning: no RC/R outside the must-echo tier; the encrypted item verbatim.
    assert RC not in ours and R not in ours
    assert ours[RD] == [encrypted.native["openrouter"]]


def test_openrouter_encrypted_summary_whole_response() -> None:
    rel = "openrouter/pydantic-ai-openrouter-reasoning-details-encrypted-summary.i1.response.json"
    body = load_json(rel)
    message = decode_response(body, ORIGIN).message
    data = [i["data"] for i in _choice_message(body)[RD] if i["type"] == "reasoning.encrypted"]
    assert [p.data for p in message.reasoning if p.kind == "encrypted"] == data


# --- Gemini's OpenAI-compatible endpoint ----------------------------------------------------------

GEMINI_COMPAT = ("gemini-openai-compat/"
                 "pydantic-ai-gemini25-openai-compat-extra-content-thought-signature.i0.response.json")


def test_gemini_compat_extra_content_is_kept_on_the_message() -> None:
    body = load_json(GEMINI_COMPAT)
    message = decode_response(body, ORIGIN).message
    google = _choice_message(body)["extra_content"]["google"]
    assert message.native["google"] == google
    (call,) = message.tool_calls
    assert call.id and call.id == decode_response(body, ORIGIN).message.tool_calls[0].id
    assert call.name == "get_current_time"


def test_gemini_compat_signature_goes_back_only_to_gemini() -> None:
    body = load_json(GEMINI_COMPAT)
    message = decode_response(body, ORIGIN).message
    google = _choice_message(body)["extra_content"]["google"]
    history = [user("What is the current time?"), message,
               Message(role="tool", parts=(ToolResult(call_id=message.tool_calls[0].id,
                                                      content="Noon"),))]
    _, _, ours_body = encode_on(history, "gemini-openai", None, "gemini-2.5-pro")
    (ours,) = assistants(ours_body)
    assert ours["extra_content"] == {"google": google}
    assert ours["tool_calls"][0]["id"] == ours_body["messages"][2]["tool_call_id"]
    assert "thought_signature" not in ours  # the 2025 top-level copy is stored, never sent
    for provider, model in [("openai", "gpt-5"), ("openrouter", "google/gemini-2.5-pro"),
                            ("deepseek", "deepseek-reasoner"), ("copilot", "gemini-2.5-pro")]:
        _, _, other = encode_on(history, provider, None, model)
        assert google["thought_signature"].encode() not in orjson.dumps(other), provider
        assert "extra_content" not in set(walk_keys(other)), provider


# SYNTHETIC: the Gemini 3 per-tool-call placement has no recording (SOURCES.md "Gaps"); this body
# is hand-written from ai.google.dev/gemini-api/docs/openai (thought signatures on tool calls).
SYNTHETIC_GEMINI3_TOOL_SIGNATURE = {
    "id": "synthetic-gemini3-1",
    "object": "chat.completion",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [
            {"id": "function-call-1", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"},
             "extra_content": {"google": {"thought_signature": "CiQB0e2Kb+synthetic/sig=="}}},
            {"id": "function-call-2", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}},
        ]}}],
}


def test_gemini3_tool_call_signature_round_trips_on_gemini_only() -> None:
    message = decode_response(SYNTHETIC_GEMINI3_TOOL_SIGNATURE, ORIGIN).message
    first, second = message.tool_calls
    assert first.native["google"] == {"thought_signature": "CiQB0e2Kb+synthetic/sig=="}
    assert not second.native
    _, _, body = encode_on([user("q"), message], "gemini-openai", None, "gemini-3-pro-preview")
    calls = assistants(body)[0]["tool_calls"]
    signature = {"google": {"thought_signature": "CiQB0e2Kb+synthetic/sig=="}}
    assert calls[0]["extra_content"] == signature
    assert "extra_content" not in calls[1]  # parallel calls after the first need none
    _, _, other = encode_on([user("q"), message], "openrouter", None, "google/gemini-3-pro")
    assert all("extra_content" not in c for c in assistants(other)[0]["tool_calls"])


def test_foreign_tool_calls_get_the_documented_dummy_on_gemini() -> None:
    turn = decode_response(load_json(
        "openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i1.response.json"),
        ORIGIN).message
    assert len(turn.tool_calls) == 2
    _, _, body = encode_on([user("q"), turn], "gemini-openai", None, "gemini-3-pro-preview")
    calls = assistants(body)[0]["tool_calls"]
    assert calls[0]["extra_content"] == {"google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}
    assert "extra_content" not in calls[1]
    _, _, elsewhere = encode_on([user("q"), turn], "deepseek", None, "deepseek-reasoner")
    assert GEMINI_DUMMY_SIGNATURE.encode() not in orjson.dumps(elsewhere)


# --- Mistral thinking chunks, reasoning-only fields -----------------------------------------------

MISTRAL = "openai-compat/pydantic-ai-mistral-magistral-thinking-chunks.i1.response.json"


def test_mistral_thinking_chunks() -> None:
    body = load_json(MISTRAL)
    thinking, text = _choice_message(body)["content"]
    message = decode_response(body, ORIGIN).message
    (reasoning,) = message.reasoning
    assert reasoning.text == "".join(c["text"] for c in thinking["thinking"])
    assert reasoning.native == {"mistral": thinking}
    assert message.text == text["text"]
    _, _, wire_body = encode_on([user("q"), message], "mistral", None, "magistral-medium-latest")
    (ours,) = assistants(wire_body)
    assert ours == {"role": "assistant", "content": text["text"]}  # strict: nothing else


def test_mistral_thinking_chunks_stream() -> None:
    body = load_json(MISTRAL)
    thinking, text = _choice_message(body)["content"]
    pieces = thinking["thinking"][0]["text"]
    cut = len(pieces) // 2
    # Magistral streams thinking as content-chunk lists and the answer as plain strings.
    deltas: list[Any] = [
        {"role": "assistant", "content": [{"type": "thinking",
                                           "thinking": [{"type": "text", "text": pieces[:cut]}]}]},
        {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": pieces[cut:]}]}]},
        {"content": text["text"][:10]},
        {"content": text["text"][10:]},
    ]
    chunks = [{"id": "mistral-1", "choices": [{"index": 0, "delta": d}]} for d in deltas]
    message = fold(chunks, ORIGIN).message
    assert message == decode_response(body, ORIGIN).message


@pytest.mark.parametrize("rel", [
    "openai-compat/pydantic-ai-groq-reasoning.i1.response.json",
    "openai-compat/vercel-groq-qwen3-reasoning.json",
    "openai-compat/pydantic-ai-cerebras-reasoning-multiturn.i0.response.json",
])
def test_reasoning_field_only_providers_and_their_strict_route(rel: str) -> None:
    body = load_json(rel)
    message = decode_response(body, ORIGIN).message
    assert message.reasoning_text() == _choice_message(body)[R]
    provider = "groq" if "groq" in rel else "cerebras"
    _, _, wire_body = encode_on([user("q"), message], provider, None, "m")
    (ours,) = assistants(wire_body)
    if provider == "groq":
        assert set(ours) == {"role", "content"}
        return
    # Cerebras reads `reasoning` back: what we send equals the replay it accepted (i1, 200).
    recorded = load_json(rel.replace("i0.response", "i1.request"))
    (accepted,) = [m for m in recorded["messages"] if m["role"] == "assistant"]
    assert set(ours) == {"role", "content", R}
    assert ours[R] == accepted[R]


def test_dashscope_qwen_whole_and_stream() -> None:
    body = load_json("openai-compat/vercel-alibaba-qwen-reasoning.json")
    message = decode_response(body, ORIGIN).message
    assert message.reasoning_text() == _choice_message(body)[RC]
    streamed = _fold("openai-compat/vercel-alibaba-qwen-reasoning.chunks.txt").message
    assert streamed.reasoning_text() and streamed.text
    _, _, wire_body = encode_on([user("q"), message], "dashscope", None, "qwen3.6-plus")
    assert wire_body["preserve_thinking"] is True
    assert assistants(wire_body)[0][RC] == _choice_message(body)[RC]


def test_zai_request_keeps_thinking_and_replays_rc() -> None:
    rel = "openai-compat/fantasy-zai-glm47-reasoning-tool.i0.response.json"
    _, _, body = encode_on([user("q"), _decode(rel)], "zai", None, "glm-4.7")
    assert body["thinking"] == {"type": "enabled", "clear_thinking": False}
    assert assistants(body)[0][RC] == _choice_message(load_json(rel))[RC]


# --- GitHub Copilot -------------------------------------------------------------------------------

# SYNTHETIC streams: no real Copilot chat recording carries reasoning_text / reasoning_opaque
# (tests/fixtures/SOURCES.md, "Gaps"). Hand-written from opencode's Copilot chat model
# (packages/opencode/src/provider/sdk/copilot/chat/openai-compatible-chat-language-model.ts): the
# latest opaque blob wins, reasoning_text is concatenated, the opaque value may arrive after text
# has started, Gemini on Copilot signs tool calls in function.thought_signature, Claude 5 may send
# only the blob.
SYNTHETIC_LABEL = ": SYNTHETIC - hand-written from public Copilot client code, not a recording"


def _synthetic_sse(stream_id: str, *deltas: dict[str, Any], finish: str | None = None) -> str:
    """SSE text for a hand-written stream: the label comment, one chunk per delta, [DONE]."""
    lines = [SYNTHETIC_LABEL, ""]
    for position, delta in enumerate(deltas):
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if finish and position == len(deltas) - 1:
            choice["finish_reason"] = finish
        lines += ["data: " + orjson.dumps({"id": stream_id, "choices": [choice]}).decode(), ""]
    return "\n".join([*lines, "data: [DONE]", ""])


def _call(index: int, **fields: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, **fields}]}


SYNTHETIC_COPILOT_CLAUDE = _synthetic_sse(
    "syn-copilot-1",
    {"role": "assistant", "reasoning_text": "The user wants "},
    {"reasoning_text": "the weather.", "reasoning_opaque": "OPAQUE-one/+=="},  # after text began
    {"reasoning_text": " I will call the tool."},
    {"reasoning_opaque": "OPAQUE-two-rotated/+=="},  # Claude rotates the blob before a tool call
    {"content": "Checking.", **_call(0, id="toolu_syn_1", type="function",
                                     function={"name": "weather", "arguments": ""})},
    _call(0, function={"arguments": '{"city":"Paris"}'}),
    {}, finish="tool_calls")

SYNTHETIC_COPILOT_GEMINI = _synthetic_sse(
    "syn-copilot-2",
    {"role": "assistant", **_call(0, id="call_g1", type="function", function={
        "name": "weather", "arguments": "", "thought_signature": "Gemini-sig-1+/="})},
    _call(0, function={"arguments": '{"city":"Rome"}'}),
    _call(1, id="call_g2", type="function", function={"name": "time", "arguments": "{}"}),
    {}, finish="tool_calls")

SYNTHETIC_COPILOT_OPAQUE_ONLY = _synthetic_sse(  # Claude 5 on Copilot: only the opaque blob
    "syn-copilot-3",
    {"role": "assistant", "reasoning_opaque": "ONLY-opaque=="},
    {"content": "Done."}, finish="stop")

COPILOT = ("copilot", None, "claude-sonnet-4.5")
NOT_COPILOT = [("openrouter", None, "anthropic/claude-sonnet-4.5"),
               ("deepseek", None, "deepseek-reasoner"), ("groq", None, "x"),
               ("gemini-openai", None, "gemini-3-pro"), ("openai", None, "gpt-5"),
               ("custom", "http://127.0.0.1:9000/v1", "x"), ("novita", None, "x")]


def _copilot(text: str) -> Message:
    return fold(sse_payloads(text), ORIGIN).message


def test_copilot_fold_keeps_the_latest_opaque_and_concatenates_text() -> None:
    message = _copilot(SYNTHETIC_COPILOT_CLAUDE)
    assert message.native["copilot"] == {
        "reasoning_text": "The user wants the weather. I will call the tool.",
        "reasoning_opaque": "OPAQUE-two-rotated/+=="}
    assert message.reasoning_text() == "The user wants the weather. I will call the tool."
    assert _calls(message) == [("toolu_syn_1", "weather", '{"city":"Paris"}')]


def test_copilot_route_lifts_opaque_and_text() -> None:
    message = _copilot(SYNTHETIC_COPILOT_CLAUDE)
    _, _, body = encode_on([user("q"), message], *COPILOT)
    (ours,) = assistants(body)
    assert ours["reasoning_opaque"] == "OPAQUE-two-rotated/+=="
    assert ours["reasoning_text"] == "The user wants the weather. I will call the tool."
    assert not ALL_CARRIERS & ours.keys()  # Copilot reads its own fields, not the standard ones


def test_copilot_tool_call_signature_on_copilot_only() -> None:
    message = _copilot(SYNTHETIC_COPILOT_GEMINI)
    first, second = message.tool_calls
    assert first.native == {"copilot": {"thought_signature": "Gemini-sig-1+/="}}
    assert not second.native
    _, _, body = encode_on([user("q"), message], "copilot", None, "gemini-3-pro")
    calls = assistants(body)[0]["tool_calls"]
    assert calls[0]["function"]["thought_signature"] == "Gemini-sig-1+/="
    assert "thought_signature" not in calls[1]["function"]
    assert "reasoning_opaque" not in assistants(body)[0]


def test_copilot_opaque_only_turn() -> None:
    message = _copilot(SYNTHETIC_COPILOT_OPAQUE_ONLY)
    assert message.native["copilot"] == {"reasoning_opaque": "ONLY-opaque=="}
    assert message.reasoning == () and message.text == "Done."
    _, _, body = encode_on([user("q"), message], *COPILOT)
    (ours,) = assistants(body)
    assert ours["reasoning_opaque"] == "ONLY-opaque=="
    assert "reasoning_text" not in ours


@pytest.mark.parametrize(("provider", "url", "model"), NOT_COPILOT)
def test_no_other_route_sees_copilot_fields(provider: str, url: str | None, model: str) -> None:
    history = [user("q"), _copilot(SYNTHETIC_COPILOT_CLAUDE), user("again"),
               _copilot(SYNTHETIC_COPILOT_GEMINI), user("more"),
               _copilot(SYNTHETIC_COPILOT_OPAQUE_ONLY)]
    _, _, body = encode_on(history, provider, url, model)
    raw = orjson.dumps(body)
    for secret in (b"OPAQUE-one", b"OPAQUE-two-rotated", b"ONLY-opaque", b"Gemini-sig-1"):
        assert secret not in raw, (provider, secret)
    assert not set(walk_keys(body)) & COPILOT_KEYS
    for wire in assistants(body):
        for call in wire.get("tool_calls") or ():
            assert set(call["function"]) == {"name", "arguments"}


def test_copilot_reasoning_text_only_next_to_its_opaque() -> None:
    text_only = _synthetic_sse(  # e.g. an interrupted Copilot stream
        "syn-4", {"role": "assistant", "reasoning_text": "thinking"}, {"content": "ok"},
        finish="stop")
    message = _copilot(text_only)
    _, _, body = encode_on([user("q"), message], *COPILOT)
    assert not COPILOT_KEYS & assistants(body)[0].keys()


def test_interrupted_copilot_turn_lifts_nothing() -> None:
    state = StreamFold(ORIGIN)
    for chunk in sse_payloads(SYNTHETIC_COPILOT_CLAUDE)[:3]:
        state.add(chunk)
    message = state.finish(complete=False).message
    assert message.incomplete
    assert message.native["copilot"]["reasoning_opaque"] == "OPAQUE-one/+=="
    _, _, body = encode_on([user("q"), message], *COPILOT)
    assert not COPILOT_KEYS & assistants(body)[0].keys()


def test_real_copilot_chat_recording_has_no_reasoning_fields() -> None:
    # matteing/opal's live Copilot recording: two responses, no reasoning_text/opaque (negative).
    events = load_json("copilot/opal-copilot-chat-claude-thinking-tool-call.json")["events"]
    chunks = [orjson.loads(e["data"]) for e in events]
    first_id = chunks[0]["id"]
    message = fold([c for c in chunks if c["id"] == first_id], ORIGIN).message
    (call,) = message.tool_calls
    assert call.name == "read_file" and orjson.loads(call.arguments)["path"]
    assert "copilot" not in message.native and not call.native
    _, _, body = encode_on([user("q"), message], *COPILOT)
    (ours,) = assistants(body)
    assert not COPILOT_KEYS & ours.keys()
    assert "thought_signature" not in ours["tool_calls"][0]["function"]


# --- encode invariants over every recorded turn and many routes -----------------------------------

ENCODE_ROUTES = [
    ("mistral", None, "deepseek-r1"), ("groq", None, "x"), ("fireworks", None, "deepseek-r1"),
    ("openrouter", None, "anthropic/claude"), ("openrouter", None, "deepseek/deepseek-r1"),
    ("novita", None, "x"), ("ollama", None, "x"), ("deepseek", None, "deepseek-reasoner"),
    ("kimi", None, "kimi-k2.6"), ("openai", None, "gpt-5"), ("zai", None, "glm-5"),
    ("gemini-openai", None, "gemini-3-pro"), ("copilot", None, "claude"),
    ("custom", "https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen3.6-plus"),
]


def _recorded_history() -> list[Message]:
    history: list[Message] = [system("sys")]
    for rel in RESPONSES:
        history.append(user(rel))
        history.append(_decode(rel))
    for rel in STREAMS:
        history.append(user(rel))
        history.append(_fold(rel).message)
    for text in (SYNTHETIC_COPILOT_CLAUDE, SYNTHETIC_COPILOT_GEMINI, SYNTHETIC_COPILOT_OPAQUE_ONLY):
        history.append(_copilot(text))
    history.append(decode_response(SYNTHETIC_GEMINI3_TOOL_SIGNATURE, ORIGIN).message)
    return history


@pytest.mark.parametrize(("provider", "url", "model"), ENCODE_ROUTES)
def test_encode_invariants_on_recorded_turns(provider: str, url: str | None, model: str) -> None:
    history = _recorded_history()
    before = [dumps(m) for m in history]
    route, plan, body = encode_on(history, provider, url, model,
                                  tools=[ToolSpec(name="weather")], stream=True)
    assert [dumps(m) for m in history] == before

    native_keys = set()
    if "google" in plan.profile.native:
        native_keys |= {"extra_content"}
    if "copilot" in plan.profile.native:
        native_keys |= COPILOT_KEYS
    for wire in assistants(body):
        assert set(wire) <= {"role", "content", "tool_calls"} | plan.profile.carriers | native_keys
        if RC in wire:
            assert wire[RC].strip() or (plan.profile.pad and wire[RC] == " ")
        elif plan.profile.pad:
            pytest.fail("a must-echo route left an assistant turn without reasoning_content")
        if R in wire:
            assert wire[R].strip() and wire.get(RC, wire[R]) == wire[R]
    assert not set(walk_keys(body)) & OUR_KEYS
    for key, value in route.profile.body_extras.items():
        assert body[key] == value
    assert body["stream"] is True and body["tools"][0]["function"]["name"] == "weather"


def test_wire_cache_reuses_each_turn_per_plan() -> None:
    history = _recorded_history()
    cache = WireCache()
    plan_or = replay.plan(resolve("openrouter", None, "x"))
    plan_ds = replay.plan(resolve("deepseek", None, "deepseek-reasoner"))
    first = encode_request(history, plan_or, model="x", cache=cache)
    size = len(cache)
    second = encode_request(history, plan_or, model="x", cache=cache)
    assert len(cache) == size and first == second
    assert encode_request(history, plan_or, model="x") == first
    other = encode_request(history, plan_ds, model="x", cache=cache)
    assert len(cache) == 2 * size
    assert other == encode_request(history, plan_ds, model="x")
    assert other != first


def test_tool_and_user_turns() -> None:
    results = Message(role="tool", parts=(ToolResult(call_id="a", content="1"),
                                          ToolResult(call_id="b", content="2", is_error=True)))
    plan = replay.plan(resolve("openai"))
    assert encode_message(results, plan) == [
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"}]
    assert encode_message(user("hi"), plan) == [{"role": "user", "content": "hi"}]
    call_only = Message(role="assistant", parts=(ToolCall(id="c", name="n", arguments="{}"),))
    assert encode_message(call_only, plan)[0]["content"] is None


# --- malformed input ------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    {"error": {"message": "Provider returned error", "code": 400}},
    {"choices": []},
    {"choices": [{"index": 0}]},
    {"choices": [{"index": 0, "message": "not an object"}]},
    {"choices": [{"index": 0, "message": {"role": "assistant", RD: ["not an object"]}}]},
    {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [{"id": "x"}]}}]},
])
def test_malformed_responses_are_protocol_errors(body: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError):
        decode_response(body, ORIGIN)


def test_stream_error_chunk_is_a_protocol_error() -> None:
    state = StreamFold(ORIGIN)
    with pytest.raises(ProtocolError):
        state.add({"error": {"message": "overloaded"}})


# --- whole response == its stream, for any way of splitting it into chunks (hypothesis) -----------

SPLIT_RESPONSES = [*RESPONSES, "synthetic:gemini3-tool-signature", "synthetic:copilot"]

SYNTHETIC_COPILOT_WHOLE = {
    "id": "synthetic-copilot-whole",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Let me check.",
        "reasoning_text": "Need the weather for Paris.", "reasoning_opaque": "OPAQUE/whole+==",
        "tool_calls": [{"id": "call_c1", "type": "function",
                        "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}",
                                     "thought_signature": "tool-sig=="}}]}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 4},
}


def _whole(name: str) -> dict[str, Any]:
    if name == "synthetic:gemini3-tool-signature":
        return copy.deepcopy(SYNTHETIC_GEMINI3_TOOL_SIGNATURE)
    if name == "synthetic:copilot":
        return copy.deepcopy(SYNTHETIC_COPILOT_WHOLE)
    return load_json(name)


def _pieces(data: st.DataObject, text: str) -> list[str]:
    """``text`` cut at arbitrary points (empty pieces included); always at least one piece."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6), label="cuts"))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


_SPLIT_RD = ("text", "summary", "data", "signature")


def _detail_fragments(data: st.DataObject, item: dict[str, Any]) -> list[dict[str, Any]]:
    if "index" not in item:
        return [item]  # without an index fragments cannot be told apart: sent whole
    split = {k: _pieces(data, v) for k, v in item.items() if k in _SPLIT_RD and isinstance(v, str)}
    first = {k: v for k, v in item.items() if k not in split}
    first.update({k: v[0] for k, v in split.items()})
    out = [first]
    for key, pieces in split.items():
        out.extend({"type": item.get("type"), "index": item["index"], key: p} for p in pieces[1:])
    return out


def _call_fragments(data: st.DataObject, position: int, call: dict[str, Any]) -> list[dict]:
    function = call["function"]
    arguments = function.get("arguments")
    pieces = _pieces(data, arguments) if isinstance(arguments, str) else [arguments]
    head_function = {k: v for k, v in function.items() if k != "arguments"}
    head_function["arguments"] = pieces[0]
    head = {k: v for k, v in call.items() if k not in ("function", "index")}
    head.update(index=position, function=head_function)
    return [head, *({"index": position, "function": {"arguments": p}} for p in pieces[1:])]


def _explode(data: st.DataObject, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``chat.completion.chunk`` stream that describes ``body`` (split at random points)."""
    message = _choice_message(body)
    streams: list[list[dict[str, Any]]] = []
    for key in ("content", RC, R, "reasoning_text"):
        value = message.get(key)
        if isinstance(value, str):
            streams.append([{key: p} for p in _pieces(data, value)])
        elif isinstance(value, list):
            streams.append([{key: value}])  # Mistral content chunks: one delta
    if isinstance(message.get(RD), list):
        streams.append([{RD: [f]} for item in message[RD] for f in _detail_fragments(data, item)])
    for position, call in enumerate(message.get("tool_calls") or ()):
        streams.append([{"tool_calls": [f]} for f in _call_fragments(data, position, call)])
    for key in ("extra_content", "thought_signature", "reasoning_opaque"):
        if key in message:
            streams.append([{key: message[key]}])

    # One draw for the interleaving and one for which neighbours share a chunk (draws are slow).
    total = sum(len(s) for s in streams)
    picks = data.draw(st.lists(st.integers(0, 255), min_size=total, max_size=total), label="order")
    merges = data.draw(st.lists(st.booleans(), min_size=total, max_size=total), label="merge")
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    for pick, merge in zip(picks, merges, strict=True):
        live = [s for s in streams if s]
        delta = live[pick % len(live)].pop(0)
        last = deltas[-1]
        if merge and not (delta.keys() & last.keys()):
            last.update(delta)
        elif merge and delta.keys() == last.keys() and next(iter(delta)) in (RD, "tool_calls"):
            key = next(iter(delta))
            last[key] = [*last[key], *delta[key]]
        else:
            deltas.append(delta)
    chunk_id = {"id": body["id"]} if "id" in body else {}
    chunks = [{**chunk_id, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**chunk_id, "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": {},
                                "finish_reason": body["choices"][0].get("finish_reason")}],
                   **({"usage": body["usage"]} if body.get("usage") else {})})
    return orjson.loads(orjson.dumps(chunks))


@pytest.mark.parametrize("name", SPLIT_RESPONSES)
@settings(max_examples=15)
@given(data=st.data())
def test_any_split_of_a_whole_response_folds_to_its_decode(name: str, data: st.DataObject) -> None:
    body = _whole(name)
    chunks = _explode(data, body)
    assert fold(chunks, ORIGIN) == decode_response(body, ORIGIN)


def test_whole_copilot_response_decodes_like_its_stream() -> None:
    message = decode_response(SYNTHETIC_COPILOT_WHOLE, ORIGIN).message
    assert message.native["copilot"] == {"reasoning_text": "Need the weather for Paris.",
                                         "reasoning_opaque": "OPAQUE/whole+=="}
    assert message.tool_calls[0].native == {"copilot": {"thought_signature": "tool-sig=="}}


def test_wire_summary_from_the_cache_equals_a_full_walk() -> None:
    # The log's counts kept while encoding must match counting the body from scratch, request
    # after request as the history grows (prefix reuse) and on a plan change.
    turn = decode_response(load_json("openrouter/pydantic-ai-openrouter-reasoning-details-text"
                                     ".i0.response.json"), ORIGIN).message
    cache = WireCache()
    history: list[Message] = []
    for step, provider in enumerate(["openrouter", "openrouter", "deepseek", "openrouter"]):
        history += [user(f"q{step}"), turn]
        plan = replay.plan(resolve(provider, None, "m"))
        body = encode_request(history, plan, model="m", cache=cache)
        assert wire_summary(body, cache) == wire_summary(body)
        assert wire_summary(body)["assistant_turns"] == step + 1
