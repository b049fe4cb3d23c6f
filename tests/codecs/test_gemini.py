"""The Gemini native codec on every recorded Gemini exchange (tests/fixtures/gemini, SOURCES.md).

Expectations come from the recordings (what Gemini sent, what a client replayed and Gemini
accepted with a 200) and from ai.google.dev/gemini-api/docs/thought-signatures and the Vertex
thought-signatures page; never from the codec's
own output. Opaque values are compared as bytes.
"""

from __future__ import annotations

import base64
import gzip
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_fixtures import FIXTURES, fixture, load_json, stream_chunks
from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.gemini import scope
from thoughtline.codecs.gemini.codec import CODEC
from thoughtline.codecs.gemini.decode import decode_response
from thoughtline.codecs.gemini.fold import StreamFold, fold
from thoughtline.config import ProviderConfig
from thoughtline.errors import ProtocolError, UsageError
from thoughtline.events import ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import (
    FrozenDict,
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
    system,
    tool_results,
    user,
)
from thoughtline.transport.http import _ArrayElements, _json_array
from thoughtline.verdicts import Verdict
from thoughtline.wire.cache import WireCache

DIR = FIXTURES / "gemini"
SIG = "thoughtSignature"
DUMMY = "skip_thought_signature_validator"
AI_STUDIO = "https://generativelanguage.googleapis.com/v1beta"


def _rels(*patterns: str) -> list[str]:
    return sorted(f"gemini/{p.name}" for pattern in patterns for p in DIR.glob(pattern))


WHOLE = [r for r in _rels("*.response.json", "vercel-*.json")]
STREAMS = _rels("*.sse.txt", "*.chunks.txt", "*.json-array-stream.txt")


def chunks_of(rel: str) -> list[dict[str, Any]]:
    if rel.endswith(".json-array-stream.txt"):
        return json_array(fixture(rel).read_bytes().decode())
    return stream_chunks(rel)


def json_array(text: str, piece: int = 7) -> list[dict[str, Any]]:
    """The transport's own JSON-array splitter, fed in small pieces like a network would."""
    splitter = _ArrayElements()
    out: list[str] = []
    for start in range(0, len(text), piece):
        out.extend(splitter.feed(text[start:start + piece]))
    return [orjson.loads(element) for element in out]


def origin(model: str = "gemini-3-pro-preview", host: str = "generativelanguage.googleapis.com",
           provider: str = "gemini", account: str = "") -> Origin:
    return Origin(api="gemini", provider=provider, host=host, model=model, account=account)


def plan_for(model: str = "gemini-3-pro-preview", base_url: str = AI_STUDIO,
             provider: str = "gemini", verdicts: tuple[Verdict, ...] = (),
             fingerprints: tuple[str, ...] = (), account: str = "",
             settings: dict[str, Any] | None = None) -> replay.ReplayPlan:
    route = CODEC.resolve(provider, base_url, model)
    return replay.plan(route, verdicts, fingerprints=fingerprints, account=account,
                       settings=settings)


def encode(history: list[Message], plan: replay.ReplayPlan, **spec: Any) -> dict[str, Any]:
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=plan.target.model, **spec))
    return orjson.loads(orjson.dumps(encoded.body))


