"""Gateway edges (issue 47 item 1), through the real gateway and a loopback upstream, each test
able to fail on one named bug: the overflow recovery never sends a turn a third time, every error
path that shows an upstream's words keeps its key out of the answer, the logs and ``state.db``,
and the bearer scheme is read case-insensitively (RFC 7235 §2.1: "auth-scheme" is
case-insensitive, https://www.rfc-editor.org/rfc/rfc7235#section-2.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import MODEL, UPSTREAM_KEY, running_gateway
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer

#: An OpenAI-style relay's rejection of a field: the engine learns to drop it and retries once.
UNRECOGNIZED = {"error": {"message": "Unrecognized request argument supplied: reasoning_content",
                          "type": "invalid_request_error", "param": None, "code": None}}
#: OpenAI's context-window rejection (code ``context_length_exceeded``).
OVERFLOW = {"error": {"message": "This model's maximum context length is 4096 tokens. However, "
                                 "your messages resulted in 5012 tokens.",
                      "type": "invalid_request_error", "param": "messages",
                      "code": "context_length_exceeded"}}
SUMMARY = {"id": "chatcmpl-summary", "object": "chat.completion", "created": 1,
           "model": "deepseek-v4-pro", "choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant",
                                                                "content": "Notes 0-5 kept."}}]}


RELAY = {"name": "cu", "provider": "custom", "model": "demo-reasoner"}  # replays reasoning_content
RELAY_MODEL = "cu/demo-reasoner"
TOOLS = [{"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


@pytest.fixture
def relay() -> Iterator[ChatEmulator]:
    with ChatEmulator("plain") as emu:
        yield emu


def _ask(origin: str, messages: list[dict[str, Any]], model: str = MODEL,
         **headers: str) -> httpx.Response:
    return httpx.post(origin + "/v1/chat/completions", timeout=60, headers=headers,
                      json={"model": model, "messages": messages, "tools": TOOLS})


def _long_tool_loop(origin: str) -> list[dict[str, Any]]:
    """Six noted turns, then a tool call the gateway answered (its reasoning is stored and goes
    back upstream) and its result: the message the next request answers."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for i in range(6):
        messages.append({"role": "user", "content": f"Note {i}: " + "keep this in mind. " * 40})
        messages.append({"role": "assistant", "content": f"Noted {i}."})
    messages.append({"role": "user", "content": "Weather in Paris?"})
    answer = _ask(origin, messages, RELAY_MODEL)
    assert answer.status_code == 200, answer.text
    (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
    messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    messages.append({"role": "tool", "tool_call_id": call["id"], "content": "Sunny, 21 °C"})
    return messages


# --- the overflow recovery: at most two requests per turn ---------------------------------------


def test_a_turn_that_used_its_retry_is_not_compacted_and_sent_again(
        relay: ChatEmulator, tmp_path: Path) -> None:
    # The first request teaches a lesson (its retry is the turn's second request); that retry
    # overflows: no request is left for the turn, so no compaction and no third send.
    with running_gateway(relay, tmp_path, **RELAY) as gw:
        messages = _long_tool_loop(gw.server.origin)
        before = len(relay.received)
        relay.fail_next(400, UNRECOGNIZED)
        relay.fail_next(400, OVERFLOW)
        answer = _ask(gw.server.origin, messages, RELAY_MODEL)
    assert answer.status_code == 400
    sent = relay.received[before:]
    assert [r.status for r in sent] == [400, 400]
    assert b"reasoning_content" in sent[0].raw and b"reasoning_content" not in sent[1].raw


def test_the_retry_after_a_compaction_is_the_turns_last_request(
        relay: ChatEmulator, tmp_path: Path) -> None:
    # Overflow, one summary request, the compacted retry: rejected with a wording that would
    # teach a lesson, it is still not sent a third time.
    with running_gateway(relay, tmp_path, **RELAY) as gw:
        messages = _long_tool_loop(gw.server.origin)
        before = len(relay.received)
        relay.fail_next(400, OVERFLOW)
        relay.fail_next(200, SUMMARY)
        relay.fail_next(400, UNRECOGNIZED)
        answer = _ask(gw.server.origin, messages, RELAY_MODEL)
    assert answer.status_code == 400
    sent = relay.received[before:]
    assert [r.status for r in sent] == [400, 200, 400]
    assert b"Summarize" in sent[1].raw  # the summary's request, not the turn's
    assert len(sent[2].raw) < len(sent[0].raw)  # the compacted retry
    assert b"reasoning_content" in sent[2].raw  # a lesson could drop it: it is not tried


# --- every error path keeps the upstream key out ------------------------------------------------

ECHO = f"invalid request from key {UPSTREAM_KEY}"


def _sse(*payloads: bytes) -> bytes:
    return b"".join(b"data: " + p + b"\n\n" for p in payloads)


_CHUNK = orjson.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1,
                       "model": "deepseek-v4-pro", "choices": [{"index": 0, "delta": {
                           "role": "assistant", "content": "Hel"}, "finish_reason": None}]})

