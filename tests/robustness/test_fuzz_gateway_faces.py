"""Mutation fuzzing of the gateway's Messages and Responses faces (issue 22, item 5).

Each case takes one request Claude Code (``POST /v1/messages``) or Codex (``POST /v1/responses``)
really sent (``tests/fixtures/clients``), changes one thing with the shared mutator
(``fuzz_corpus.mutate``), and POSTs it to an in-process gateway whose upstream answers with a
recorded DeepSeek reply (``gateway_replies``). The contract: an answer, or a 4xx in that face's
own error shape, never a 5xx (the canned upstream never fails, so not even 502/503); never more
than two upstream requests; a streamed answer ends with the face's own last event.

The Chat face is fuzzed in ``test_fuzz_replies.py``; ``tests/codecs/test_responses_client.py``
has a codec-level property test of generated Responses bodies, not of recorded ones over HTTP.
Bounded and derandomized; a crash found later becomes an ``@example``. Case counts:
``pytest tests/robustness/test_fuzz_gateway_faces.py --hypothesis-show-statistics``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from fuzz_corpus import INDEX, ODD_JSON, OPS, mutate
from gateway_replies import MODEL, CannedGateway, canned_gateway
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_fuzz_replies import ANSWER, ANSWER_EVENTS

from helpers_fixtures import FIXTURES

FACE_CASES = 200  # per face

FACE_FUZZ = settings(max_examples=FACE_CASES, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.function_scoped_fixture])


def _recorded(prefix: str) -> list[tuple[str, Any]]:
    """(path, body) of every request a client recording holds."""
    out = []
    for path in sorted((FIXTURES / "clients").glob(f"{prefix}*.requests.jsonl")):
        for line in path.read_bytes().splitlines():
            if line.strip():
                record = orjson.loads(line)
                out.append((record["path"], record["body"]))
    return out


CLAUDE_CODE = _recorded("claude_code_")
CODEX = _recorded("codex_")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CannedGateway]:
    with canned_gateway(tmp_path_factory.mktemp("fuzz-faces"), ANSWER,
                        ANSWER_EVENTS) as running:
        yield running


def _post(gateway: CannedGateway, recorded: list[tuple[str, Any]], which: int, stream: bool,
          pick: int | tuple[Any, ...], op: str, new: Any) -> httpx.Response:
    path, body = recorded[which % len(recorded)]
    body = mutate({**body, "model": MODEL, "stream": stream}, pick, op, new)
    origin = gateway.url.removesuffix("/v1/chat/completions")
    before = gateway.transport.attempts
    # json, not orjson: it writes what orjson cannot (2 ** 64, NaN), which a client may send.
    response = gateway.http.post(origin + path, content=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    assert gateway.transport.attempts - before <= 2
    event(f"HTTP {response.status_code}")
    assert response.status_code == 200 or 400 <= response.status_code < 500, (
        response.status_code, response.text[:500])
    return response


def _sse_events(text: str) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def _streamed(response: httpx.Response) -> bool:
    return response.headers["content-type"].startswith("text/event-stream")


@FACE_FUZZ
@given(which=INDEX, stream=st.booleans(), pick=INDEX, op=st.sampled_from(OPS), new=ODD_JSON)
def test_the_messages_face_answers_mutated_claude_code_bodies_without_a_server_error(
        gateway: CannedGateway, which: int, stream: bool, pick: int | tuple[Any, ...], op: str,
        new: Any) -> None:
    response = _post(gateway, CLAUDE_CODE, which, stream, pick, op, new)
    if response.status_code != 200:
        body = response.json()
        assert body["type"] == "error", body
        assert isinstance(body["error"]["type"], str) and body["error"]["type"]
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    elif _streamed(response):
        events = _sse_events(response.text)
        assert events[0]["type"] == "message_start", response.text[:500]
        assert events[-1]["type"] in ("message_stop", "error"), response.text[-500:]
        if events[-1]["type"] == "error":
            assert events[-1]["error"]["message"], events[-1]
    else:
        body = response.json()
        assert body["type"] == "message" and body["role"] == "assistant", body


@FACE_FUZZ
@given(which=INDEX, stream=st.booleans(), pick=INDEX, op=st.sampled_from(OPS), new=ODD_JSON)
def test_the_responses_face_answers_mutated_codex_bodies_without_a_server_error(
        gateway: CannedGateway, which: int, stream: bool, pick: int | tuple[Any, ...], op: str,
        new: Any) -> None:
    response = _post(gateway, CODEX, which, stream, pick, op, new)
    if response.status_code != 200:
        error = response.json()["error"]
        assert isinstance(error["message"], str) and error["message"]
        assert isinstance(error["type"], str) and error["type"]
    elif _streamed(response):
        events = _sse_events(response.text)
        assert events[0]["type"] == "response.created", response.text[:500]
        assert events[-1]["type"] in ("response.completed", "response.incomplete",
                                      "response.failed", "error"), response.text[-500:]
    else:
        body = response.json()
        assert body["object"] == "response" and isinstance(body["output"], list), body


def test_the_client_recordings_cover_both_faces() -> None:
    assert len(CLAUDE_CODE) >= 10 and len(CODEX) >= 10
    assert {path.partition("?")[0] for path, _ in CLAUDE_CODE} == {"/v1/messages"}
    assert {path for path, _ in CODEX} == {"/v1/responses"}