def raw_signatures(parts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(what the part is, its signature)`` for every signed wire part, in order."""
    out = []
    for part in parts:
        if SIG not in part:
            continue
        call = part.get("functionCall") or part.get("function_call")
        if call is not None:
            out.append((f"call:{call.get('name')}", part[SIG]))
        elif part.get("thought") is True:
            out.append(("thought", part[SIG]))
        else:
            out.append(("text", part[SIG]))
    return out


def canonical_signatures(message: Message) -> list[tuple[str, str]]:
    out = []
    for part in message.parts:
        sig = part.native.get("gemini", {}).get(SIG) if hasattr(part, "native") else None
        if sig is None:
            continue
        if isinstance(part, ToolCall):
            out.append((f"call:{part.name}", sig))
        elif isinstance(part, Reasoning):
            out.append(("thought", sig))
        else:
            out.append(("text", sig))
    return out


def response_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    return body["candidates"][0]["content"]["parts"]


def stream_parts(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for c in chunks for cand in c.get("candidates", [])[:1]
            for p in cand.get("content", {}).get("parts", [])]


def as_whole(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole response a stream describes: every part in order, the last finish and usage."""
    finish = next(c["candidates"][0]["finishReason"] for c in reversed(chunks)
                  if c.get("candidates") and "finishReason" in c["candidates"][0])
    return {"candidates": [{"content": {"role": "model", "parts": stream_parts(chunks)},
                            "finishReason": finish}],
            "usageMetadata": chunks[-1].get("usageMetadata"),
            "responseId": chunks[0].get("responseId")}


# --- decode and fold on every recording ----------------------------------------------------------


def test_every_recording_is_covered() -> None:
    responses = {f"gemini/{p.name}" for p in DIR.iterdir() if ".request." not in p.name}
    gzipped = {r for r in responses if r.endswith(".gzip.bin")}  # test_json_array_stream_and_…
    assert responses == set(WHOLE) | set(STREAMS) | gzipped
    assert len(WHOLE) == 13 and len(STREAMS) == 15 and len(gzipped) == 2


@pytest.mark.parametrize("rel", WHOLE)
def test_whole_response_keeps_every_signature_on_its_part(rel: str) -> None:
    body = load_json(rel)
    done = decode_response(body, origin())
    expected = raw_signatures(response_parts(body))
    assert orjson.dumps(canonical_signatures(done.message)) == orjson.dumps(expected)
    assert done.finish in ("stop", "tool_calls")
    assert done.usage.input_tokens == body["usageMetadata"]["promptTokenCount"]


# Vertex's streamed partial arguments have no whole-part form to concatenate: that recording has
# its own test (test_vertex_streamed_arguments_are_assembled).
WHOLE_SHAPED = [r for r in STREAMS if "vertex-stream-no-args" not in r]


@pytest.mark.parametrize("rel", WHOLE_SHAPED)
def test_stream_and_whole_fold_to_the_same_message(rel: str) -> None:
    chunks = chunks_of(rel)
    streamed = fold(chunks, origin(), seed="s")
    whole = decode_response(as_whole(chunks), origin(), seed="s")
    assert dumps(streamed.message) == dumps(whole.message)
    assert streamed.finish == whole.finish and streamed.usage == whole.usage


@pytest.mark.parametrize("rel", STREAMS)
def test_stream_signatures_arrive_verbatim_on_the_part_they_sign(rel: str) -> None:
    chunks = chunks_of(rel)
    message = fold(chunks, origin()).message
    raw = raw_signatures(stream_parts(chunks))
    assert orjson.dumps(canonical_signatures(message)) == orjson.dumps(raw)


def test_streamed_text_signature_on_the_trailing_empty_part_signs_the_whole_text() -> None:
    rel = "gemini/fantasy-gemini3-pro-thinking-function-call-stream.i1.response.sse.txt"
    chunks = chunks_of(rel)
    last = response_parts(chunks[-1])[0]
    assert last["text"] == ""  # the recording: the signature rides an empty trailing part
    message = fold(chunks, origin()).message
    (text,) = message.parts
    assert isinstance(text, Text)
    assert text.text == ("The current weather in Florence, Italy is 40°C (104°F). Stay cool, "
                         "it's quite hot!")
    assert orjson.dumps(text.native["gemini"][SIG]) == orjson.dumps(last[SIG])


def test_gemini25_signature_on_the_first_chunk_stays_on_the_one_text() -> None:
    rel = "gemini/pydantic-ai-gemini25-pro-thinking-stream.i0.response.sse.txt"
    message = fold(chunks_of(rel), origin("gemini-2.5-pro")).message
    kinds = [type(p).__name__ for p in message.parts]
    assert kinds == ["Reasoning", "Text"]
    assert message.parts[0].kind == "summary" and message.parts[0].summary


def test_parallel_calls_only_the_first_is_signed() -> None:
    for rel in ("gemini/fantasy-gemini31-pro-parallel-calls-first-signature-only.i0.response.json",
                "gemini/pydantic-ai-gemini3-flash-parallel-calls-first-signature-only.i0.response.json"):
        message = decode_response(load_json(rel), origin()).message
        calls = message.tool_calls
        assert len(calls) >= 2
        assert "gemini" in calls[0].native
        assert all(not c.native for c in calls[1:])


def test_function_call_args_are_compact_json_text_the_same_streamed_and_whole() -> None:
    body = load_json("gemini/fantasy-gemini3-pro-thinking-function-call.i0.response.json")
    (call,) = decode_response(body, origin()).message.tool_calls
    assert call.arguments == '{"location":"Florence, Italy"}'
    assert call.id == "v3yybtcf"
    stream = fold(chunks_of("gemini/fantasy-gemini3-pro-thinking-function-call-stream"
                            ".i0.response.sse.txt"), origin())
    assert stream.message.tool_calls[0].arguments == call.arguments


def test_calls_without_ids_get_stable_synthetic_ids_that_never_go_back() -> None:
    rel = "gemini/pydantic-ai-gemini3-flash-parallel-calls-first-signature-only.i0.response.json"
    first = decode_response(load_json(rel), origin(), seed="a").message
    again = decode_response(load_json(rel), origin(), seed="a").message
    other = decode_response(load_json(rel), origin(), seed="b").message
    ids = [c.id for c in first.tool_calls]
    assert ids == [c.id for c in again.tool_calls] and len(set(ids)) == len(ids)
    assert ids != [c.id for c in other.tool_calls]
    history = [user("go"), first, tool_results(ToolResult(call_id=i, content="x") for i in ids)]
    body = encode(history, plan_for("gemini-3-flash-preview"))
    sent = orjson.dumps(body).decode()
    assert not any(i in sent for i in ids)


def test_vertex_streamed_arguments_are_assembled() -> None:
    rel = "gemini/vercel-google-vertex-stream-no-args-tool-call.chunks.txt"
    state = StreamFold(origin("gemini-3-flash-preview"))
    events = [e for chunk in chunks_of(rel) for e in state.add_event("", chunk)]
    done = state.finish()
    calls = done.message.tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("read_theme", "{}"), ("read_screen", '{"id":"A"}'), ("read_screen", '{"id":"B"}'),
        ("read_screen", '{"id":"C"}')]
    assert "gemini" in calls[0].native and not any(c.native for c in calls[1:])
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [e.index for e in started] == [0, 1, 2, 3]
    assert ["".join(d.text for d in deltas if d.index == i) for i in range(4)] == [
        c.arguments for c in calls]
    assert isinstance(done.message.parts[0], Reasoning)
    assert done.finish == "tool_calls"


