"""The gateway's Chat face with a broken upstream reply or a too-deep client body (issue 22,
items 2 and 3): a 502 (or an error event mid-stream) in the OpenAI error shape for the first, a
400 naming the problem for the second, and "the client got the answer" always equals "the answer
is stored"."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_corpus import recordings
from gateway_replies import MODEL, canned_gateway, sse_data

from thoughtline.codecs.openai_chat import client
from thoughtline.codecs.shape import MAX_DEPTH

WHOLE = next(r.whole for r in recordings("openai-chat")
             if r.name.endswith("deepseek-thinking-tool-calls-roundtrip.i0.response.json"))
STREAM = next(r.events for r in recordings("openai-chat")
              if "deepseek-reasoner-stream" in r.name)


def hello(stream: bool) -> bytes:
    return orjson.dumps({"model": MODEL, "stream": stream,
                         "messages": [{"role": "user", "content": "hi"}]})


def error_of(body: Any) -> dict[str, Any]:
    assert set(body) == {"error"}
    assert {"message", "type", "param", "code"} <= set(body["error"])
    return body["error"]


def broken_whole() -> Any:
    body = copy.deepcopy(WHOLE)
    body["usage"]["prompt_tokens"] = {"n": 1}
    return body


def broken_stream() -> list[Any]:
    events = [(kind, copy.deepcopy(payload)) for kind, payload in STREAM]
    events[-1][1]["usage"] = {"completion_tokens": [7]}
    return events


def test_a_broken_whole_reply_is_a_502_in_the_openai_shape_and_nothing_is_stored(
        tmp_path: Path) -> None:
    with canned_gateway(tmp_path, broken_whole()) as gw:
        response = gw.post(hello(False))
        assert response.status_code == 502
        error = error_of(response.json())
        assert "usage.prompt_tokens" in error["message"] and "deepseek" in error["message"]
        assert gw.stored_answers() == 0
        gw.transport.reply = WHOLE  # the same client retries and gets (and stores) one answer
        assert gw.post(hello(False)).status_code == 200
        assert gw.stored_answers() == 1


def test_a_broken_stream_is_an_error_event_and_nothing_is_stored(tmp_path: Path) -> None:
    with canned_gateway(tmp_path, broken_stream()) as gw:
        response = gw.post(hello(True))
        assert response.status_code == 200  # the stream had started: the error is an event
        frames = sse_data(response.text)
        error = error_of(orjson.loads(frames[-1]))
        assert "usage.completion_tokens" in error["message"]
        assert "[DONE]" not in frames
        assert gw.stored_answers() == 0


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_that_cannot_be_rendered_is_an_error_and_is_not_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool) -> None:
    # The client must never be told "failed" for an answer the gateway kept (a retry would bill
    # twice): rendering comes before storing, and a failure stores nothing.
    def unrenderable(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("Integer exceeds 64-bit range")

    monkeypatch.setattr(client, "completion_json", unrenderable)
    monkeypatch.setattr(client.ChunkWriter, "finish", unrenderable)
    with canned_gateway(tmp_path, list(STREAM) if stream else WHOLE) as gw:
        response = gw.post(hello(stream))
        if stream:
            error = error_of(orjson.loads(sse_data(response.text)[-1]))
        else:
            assert response.status_code == 502
            error = error_of(response.json())
        assert "cannot be written" in error["message"]
        assert gw.stored_answers() == 0


@pytest.mark.parametrize("levels", [MAX_DEPTH, 300, 1000])
@pytest.mark.parametrize("where", ["metadata", "tools"])
def test_a_client_body_nested_too_deep_gets_a_400_naming_the_problem(
        tmp_path: Path, levels: int, where: str) -> None:
    # ``levels`` arrays inside the body's own object (and more for a tool's schema): past the
    # bound. Before: 200 up to 255 levels, then a plain 500 or a 503 blaming the store.
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    if where == "tools":
        body["tools"] = [{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": "DEEP"}}}]
    else:
        body["metadata"] = "DEEP"
    raw = orjson.dumps(body).replace(b'"DEEP"', b"[" * levels + b"1" + b"]" * levels)
    with canned_gateway(tmp_path, WHOLE) as gw:
        response = gw.post(raw)
        assert response.status_code == 400
        error = error_of(response.json())
        assert f"deeper than {MAX_DEPTH} levels" in error["message"]
        assert gw.transport.attempts == 0 and gw.stored_answers() == 0


def test_a_body_just_within_the_bound_is_served(tmp_path: Path) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "metadata": "DEEP"}
    inner = MAX_DEPTH - 1  # with the body's own object: exactly the bound
    raw = orjson.dumps(body).replace(b'"DEEP"', b"[" * inner + b"1" + b"]" * inner)
    with canned_gateway(tmp_path, WHOLE) as gw:
        assert gw.post(raw).status_code == 200