#: name -> (status, body, media type, stream): each reaches a different formatting path.
FAILURES: dict[str, tuple[int, bytes, str, bool]] = {
    # an HTTP error status (transport → ProviderError → the face's upstream error)
    "400 json": (400, orjson.dumps({"error": {"message": ECHO}}), "application/json", False),
    "401 auth": (401, orjson.dumps({"error": {"message": f"Incorrect API key provided: "
                                                         f"{UPSTREAM_KEY}"}}),
                 "application/json", False),
    "404 text": (404, f"no route for {UPSTREAM_KEY}".encode(), "text/plain", True),
    # a 200 that is not JSON (the transport's "not JSON" error)
    "200 not json": (200, f"<html>{UPSTREAM_KEY}</html>".encode(), "text/html", False),
    # a 200 JSON error object (the codec's ProtocolError → the gateway's broken-answer error)
    "200 error object": (200, orjson.dumps({"error": {"message": ECHO}}), "application/json",
                         False),
    # an error event inside a stream (the fold's ProtocolError, streamed to the client)
    "stream error event": (200, _sse(_CHUNK, orjson.dumps({"error": {"message": ECHO}})),
                           "text/event-stream", True),
    # a stream element that is not JSON (the transport's StreamInterrupted)
    "stream malformed": (200, _sse(_CHUNK, f"{{oops {UPSTREAM_KEY}".encode()),
                         "text/event-stream", True),
}


class _Scripted:
    """A loopback Chat upstream answering every request with one failure."""

    def __init__(self, status: int, body: bytes, media: str) -> None:
        async def answer(request: Request) -> Response:
            await request.body()
            return Response(body, status_code=status, media_type=media)

        self.server = LoopbackServer(Starlette(routes=[Route("/v1/chat/completions", answer,
                                                             methods=["POST"])]))

    @property
    def base_url(self) -> str:
        return self.server.origin + "/v1"


@pytest.fixture
def scripted(request: pytest.FixtureRequest) -> Iterator[tuple[_Scripted, bool]]:
    status, body, media, stream = FAILURES[request.param]
    upstream = _Scripted(status, body, media)
    upstream.server.start()
    try:
        yield upstream, stream
    finally:
        upstream.server.stop()


def _files_hold(root: Path, secret: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and secret in p.read_bytes()]


#: Each face renders the same failure its own way (a JSON error, an SSE error frame,
#: ``response.failed``): face -> (path, the body asking "hi").
FACES: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    "messages": ("/v1/messages", {"max_tokens": 64,
                                  "messages": [{"role": "user", "content": "hi"}]}),
    "responses": ("/v1/responses", {"input": "hi"}),
}


@pytest.mark.parametrize("face", sorted(FACES))
@pytest.mark.parametrize("scripted", sorted(FAILURES), indirect=True)
def test_no_error_path_shows_the_upstream_key(scripted: tuple[_Scripted, bool], face: str,
                                              tmp_path: Path,
                                              capfd: pytest.CaptureFixture[str]) -> None:
    upstream, stream = scripted
    path, body = FACES[face]
    start = UPSTREAM_KEY[:8].encode()  # a start of the key is redacted like the key
    with running_gateway(upstream, tmp_path) as gw:
        answer = httpx.post(gw.server.origin + path, timeout=60,
                            json={"model": MODEL, "stream": stream, **body})
        shown = answer.content
    assert answer.status_code >= 400 or b"error" in shown  # it failed, visibly
    assert start not in shown, shown
    logged = capfd.readouterr()
    assert UPSTREAM_KEY[:8] not in logged.err + logged.out
    assert _files_hold(tmp_path, start) == []  # state.db (and its WAL), the request log


# --- the bearer scheme's case -------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(deepseek: ChatEmulator, tmp_path: Path,
                                               scheme: str) -> None:
    with running_gateway(deepseek, tmp_path, tokens=("tok-edges-1",)) as gw:
        origin = gw.server.origin
        ask = [{"role": "user", "content": "hi"}]
        good = _ask(origin, ask, authorization=f"{scheme} tok-edges-1")
        wrong = _ask(origin, ask, authorization=f"{scheme} tok-edges-2")
    assert good.status_code == 200, good.text
    assert wrong.status_code == 401