def test_fold_emits_thought_and_text_deltas() -> None:
    rel = "gemini/pydantic-ai-gemini25-pro-thinking-stream.i0.response.sse.txt"
    state = StreamFold(origin("gemini-2.5-pro"))
    events = [e for chunk in chunks_of(rel) for e in state.add_event("", chunk)]
    done = state.finish()
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == \
        done.message.parts[0].summary
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == done.message.text
    assert state.finished


def test_json_array_stream_and_its_gzip_recording() -> None:
    stem = "llm-gemini-gemini3-flash-stream-json-array-thought-signature.i0.response"
    raw = (DIR / f"{stem}.gzip.bin").read_bytes()
    text = (DIR / f"{stem}.json-array-stream.txt").read_bytes().decode()  # "\r\n," kept
    assert gzip.decompress(raw).decode() == text

    async def elements() -> list[Any]:
        response = httpx.Response(200, headers={"content-encoding": "gzip"}, content=raw)
        return [payload async for _, payload in _json_array(response)]

    import asyncio

    chunks = asyncio.run(elements())
    assert chunks == orjson.loads(text)
    done = fold(chunks, origin("gemini-3-flash-preview"))
    (call,) = done.message.tool_calls
    assert call.arguments == '{"y":3,"x":5}'
    assert orjson.dumps(call.native["gemini"][SIG]) == orjson.dumps(
        response_parts(chunks[0])[0][SIG])


def test_interrupted_stream_is_incomplete_and_replays_without_signatures_or_calls() -> None:
    chunks = chunks_of("gemini/vercel-google-vertex-stream-no-args-tool-call.chunks.txt")
    state = StreamFold(origin("gemini-3-flash-preview"))
    for chunk in chunks[:4]:
        state.add(chunk)
    done = state.finish(complete=False)
    assert done.message.incomplete and not state.finished
    assert all(not p.complete for p in done.message.reasoning)
    body = encode([user("go"), done.message], plan_for("gemini-3-flash-preview"))
    sent = orjson.dumps(body).decode()
    assert SIG not in sent and "functionCall" not in sent
    # Its thought was cut and its call never ran: nothing is left to send, so no model content
    # (an empty text part has no data: tests/gemini/test_gemini_empty_turns.py).
    assert [c["role"] for c in body["contents"]] == ["user"]


def test_error_objects_raise() -> None:
    with pytest.raises(ProtocolError):
        decode_response({"error": {"code": 400, "message": "bad"}}, origin())
    with pytest.raises(ProtocolError):
        StreamFold(origin()).add({"error": {"code": 500, "message": "bad"}})
    with pytest.raises(ProtocolError):
        decode_response({"nothing": 1}, origin())


def test_blocked_prompt_is_a_content_filter_finish() -> None:
    done = decode_response({"promptFeedback": {"blockReason": "SAFETY"}}, origin())
    assert done.finish == "content_filter" and done.message.parts == ()


# --- replay: recorded turn-2 requests -------------------------------------------------------------

REPLAYS = [r for r in _rels("*.i1.request.json")]
# pydantic-ai replays through the google-genai SDK, which re-encodes signatures as base64url
# (SOURCES.md observation 3); the API accepted it. Those files prove placement, not bytes.
REENCODED = "pydantic-ai-"


