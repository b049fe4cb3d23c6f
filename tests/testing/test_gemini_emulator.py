"""The Gemini emulator personality over real HTTP: what it issues, how it streams, what it refuses.

Expectations are the documented facts the emulator encodes
(ai.google.dev/gemini-api/docs/thought-signatures,
the Vertex thought-signatures page) and the recorded wire shapes (tests/fixtures/gemini); the
emulator is driven with hand-written request bodies, never through the codec.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from helpers_fixtures import sse_payloads
from thoughtline.testing.gemini_emulator import GeminiEmulator
from thoughtline.testing.signing import SKIP_THOUGHT_SIGNATURE

SIG = "thoughtSignature"
MODEL = "gemini-3-pro-preview"
KEY = {"x-goog-api-key": "test-key"}
TOOLS = [{"functionDeclarations": [
    {"name": "weather", "description": "w", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}},
    {"name": "clock", "description": "c", "parameters": {"type": "object", "properties": {}}},
]}]
THINK = {"thinkingConfig": {"includeThoughts": True}}


@pytest.fixture(scope="module")
def emu() -> Iterator[GeminiEmulator]:
    with GeminiEmulator() as emulator:
        yield emulator


def post(emu: GeminiEmulator, body: dict[str, Any], *, model: str = MODEL, stream: bool = False,
         sse: bool = True, base: str | None = None,
         headers: dict[str, str] | None = None) -> httpx.Response:
    method = "streamGenerateContent" if stream else "generateContent"
    query = "?alt=sse" if stream and sse else ""
    url = f"{base or emu.base_url}/models/{model}:{method}{query}"
    if base is not None and base.endswith("/models"):
        url = f"{base}/{model}:{method}{query}"
    return httpx.post(url, content=orjson.dumps(body),
                      headers=KEY if headers is None else headers, timeout=10)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def parts(response: httpx.Response) -> list[dict[str, Any]]:
    return response.json()["candidates"][0]["content"]["parts"]


def call_turn(emu: GeminiEmulator, prompt: str = "weather in Rome?") -> list[dict[str, Any]]:
    response = post(emu, {"contents": [user(prompt)], "tools": TOOLS})
    assert response.status_code == 200
    return parts(response)


def replay(model_parts: list[dict[str, Any]], prompt: str = "weather in Rome?") -> dict[str, Any]:
    results = [{"functionResponse": {"name": p["functionCall"]["name"],
                                     "response": {"output": "20 C"}}}
               for p in model_parts if "functionCall" in p]
    return {"contents": [user(prompt), {"role": "model", "parts": model_parts},
                         {"role": "user", "parts": results}], "tools": TOOLS}


def test_whole_text_turn_signs_its_text_part_after_the_thought(emu: GeminiEmulator) -> None:
    response = post(emu, {"contents": [user("hello")], "generationConfig": THINK})
    assert response.status_code == 200
    thought, text = parts(response)
    assert thought["thought"] is True and SIG not in thought
    assert text["text"] and emu.issued[text[SIG]] == "gemini-signature"
    body = response.json()
    assert body["candidates"][0]["finishReason"] == "STOP"
    assert body["usageMetadata"]["thoughtsTokenCount"] > 0


def test_streamed_text_turn_carries_its_signature_on_a_trailing_empty_part(
        emu: GeminiEmulator) -> None:
    response = post(emu, {"contents": [user("hello")]}, stream=True)
    assert response.status_code == 200
    assert b"\r\n\r\n" in response.content
    chunks = sse_payloads(response.text)
    *texts, last = chunks
    assert len(texts) >= 2 and all(SIG not in p for c in texts for p in
                                   c["candidates"][0]["content"]["parts"])
    (tail,) = last["candidates"][0]["content"]["parts"]
    assert tail["text"] == "" and tail[SIG] in emu.issued
    assert last["candidates"][0]["finishReason"] == "STOP"
    whole = post(emu, {"contents": [user("hello")]})
    assert "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks) == \
        parts(whole)[0]["text"]


def test_json_array_stream_without_alt_sse(emu: GeminiEmulator) -> None:
    response = post(emu, {"contents": [user("hello")]}, stream=True, sse=False)
    assert response.status_code == 200 and response.text.startswith("[")
    chunks = orjson.loads(response.content)
    assert chunks[-1]["candidates"][0]["content"]["parts"][0][SIG] in emu.issued


def test_parallel_calls_only_the_first_is_signed(emu: GeminiEmulator) -> None:
    model_parts = call_turn(emu, "weather and time, both please")
    assert [("functionCall" in p, SIG in p) for p in model_parts] == [(True, True),
                                                                      (True, False)]
    assert post(emu, replay(model_parts, "weather and time, both please")).status_code == 200
    streamed = sse_payloads(post(emu, {"contents": [user("both please")], "tools": TOOLS},
                                 stream=True).text)
    flat = [p for c in streamed for p in c["candidates"][0]["content"]["parts"]]
    assert [SIG in p for p in flat] == [True, False, False] and flat[-1] == {"text": ""}


def test_signed_call_replayed_verbatim_is_accepted_and_recorded(emu: GeminiEmulator) -> None:
    model_parts = call_turn(emu)
    before = len(emu.received)
    response = post(emu, replay(model_parts))
    assert response.status_code == 200
    assert "Here is what the tools said" in parts(response)[0]["text"]
    assert emu.checks[-1].verified == [model_parts[0][SIG]]
    assert emu.received[before].body == replay(model_parts)


def test_missing_signature_is_refused_with_the_ai_studio_wording(emu: GeminiEmulator) -> None:
    model_parts = [{k: v for k, v in p.items() if k != SIG} for p in call_turn(emu)]
    response = post(emu, replay(model_parts))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["message"].startswith(
        "Function call is missing a thought_signature in functionCall parts.")
    assert "function call `default_api:weather` , position 2." in error["message"]
    assert emu.received[-1].status == 400


def test_vertex_path_uses_bearer_auth_and_the_vertex_wordings(emu: GeminiEmulator) -> None:
    base = emu.vertex_base_url("proj", "us-central1")
    bearer = {"authorization": "Bearer token"}
    first = post(emu, {"contents": [user("weather?")], "tools": TOOLS}, base=base,
                 headers=bearer)
    assert first.status_code == 200
    model_parts = parts(first)
    unsigned = [{k: v for k, v in p.items() if k != SIG} for p in model_parts]
    missing = post(emu, replay(unsigned, "weather?"), base=base, headers=bearer)
    assert missing.json()["error"]["message"] == (
        "Unable to submit request because function call `weather` in the 2. content block is "
        "missing a `thought_signature`.")
    altered = [{**model_parts[0], SIG: model_parts[0][SIG][:-8] + "AAAAAAA="}]
    invalid = post(emu, replay(altered, "weather?"), base=base, headers=bearer)
    assert invalid.json()["error"]["message"].startswith(
        "Unable to submit request because Thought signature is not valid..")
    assert post(emu, {"contents": [user("hi")]}, base=base, headers=KEY).status_code == 401


@pytest.mark.parametrize("change", ["truncate", "other-args", "other-kind"])
def test_altered_or_moved_signature_is_corrupted(emu: GeminiEmulator, change: str) -> None:
    (call,) = call_turn(emu)
    if change == "truncate":
        call = {**call, SIG: call[SIG][:-4]}
    elif change == "other-args":
        call = {**call, "functionCall": {**call["functionCall"], "args": {"city": "Paris"}}}
    else:
        text_sig = parts(post(emu, {"contents": [user("hello")]}))[0][SIG]
        call = {**call, SIG: text_sig}
    response = post(emu, replay([call]))
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Corrupted thought signature."


def test_args_key_order_does_not_matter(emu: GeminiEmulator) -> None:
    tools = [{"functionDeclarations": [{"name": "pair", "parameters": {
        "type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}}}]}]
    response = post(emu, {"contents": [user("pair")], "tools": tools})
    (call,) = parts(response)
    args = call["functionCall"]["args"]
    reordered = {**call, "functionCall": {**call["functionCall"],
                                          "args": dict(reversed(list(args.items())))}}
    body = {**replay([reordered], "pair"), "tools": tools}
    assert post(emu, body).status_code == 200


def test_dummy_signature_is_accepted_unless_the_route_rejects_it() -> None:
    foreign = [{"functionCall": {"name": "weather", "args": {"city": "Rome"}},
                SIG: SKIP_THOUGHT_SIGNATURE}]
    with GeminiEmulator() as emu:
        assert post(emu, replay(foreign)).status_code == 200
        assert emu.checks[-1].dummies == 1
        emu.accept_dummy = False
        refused = post(emu, replay(foreign))
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == "Corrupted thought signature."


def test_older_models_do_not_enforce_function_call_signatures(emu: GeminiEmulator) -> None:
    unsigned = [{"functionCall": {"name": "weather", "args": {"city": "Rome"}}}]
    assert post(emu, replay(unsigned), model="gemini-2.5-flash").status_code == 200
    assert post(emu, replay(unsigned), model="gemini-3-pro-image-preview").status_code == 200
    assert post(emu, replay(unsigned), model="gemini-4-argon").status_code == 400


def test_text_signature_on_other_text_is_silently_ignored(emu: GeminiEmulator) -> None:
    text = parts(post(emu, {"contents": [user("hello")]}))[0]
    moved = {"contents": [user("hello"), {"role": "model", "parts": [
        {"text": "something else", SIG: text[SIG]}]}, user("again")]}
    assert post(emu, moved).status_code == 200
    assert emu.checks[-1].ignored == [text[SIG]] and emu.checks[-1].verified == []
    kept = {"contents": [user("hello"), {"role": "model", "parts": [text]}, user("again")]}
    assert post(emu, kept).status_code == 200
    assert emu.checks[-1].verified == [text[SIG]]


def test_unknown_fields_are_refused(emu: GeminiEmulator) -> None:
    top = post(emu, {"contents": [user("hi")], "reasoning_content": "x"})
    assert top.status_code == 400
    assert top.json()["error"]["message"] == (
        "Invalid JSON payload received. Unknown name \"reasoning_content\" at '': "
        "Cannot find field.")
    part = post(emu, {"contents": [{"role": "user", "parts": [{"text": "hi", "extra": 1}]}]})
    assert "Unknown name \"extra\" at 'contents[0].parts[0]'" in part.json()["error"]["message"]


def test_a_part_with_no_data_is_refused_an_unsigned_empty_text_among_them(
        emu: GeminiEmulator) -> None:
    """A part must hold one of ``Part.data`` (the ``Content`` reference); an empty ``text`` is
    none (router-for-me/CLIProxyAPI#3485, kittors/CliRelay#264), unless it carries a signature:
    Gemini's own streamed tail goes back as received."""
    wording = ("* GenerateContentRequest.contents[1].parts[0].data: required oneof field "
               "'data' must have one initialized field")
    for empty in ({"text": ""}, {}, {"thought": True, "text": ""}):
        body = {"contents": [user("hi"), {"role": "model", "parts": [empty]}, user("again")]}
        refused = post(emu, body)
        assert refused.status_code == 400, empty
        assert refused.json()["error"]["message"] == wording
    chunks = sse_payloads(post(emu, {"contents": [user("hello")]}, stream=True).text)
    streamed = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert streamed[-1]["text"] == "" and SIG in streamed[-1]
    replayed = {"contents": [user("hello"), {"role": "model", "parts": streamed}, user("more")]}
    assert post(emu, replayed).status_code == 200


def test_requests_without_a_key_are_refused(emu: GeminiEmulator) -> None:
    response = post(emu, {"contents": [user("hi")]}, headers={})
    assert response.status_code == 403
    assert response.json()["error"]["status"] == "PERMISSION_DENIED"


def test_a_restarted_emulator_accepts_signatures_issued_before() -> None:
    with GeminiEmulator() as first:
        model_parts = call_turn(first)
    with GeminiEmulator() as second:
        assert post(second, replay(model_parts)).status_code == 200


def test_injected_failure_is_returned_and_recorded() -> None:
    with GeminiEmulator() as emu:
        emu.fail_next(503, {"error": {"code": 503, "message": "overloaded",
                                      "status": "UNAVAILABLE"}})
        assert post(emu, {"contents": [user("hi")]}).status_code == 503
        assert post(emu, {"contents": [user("hi")]}).status_code == 200
        assert [r.status for r in emu.received] == [503, 200]


def test_a_cut_stream_ends_before_its_finish_reason() -> None:
    with GeminiEmulator() as emu:
        emu.cut_stream_after(2)
        chunks = sse_payloads(post(emu, {"contents": [user("hello")]}, stream=True).text)
        assert len(chunks) == 2
        assert all("finishReason" not in c["candidates"][0] for c in chunks)
        whole = sse_payloads(post(emu, {"contents": [user("hello")]}, stream=True).text)
        assert whole[-1]["candidates"][0]["finishReason"] == "STOP"
