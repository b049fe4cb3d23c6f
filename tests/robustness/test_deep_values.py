"""Deep and huge values are clean errors wherever they enter (issue 46 item 3).

Tool-call arguments are JSON held in a string, so the body's own nesting bound (``MAX_DEPTH``)
never saw them: 300 levels inside ``arguments`` gave a 500 from a client (a recursion limit while
digesting the history) and were stored from an upstream, to break the next request that replayed
them. Now a client gets a 400 naming the bound on every face, with nothing sent or stored; an
upstream's answer is a ``ProtocolError`` naming the route (a 502, or an error event once a stream
has started) and is not stored. A Vertex stream cannot build arguments past the bound, or an array
of a million nulls, through ``partialArgs`` paths. A token count is 0 … int64 (a negative pair
summed to ``total_tokens`` beyond what orjson writes, crashing the Chat face's rendering).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_corpus import recordings
from gateway_replies import MODEL, canned_gateway, sse_data
from reply_support import check_outcome, run_reply
from test_fuzz_replies import ANSWER_EVENTS
from test_gateway_broken_replies import WHOLE, error_of

from thoughtline.codecs.shape import MAX_DEPTH

LEVELS = 300
DEEP_TEXT = "[" * LEVELS + "1" + "]" * LEVELS
NAMED = f"deeper than {MAX_DEPTH} levels"


def deep_value(levels: int = LEVELS) -> Any:
    return orjson.loads('{"a":' * levels + "1" + "}" * levels)


def replaced(value: Any, key: str, new: Callable[[Any], Any], *, first_only: bool) -> Any:
    """``value`` (copied; a stream's ``(type, payload)`` pairs too) with every ``key``'s value (or
    only the first, later ones emptied) replaced by ``new``."""
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        payloads = replaced([payload for _, payload in value], key, new, first_only=first_only)
        return [(kind, payload) for (kind, _), payload in zip(value, payloads, strict=True)]
    out = copy.deepcopy(value)
    seen = False
    stack = [out]
    while stack:
        item = stack.pop(0)
        children = item.items() if isinstance(item, dict) else enumerate(item) \
            if isinstance(item, list) else ()
        for name, child in list(children):
            if name == key:
                item[name] = new(child) if not (first_only and seen) else (
                    "" if isinstance(child, str) else child)
                seen = True
            else:
                stack.append(child)
    assert seen, key
    return out


def recording(api: str, name: str) -> Any:
    found = next(r for r in recordings(api) if r.name.startswith(name))
    return found.whole if found.whole is not None else list(found.events)


# --- from a client: every face ------------------------------------------------------------------

CALL = {"id": "call_1", "name": "f"}
FACES = {
    "chat": ("/v1/chat/completions", lambda arguments: {"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "f", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]}),
    "responses": ("/v1/responses", lambda arguments: {"input": [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": arguments},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]}),
    # tool_use.input is an object in the body itself, bounded with the body (passed before too)
    "messages": ("/v1/messages", lambda arguments: {"max_tokens": 100, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": "DEEP"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]}),
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("face", sorted(FACES))
def test_deep_tool_call_arguments_from_a_client_are_a_400_naming_the_bound(
        tmp_path: Path, face: str, stream: bool) -> None:
    path, build = FACES[face]
    body = {"model": MODEL, "stream": stream, **build(DEEP_TEXT)}
    raw = orjson.dumps(body).replace(b'"DEEP"', DEEP_TEXT.encode())
    with canned_gateway(tmp_path, WHOLE, ANSWER_EVENTS) as gw:
        origin = gw.url.removesuffix("/v1/chat/completions")
        response = gw.http.post(origin + path, content=raw,
                                headers={"content-type": "application/json"})
        assert response.status_code == 400, response.text[:300]
        assert NAMED in response.json()["error"]["message"]
        assert gw.transport.attempts == 0 and gw.stored_answers() == 0
        shallow = raw.replace(DEEP_TEXT.encode(), b"[1]")  # the same request, shallow: served
        assert gw.http.post(origin + path, content=shallow,
                            headers={"content-type": "application/json"}).status_code == 200


def test_arguments_that_are_not_json_are_still_text(tmp_path: Path) -> None:
    path, build = FACES["chat"]
    body = {"model": MODEL, **build("[" * LEVELS)}  # brackets, but not JSON: passed as text
    with canned_gateway(tmp_path, WHOLE) as gw:
        origin = gw.url.removesuffix("/v1/chat/completions")
        assert gw.http.post(origin + path, content=orjson.dumps(body),
                            headers={"content-type": "application/json"}).status_code == 200


# --- from an upstream: the library, every API, whole and streamed --------------------------------

DEEP_TEXT_ARGUMENTS = lambda old: DEEP_TEXT  # noqa: E731
DEEP_OBJECT = lambda old: deep_value()  # noqa: E731

UPSTREAM = [  # api, recording, stream, key, new value (first occurrence; later pieces emptied)
    ("openai-chat", "openai-compat/vercel-deepseek-tool-call.json", False, "arguments",
     DEEP_TEXT_ARGUMENTS),
    ("openai-chat", "openai-compat/vercel-deepseek-tool-call.chunks.txt", True, "arguments",
     DEEP_TEXT_ARGUMENTS),
    ("openai-responses", "openai-responses/pydantic-ai-openai-responses-reasoning-tool-calls.i0",
     False, "arguments", DEEP_TEXT_ARGUMENTS),
    ("openai-responses", "openai-responses/pydantic-ai-openai-responses-gpt55-phase-stream.i0",
     True, "delta", DEEP_TEXT_ARGUMENTS),
    ("anthropic", "anthropic/fantasy-anthropic-thinking-tool-use.i0", False, "input",
     DEEP_OBJECT),
    ("anthropic", "anthropic/fantasy-anthropic-thinking-tool-use-stream.i0", True,
     "partial_json", DEEP_TEXT_ARGUMENTS),
    ("gemini", "gemini/vercel-google-tool-call-gemini3.json", False, "args", DEEP_OBJECT),
    ("gemini", "gemini/vercel-google-tool-call-gemini3.chunks.txt", True, "args", DEEP_OBJECT),
    ("gemini", "gemini/vercel-google-vertex-stream-no-args-tool-call", True, "jsonPath",
     lambda old: "$" + ".a" * LEVELS),
    ("gemini", "gemini/vercel-google-vertex-stream-no-args-tool-call", True, "jsonPath",
     lambda old: "$.a[1000000]"),  # not deep, but a million nulls before the value
]


def _responses_stream(events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The arguments' deltas (the first deep, the rest empty) and every whole copy of them."""
    out, seen = [], False
    for kind, payload in events:
        if payload.get("type") == "response.function_call_arguments.delta":
            payload = {**payload, "delta": "" if seen else DEEP_TEXT}
            seen = True
        elif "arguments" in orjson.dumps(payload).decode().replace("function_call_arguments", ""):
            payload = replaced(payload, "arguments", DEEP_TEXT_ARGUMENTS, first_only=False)
        out.append((kind, payload))
    assert seen
    return out


@pytest.mark.parametrize(("api", "name", "stream", "key", "new"), UPSTREAM,
                         ids=[f"{u[0]}-{'stream' if u[2] else 'whole'}-{u[3]}"
                              for u in UPSTREAM])
def test_deep_arguments_from_an_upstream_are_a_protocol_error_and_nothing_is_stored(
        api: str, name: str, stream: bool, key: str, new: Callable[[Any], Any]) -> None:
    if key == "delta":
        reply = _responses_stream(recording(api, name))
    else:
        reply = replaced(recording(api, name), key, new, first_only=stream)
    outcome = run_reply(api, reply, stream=stream)
    assert outcome.error is not None, outcome.done
    check_outcome(outcome)  # names the route, one line, nothing stored


@pytest.mark.parametrize("counts", [(2 ** 70, 5), (-(2 ** 63), -(2 ** 63)), (-1, 5)],
                         ids=["beyond-64-bits", "negative-pair", "negative"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_usage_count_outside_0_to_int64_is_a_protocol_error(
        counts: tuple[int, int], stream: bool) -> None:
    prompt, completion = counts
    if stream:
        events = recording("openai-chat", "openai-compat/vercel-deepseek-tool-call.chunks.txt")
        reply: Any = replaced(events, "prompt_tokens", lambda old: prompt, first_only=False)
        reply = replaced(reply, "completion_tokens", lambda old: completion, first_only=False)
    else:
        reply = copy.deepcopy(WHOLE)
        reply["usage"].update(prompt_tokens=prompt, completion_tokens=completion)
    outcome = run_reply("openai-chat", reply, stream=stream)
    assert outcome.error is not None and "out of range" in str(outcome.error)
    check_outcome(outcome)


# --- from an upstream: through the gateway --------------------------------------------------------

def _deep_whole() -> Any:
    body = copy.deepcopy(WHOLE)
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = DEEP_TEXT
    return body


def _deep_stream() -> list[Any]:
    events = recording("openai-chat", "openai-compat/vercel-deepseek-tool-call.chunks.txt")
    return replaced(events, "arguments", DEEP_TEXT_ARGUMENTS, first_only=True)


def _hello(stream: bool) -> bytes:
    return orjson.dumps({"model": MODEL, "stream": stream,
                         "messages": [{"role": "user", "content": "hi"}]})


def test_deep_arguments_in_an_upstream_answer_are_a_502_and_the_next_request_is_served(
        tmp_path: Path) -> None:
    with canned_gateway(tmp_path, _deep_whole()) as gw:
        response = gw.post(_hello(False))
        assert response.status_code == 502
        error = error_of(response.json())
        assert NAMED in error["message"] and "deepseek" in error["message"]
        assert gw.stored_answers() == 0
        gw.transport.reply = WHOLE
        assert gw.post(_hello(False)).status_code == 200
        assert gw.stored_answers() == 1


def test_deep_arguments_in_an_upstream_stream_are_an_error_event(tmp_path: Path) -> None:
    with canned_gateway(tmp_path, _deep_stream()) as gw:
        response = gw.post(_hello(True))
        assert response.status_code == 200
        frames = sse_data(response.text)
        assert "[DONE]" not in frames
        assert NAMED in error_of(orjson.loads(frames[-1]))["message"]
        assert gw.stored_answers() == 0


def test_a_negative_usage_pair_upstream_is_a_502_naming_the_field(tmp_path: Path) -> None:
    body = copy.deepcopy(WHOLE)
    body["usage"].update(prompt_tokens=-(2 ** 63), completion_tokens=-(2 ** 63))
    with canned_gateway(tmp_path, body) as gw:
        response = gw.post(_hello(False))
        assert response.status_code == 502
        assert "usage.prompt_tokens" in error_of(response.json())["message"]
        assert gw.stored_answers() == 0