def _recorded_turn_one(request_rel: str) -> tuple[str, Any]:
    stem = request_rel.removesuffix(".i1.request.json")
    for suffix in (".i0.response.json", ".i0.response.sse.txt",
                   ".i0.response.json-array-stream.txt"):
        rel = stem + suffix
        if (FIXTURES / rel).is_file():
            return rel, (load_json(rel) if suffix.endswith(".json") else chunks_of(rel))
    raise AssertionError(f"no i0 response for {request_rel}")


def _history_from(request: dict[str, Any], assistant: Message) -> list[Message]:
    """The recorded turn-1 user message, the decoded reply, and the recorded tool results."""
    history: list[Message] = []
    instruction = request.get("systemInstruction")
    if instruction:
        history.append(system("".join(p.get("text", "") for p in instruction["parts"])))
    first = request["contents"][0]
    history.append(user("".join(p.get("text", "") for p in first["parts"])))
    history.append(assistant)
    results = []
    calls = list(assistant.tool_calls)
    responses = [p.get("functionResponse") or p.get("function_response")
                 for c in request["contents"][2:] for p in c["parts"]]
    for call, response in zip(calls, [r for r in responses if r], strict=False):
        results.append(ToolResult(call_id=call.id, content=orjson.dumps(
            response["response"]).decode()))
    if results:
        history.append(tool_results(results))
    return history


@pytest.mark.parametrize("request_rel", REPLAYS)
def test_recorded_turn_two_gets_every_signature_back_as_bytes_on_the_same_part(
        request_rel: str) -> None:
    recorded = load_json(request_rel)
    rel, response = _recorded_turn_one(request_rel)
    model = "gemini-3-flash-preview" if "flash" in rel else "gemini-3-pro-preview"
    if "gemini25" in rel:
        model = "gemini-2.5-flash"
    turn = (decode_response(response, origin(model)) if isinstance(response, dict)
            else fold(response, origin(model))).message
    history = _history_from(recorded, turn)
    stored = [loads(dumps(m)) for m in history]  # and after a round-trip through the store
    for candidate in (history, stored):
        body = encode(candidate, plan_for(model))
        (ours,) = [c for c in body["contents"] if c["role"] == "model"]
        (theirs,) = [c for c in recorded["contents"] if c["role"] == "model"]
        sent, replayed = raw_signatures(ours["parts"]), raw_signatures(theirs["parts"])
        assert [k for k, _ in sent] == [k for k, _ in replayed]
        if Path(request_rel).name.startswith(REENCODED):
            source = raw_signatures(response_parts(response) if isinstance(response, dict)
                                    else stream_parts(response))
            assert orjson.dumps(sent) == orjson.dumps(source)
            assert [base64.b64decode(s) for _, s in sent] == [
                base64.urlsafe_b64decode(s) for _, s in replayed]
        else:
            assert orjson.dumps(sent) == orjson.dumps(replayed)
        calls = [p["functionCall"] for p in ours["parts"] if "functionCall" in p]
        recorded_calls = [p.get("functionCall") or p.get("function_call")
                          for p in theirs["parts"] if "functionCall" in p or "function_call" in p]
        assert [(c["name"], c["args"]) for c in calls] == [
            (c["name"], c["args"]) for c in recorded_calls]


def test_foreign_function_calls_get_the_documented_dummy_on_the_first_call_only() -> None:
    recorded = load_json(
        "gemini/pydantic-ai-gemini3-tool-call-after-openai-history.i2.request.json")
    openai = Origin(api="openai-responses", provider="openai", host="api.openai.com",
                    model="gpt-5")
    calls = (ToolCall(id="call_1w9YRdMtRTRucwZShoZYlLJp", name="get_country", arguments="{}"),
             ToolCall(id="call_2", name="get_city", arguments='{"a":1}'))
    turn = Message(role="assistant", origin=openai, parts=(
        Reasoning(kind="encrypted", data="gAAAAB-opaque", origin=openai), *calls))
    history = [user("What is the capital of the country?"), turn,
               tool_results([ToolResult(call_id=calls[0].id, content="Mexico"),
                             ToolResult(call_id=calls[1].id, content="x")])]
    body = encode(history, plan_for("gemini-3-pro-preview"))
    model = body["contents"][1]
    assert [p.get(SIG) for p in model["parts"]] == [DUMMY, None]
    assert "gAAAAB" not in orjson.dumps(body).decode()
    # The recorded request shows the placement (another client's placeholder on the first call).
    recorded_model = recorded["contents"][1]["parts"][0]
    assert SIG in recorded_model and model["parts"][0]["functionCall"]["id"] == \
        recorded_model["functionCall"]["id"]
    results = body["contents"][2]["parts"]
    assert [r["functionResponse"]["name"] for r in results] == ["get_country", "get_city"]


# --- scope ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("made", "reader", "ok"), [
    ("gemini-3-pro-preview", "gemini-3-pro-preview", True),
    ("gemini-3-pro-preview", "gemini-3.1-pro-preview", True),
    ("gemini-3-flash-preview", "gemini-3-flash", True),
    ("gemini-3-flash-preview", "gemini-3-flash-lite", False),
    ("gemini-3-flash-preview", "gemini-3-pro-preview", False),
    ("gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite", True),
    ("gemini-4-argon", "gemini-3-pro-preview", False),
    ("gemini-3-pro-preview", "gemini-4-argon", False),
    ("gemini-2.5-pro", "gemini-3-pro-preview", False),
    ("publishers/google/models/gemini-3-flash-preview", "gemini-3-flash-preview", True),
    ("custom-model", "custom-model", True),
    ("custom-model", "other-model", False),
])
def test_family_and_tier_scope(made: str, reader: str, ok: bool) -> None:
    assert scope.can_read(made, reader) is ok


def test_scope_keeps_signatures_on_gemini_routes_of_the_same_service_and_project() -> None:
    plan = plan_for("gemini-3-pro-preview", account="")
    profile, target = plan.profile, plan.target
    assert profile.accepts(origin(), target)
    chat = Origin(api="openai-chat", provider="gemini-openai",
                  host="generativelanguage.googleapis.com", model="gemini-3-pro-preview")
    assert not profile.accepts(chat, target)
    vertex = origin(host="us-central1-aiplatform.googleapis.com", provider="vertex-gemini")
    assert not profile.accepts(vertex, target)
    vplan = plan_for("gemini-3-pro-preview", base_url="https://aiplatform.googleapis.com/v1",
                     provider="vertex-gemini", account="proj-a")
    regional = origin(host="europe-west4-aiplatform.googleapis.com", provider="vertex-gemini",
                      account="proj-a")
    assert vplan.profile.accepts(regional, vplan.target)
    other_project = origin(host="aiplatform.googleapis.com", provider="vertex-gemini",
                           account="proj-b")
    assert not vplan.profile.accepts(other_project, vplan.target)


def test_out_of_tier_history_goes_back_with_no_thoughts_and_the_dummy() -> None:
    rel = "gemini/fantasy-gemini3-pro-thinking-function-call.i0.response.json"
    turn = decode_response(load_json(rel), origin("gemini-3-pro-preview")).message
    call = turn.tool_calls[0]
    history = [user("weather?"), turn, tool_results([ToolResult(call_id=call.id, content="40")])]
    same = encode(history, plan_for("gemini-3-pro-preview"))["contents"][1]["parts"]
    assert [p.get("thought") for p in same] == [True, None]  # full context: thoughts too
    lite = encode(history, plan_for("gemini-3-flash-lite"))["contents"][1]["parts"]
    assert lite == [{"functionCall": {"name": "weather", "args": {"location": "Florence, Italy"},
                                      "id": "v3yybtcf"}, SIG: DUMMY}]


def test_chat_route_shares_the_tier_rule() -> None:
    from thoughtline.codecs.openai_chat.profile import resolve_chat

    route = resolve_chat("gemini-openai", "https://generativelanguage.googleapis.com/v1beta/openai",
                         "gemini-3.1-pro-preview")
    target = replay.target_of(route)
    made = Origin(api="openai-chat", provider="gemini-openai",
                  host="generativelanguage.googleapis.com", model="gemini-3-pro-preview")
    assert route.profile.accepts(made, target)
    lite = Origin(api="openai-chat", provider="gemini-openai",
                  host="generativelanguage.googleapis.com", model="gemini-3-flash-lite")
    assert not route.profile.accepts(lite, target)


# --- rejections ----------------------------------------------------------------------------------

WORDINGS = {
    "gemini-corrupted": '{"error":{"code":400,"message":"Corrupted thought signature.",'
                        '"status":"INVALID_ARGUMENT"}}',
    "vertex-invalid": '{"error":{"code":400,"message":"Unable to submit request because Thought '
                      'signature is not valid.. Learn more: https://cloud.google.com/vertex-ai/'
                      'generative-ai/docs/model-reference/gemini","status":"INVALID_ARGUMENT"}}',
    "gemini-missing": '{"error":{"code":400,"message":"Function call is missing a '
                      'thought_signature in functionCall parts. This is required for tools to '
                      'work correctly, and missing thought_signature may lead to degraded model '
                      'performance. Additional data, function call `default_api:weather` , '
                      'position 2. Please refer to https://ai.google.dev/gemini-api/docs/'
                      'thought-signatures for more details.","status":"INVALID_ARGUMENT"}}',
    "vertex-missing": '{"error":{"code":400,"message":"Unable to submit request because function '
                      'call `weather` in the 2. content block is missing a `thought_signature`.'
                      '","status":"INVALID_ARGUMENT"}}',
    "vertex-missing-short": '{"error":{"code":400,"message":"Function call `tool_name` in the '
                            '`1.` content block is missing a `thought_signature`."}}',
}


def _own_history() -> list[Message]:
    rel = "gemini/fantasy-gemini3-pro-thinking-function-call.i0.response.json"
    turn = decode_response(load_json(rel), origin()).message
    call = turn.tool_calls[0]
    return [user("weather?"), turn, tool_results([ToolResult(call_id=call.id, content="40")])]


def _classify(body: str, history: list[Message], plan: replay.ReplayPlan, status: int = 400):
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=plan.target.model))
    return CODEC.classify(status, body, encoded, plan)


@pytest.mark.parametrize("wording", ["gemini-corrupted", "vertex-invalid"])
def test_invalid_signature_fingerprints_what_was_sent_and_the_retry_omits_it(wording: str) -> None:
    history, plan = _own_history(), plan_for()
    lesson = _classify(WORDINGS[wording], history, plan)
    sig = history[1].tool_calls[0].native["gemini"][SIG]
    assert lesson is not None and lesson.verdict is None
    assert lesson.fingerprints == {fingerprint("thoughtSignature", sig)}
    assert lesson.wording == wording and "rejected" in lesson.notice
    retry = encode(history, plan_for(fingerprints=tuple(lesson.fingerprints)))
    parts = retry["contents"][1]["parts"]
    assert sig not in orjson.dumps(retry).decode()
    assert [p.get(SIG) for p in parts] == [DUMMY]  # none of that turn's thinking, and the dummy


@pytest.mark.parametrize("wording", ["gemini-corrupted", "vertex-invalid"])
def test_a_route_that_rejects_the_dummy_learns_to_send_foreign_calls_as_text(wording: str) -> None:
    other = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com", model="c")
    call = ToolCall(id="toolu_1", name="weather", arguments='{"city":"Rome"}')
    history = [user("w?"), Message(role="assistant", origin=other, parts=(call,)),
               tool_results([ToolResult(call_id="toolu_1", content="20 C")])]
    plan = plan_for()
    lesson = _classify(WORDINGS[wording], history, plan)
    assert lesson is not None and lesson.verdict is not None
    assert lesson.verdict.drop == {"gemini.dummy_signature"}
    assert lesson.verdict.key == (plan.target.provider, plan.target.host, plan.target.model)
    retry = encode(history, plan_for(verdicts=(lesson.verdict,)))
    text = orjson.dumps(retry).decode()
    assert DUMMY not in text and "functionCall" not in text and "functionResponse" not in text
    assert "weather" in text and "20 C" in text
    # The lesson belongs to that route only: a sibling model keeps the dummy.
    sibling = encode(history, plan_for("gemini-3-flash-preview", verdicts=(lesson.verdict,)))
    assert DUMMY in orjson.dumps(sibling).decode()


@pytest.mark.parametrize("wording", ["gemini-missing", "vertex-missing", "vertex-missing-short"])
def test_missing_signature_pads_every_unsigned_call(wording: str) -> None:
    rel = "gemini/fantasy-gemini31-pro-parallel-calls-first-signature-only.i0.response.json"
    turn = decode_response(load_json(rel), origin("gemini-3.1-pro-preview")).message
    history = [user("add and multiply"), turn, tool_results(
        ToolResult(call_id=c.id, content="5") for c in turn.tool_calls)]
    plan = plan_for("gemini-3.1-pro-preview")
    lesson = _classify(WORDINGS[wording], history, plan)
    assert lesson is not None and lesson.settings == {"gemini": {"sign_every_call": True}}
    first_sig = turn.tool_calls[0].native["gemini"][SIG]
    learned = dict(lesson.settings["gemini"])
    retry = encode(history, plan_for("gemini-3.1-pro-preview", settings=learned))
    assert [p.get(SIG) for p in retry["contents"][1]["parts"]] == [first_sig, DUMMY]
    padded = plan_for("gemini-3.1-pro-preview", settings=learned)
    assert _classify(WORDINGS[wording], history, padded) is None  # nothing new: it surfaces


def test_other_errors_teach_nothing() -> None:
    history, plan = _own_history(), plan_for()
    assert _classify('{"error":{"code":500,"message":"Corrupted thought signature."}}', history,
                     plan, status=500) is None
    assert _classify('{"error":{"code":400,"message":"Invalid JSON payload"}}', history,
                     plan) is None


# --- request shape, endpoints, auth --------------------------------------------------------------


def test_thinking_config_and_params() -> None:
    body = encode([user("hi")], plan_for("gemini-3-pro-preview"),
                  params={"reasoning_effort": "high", "max_tokens": 100, "unknown_knob": 1})
    assert body == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                    "generationConfig": {"maxOutputTokens": 100, "thinkingConfig": {
                        "includeThoughts": True, "thinkingLevel": "high"}}}
    old = encode([user("hi")], plan_for("gemini-2.0-flash"))
    assert "generationConfig" not in old
    budget = encode([user("hi")], plan_for("gemini-2.5-flash"), params={"reasoning_effort": "low"})
    assert budget["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 1024


def test_system_tools_and_results_shape() -> None:
    spec = ToolSpec(name="weather", description="w", parameters={"type": "object"})
    history = [system("be brief"), *_own_history()]
    body = encode(history, plan_for(), tools=(spec,))
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "weather", "description": "w", "parametersJsonSchema": {"type": "object"}}]}]
    assert body["contents"][2] == {"role": "user", "parts": [{"functionResponse": {
        "name": "weather", "response": {"output": "40"}, "id": "v3yybtcf"}}]}


def test_encoding_never_mutates_history_and_shares_frozen_values() -> None:
    history = _own_history()
    before = [dumps(m) for m in history]
    cache = WireCache()
    plan = plan_for()
    first = CODEC.encode_request(history, plan, RequestSpec(model="gemini-3-pro-preview"), cache)
    second = CODEC.encode_request(history, plan, RequestSpec(model="gemini-3-pro-preview"), cache)
    assert orjson.dumps(first.body) == orjson.dumps(second.body)
    assert [dumps(m) for m in history] == before
    # Each turn encoded once (the core's cache holds every turn's bytes, not only model turns).
    assert len(cache) == len(history)
    assert CODEC.summary(first)["carriers"] == {SIG: 1}
    assert isinstance(history[1].tool_calls[0].native, FrozenDict)


def _provider(**kw: Any) -> ProviderConfig:
    return ProviderConfig(**{"id": "gemini", "api": "gemini", "base_url": AI_STUDIO, **kw})


def test_endpoints_and_auth() -> None:
    ai = _provider()
    assert CODEC.endpoint(ai, "gemini-3-pro-preview", stream=False).url == \
        f"{AI_STUDIO}/models/gemini-3-pro-preview:generateContent"
    streamed = CODEC.endpoint(ai, "gemini-3-pro-preview", stream=True)
    assert streamed.url.endswith(":streamGenerateContent?alt=sse") and streamed.framing == "sse"
    assert CODEC.auth_scheme(ai) == "x-goog-api-key"
    vertex = _provider(id="vertex-gemini", base_url="https://aiplatform.googleapis.com/v1",
                       project="proj", region="global")
    assert CODEC.endpoint(vertex, "gemini-3-flash", stream=False).url == (
        "https://aiplatform.googleapis.com/v1/projects/proj/locations/global/publishers/google/"
        "models/gemini-3-flash:generateContent")
    regional = _provider(id="vertex-gemini", base_url="https://aiplatform.googleapis.com/v1",
                         project="proj", region="us-central1")
    assert CODEC.endpoint(regional, "gemini-3-flash", stream=True).url == (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/"
        "publishers/google/models/gemini-3-flash:streamGenerateContent?alt=sse")
    assert CODEC.auth_scheme(vertex) == "google-oauth"
    with pytest.raises(UsageError):
        CODEC.endpoint(_provider(base_url="https://aiplatform.googleapis.com/v1"), "m",
                       stream=False)
    loop = _provider(
        base_url="http://127.0.0.1:1/v1/projects/p/locations/l/publishers/google/models")
    assert CODEC.endpoint(loop, "m", stream=False).url == (
        "http://127.0.0.1:1/v1/projects/p/locations/l/publishers/google/models/m:generateContent")


def test_registry_and_routes() -> None:
    assert registry.codec("gemini") is CODEC
    assert CODEC.resolve("gemini", AI_STUDIO, "m").row == "ai-studio"
    assert CODEC.resolve("vertex-gemini", None, "m").row == "vertex"
    assert CODEC.resolve("proxy", "https://europe-west1-aiplatform.googleapis.com", "m").row == \
        "vertex"
    assert CODEC.resolve("proxy", "https://example.com/v1beta", "m").row == "default"
    assert CODEC.resolve("gemini", AI_STUDIO, "m").to_json()["carriers"] == [SIG]


def test_presets() -> None:
    from dataclasses import replace

    from thoughtline import config

    gemini = config.provider("gemini")
    assert (gemini.api, gemini.key_env, gemini.base_url, CODEC.auth_scheme(gemini)) == (
        "gemini", "GEMINI_API_KEY", AI_STUDIO, "x-goog-api-key")
    assert CODEC.resolve(gemini.route_id, gemini.base_url, gemini.model).row == "ai-studio"
    vertex = config.provider("vertex-gemini")
    assert (vertex.api, CODEC.auth_scheme(vertex), vertex.region) == (
        "gemini", "google-oauth", "global")
    assert CODEC.resolve(vertex.route_id, vertex.base_url, vertex.model).row == "vertex"
    url = CODEC.endpoint(replace(vertex, project="p", region="europe-west4"), "gemini-3-flash",
                         stream=False).url
    assert url.startswith("https://europe-west4-aiplatform.googleapis.com/v1/projects/p/"
                          "locations/europe-west4/publishers/google/models/gemini-3-flash:")
    chat = config.provider("gemini-openai")  # the Chat route keeps working beside it
    assert chat.api == "openai-chat"


# --- properties ----------------------------------------------------------------------------------

def _restream(body: dict[str, Any], cuts: list[int], trailing: bool) -> list[dict[str, Any]]:
    """``body`` as a stream: each text cut in pieces, a text signature on a trailing empty part
    (Gemini 3) or on the first piece (Gemini 2.5), every other part in a chunk of its own."""
    chunks = []
    for part in response_parts(body):
        text = part.get("text")
        if not isinstance(text, str) or "functionCall" in part:
            chunks.append([part])
            continue
        bare = {k: v for k, v in part.items() if k != SIG}
        step = max(1, len(text) // (1 + cuts.pop() if cuts else 1))
        pieces = [text[i:i + step] for i in range(0, len(text), step)] or [""]
        for index, piece in enumerate(pieces):
            fragment = {**bare, "text": piece}
            if SIG in part and not trailing and index == 0:
                fragment[SIG] = part[SIG]
            chunks.append([fragment])
        if SIG in part and trailing:
            chunks.append([{**({"thought": True} if part.get("thought") else {}), "text": "",
                            SIG: part[SIG]}])
    out = [{"candidates": [{"content": {"role": "model", "parts": parts}}],
            "responseId": body.get("responseId")} for parts in chunks]
    out[-1]["candidates"][0]["finishReason"] = body["candidates"][0]["finishReason"]
    out[-1]["usageMetadata"] = body["usageMetadata"]
    return out


@settings(max_examples=60, deadline=None)
@given(rel=st.sampled_from(WHOLE), cuts=st.lists(st.integers(0, 12), max_size=6),
       trailing=st.booleans())
def test_any_streaming_of_a_whole_response_folds_to_its_decode(
        rel: str, cuts: list[int], trailing: bool) -> None:
    body = load_json(rel)
    whole = decode_response(body, origin(), seed="p")
    streamed = fold(_restream(body, list(cuts), trailing), origin(), seed="p")
    assert dumps(streamed.message) == dumps(whole.message)
    assert streamed.usage == whole.usage and streamed.finish == whole.finish


def test_unknown_parts_are_kept_verbatim_and_replayed_only_in_scope() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}, SIG: "Cq-sig"}
    body = {"candidates": [{"content": {"role": "model", "parts": [
        code, {"text": "done", SIG: "Cq-text"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1}}
    turn = decode_response(body, origin()).message
    history = [user("run it"), turn, user("again")]
    same = encode(history, plan_for())["contents"][1]["parts"]
    assert orjson.dumps(same[0]) == orjson.dumps(code)
    other = encode(history, plan_for("gemini-3-flash-preview"))["contents"][1]["parts"]
    assert other == [{"text": "done"}]


def test_a_streamed_vertex_call_ends_where_another_part_begins() -> None:
    def chunk(*parts: dict[str, Any], finish: bool = False) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
        if finish:
            candidate["finishReason"] = "STOP"
        return {"candidates": [candidate], "responseId": "r"}

    # SYNTHETIC: the recorded shape (vercel-google-vertex-stream-no-args-tool-call) without the
    # closing empty functionCall, followed by text.
    chunks = [chunk({"functionCall": {"name": "read", "willContinue": True}, SIG: "Cq-1"}),
              chunk({"functionCall": {"partialArgs": [
                  {"jsonPath": "$.path[0]", "stringValue": "a", "willContinue": True}],
                  "willContinue": True}}),
              chunk({"functionCall": {"partialArgs": [
                  {"jsonPath": "$.path[0]", "stringValue": "b"},
                  {"jsonPath": "$.depth", "numberValue": 2}], "willContinue": True}}),
              chunk({"text": "done"}, finish=True)]
    message = fold(chunks, origin()).message
    call, text = message.parts
    assert isinstance(call, ToolCall) and call.arguments == '{"path":["ab"],"depth":2}'
    assert call.native["gemini"][SIG] == "Cq-1" and isinstance(text, Text)
