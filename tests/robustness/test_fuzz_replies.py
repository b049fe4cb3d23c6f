"""Mutation fuzzing in the suite (issue 22, item 5): every decoder and every fold on mutated
recorded replies, and the gateway's Chat face on mutated recorded client bodies.

Each case takes one recording from tests/fixtures and changes one thing: a value replaced by one
of another type (null, a boolean, a huge or negative number, NaN, a string, a list, an object, a
deep nest), a key or item deleted, an item duplicated, a value wrapped; for streams also an event
dropped, repeated or renamed, or the stream cut. A reply runs through the real turn engine; the
only error allowed out is a ``ProtocolError`` naming the route, and an answer it accepts must be
stored, storable and renderable (``reply_support.check_outcome``). A client body must get an
answer or a 4xx in the OpenAI error shape, never a 5xx.

Hypothesis runs derandomized (the same cases on every run) and bounded (``max_examples``) so the
whole file adds a few seconds to the suite. A crash found later becomes an ``@example`` below.
Case counts: ``pytest tests/robustness/test_fuzz_replies.py --hypothesis-show-statistics``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_corpus import (
    APIS,
    INDEX,
    ODD,
    ODD_JSON,
    OPS,
    STREAM_OPS,
    Recording,
    deep,
    deep_text,
    mutate,
    streams,
    wholes,
)
from gateway_replies import MODEL, CannedGateway, canned_gateway, sse_data
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from reply_support import check_outcome, run_reply

from helpers_fixtures import FIXTURES

CASES = 250  # per API and per kind (whole, stream): 2,500 replies in all
BODY_CASES = 150

FUZZ = settings(max_examples=CASES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _chosen(found: list[Recording], which: int | str) -> Recording:
    if isinstance(which, str):
        return next(r for r in found if r.name == which)
    return found[which % len(found)]




@pytest.mark.parametrize("api", APIS)
@FUZZ
@given(which=INDEX, pick=INDEX, op=st.sampled_from(OPS), new=ODD)
# Crashes the fuzzer found (now ProtocolErrors naming the field), kept as fixed cases:
@example(which="openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i0.response.json",
         pick=("usage", "prompt_tokens"), op="replace", new={"n": 1})
@example(which="openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i0.response.json",
         pick=("usage", "completion_tokens"), op="replace", new=1e300)
@example(which="anthropic/pydantic-ai-anthropic-tool-with-thinking.i0.response.json",
         pick=("content", 2, "input"), op="replace", new={"x": 2 ** 70})
@example(which="openai-responses/pydantic-ai-openai-responses-gpt55-phase.i0.response.json",
         pick=("output", 0, "extra"), op="replace", new=deep(300))
@example(which="openai-compat/pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i0.response.json",
         pick=("choices", 0, "message", "tool_calls", 0, "function", "arguments"), op="replace",
         new=deep_text(300))
def test_every_decoder_survives_mutated_recorded_replies(
        api: str, which: int | str, pick: int | tuple[Any, ...], op: str, new: Any) -> None:
    found = wholes(api)
    if isinstance(which, str) and not any(r.name == which for r in found):
        return  # a fixed case of another API
    body = mutate(_chosen(found, which).whole, pick, op, new)
    outcome = run_reply(api, body, stream=False)
    event("protocol error" if outcome.error else "accepted")
    check_outcome(outcome)


@pytest.mark.parametrize("api", APIS)
@FUZZ
@given(which=INDEX, at=INDEX, stream_op=st.sampled_from(STREAM_OPS), pick=INDEX,
       op=st.sampled_from(OPS), new=ODD)
@example(which="anthropic/pydantic-ai-anthropic-thinking-stream.i0.response.sse.txt#0", at=3,
         stream_op="payload", pick=("index",), op="replace", new=[0])
@example(which="openai-responses/pydantic-ai-openai-responses-gpt55-phase-stream.i0.response"
               ".sse.txt#0", at=2, stream_op="payload", pick=("output_index",), op="replace",
         new=-(2 ** 70))
def test_every_fold_survives_mutated_recorded_streams(
        api: str, which: int | str, at: int, stream_op: str, pick: int | tuple[Any, ...],
        op: str, new: Any) -> None:
    found = streams(api)
    if isinstance(which, str) and not any(r.name == which for r in found):
        return
    events = list(_chosen(found, which).events)
    i = at % len(events)
    kind, payload = events[i]
    if stream_op == "payload":
        events[i] = (kind, mutate(payload, pick, op, new))
    elif stream_op == "drop":
        del events[i]
    elif stream_op == "repeat":
        events.insert(i, (kind, copy.deepcopy(payload)))
    elif stream_op == "retype":
        events[i] = (events[pick % len(events)][0] or str(new)[:20], payload)
    else:
        del events[i:]
    outcome = run_reply(api, events, stream=True)
    event("protocol error" if outcome.error else "accepted")
    check_outcome(outcome)


# --- the gateway's Chat face ----------------------------------------------------------------------

REQUESTS = sorted(p for p in (FIXTURES / "openai-compat").glob("*.request.json"))
ANSWER = orjson.loads(
    (FIXTURES / "openai-compat" / "pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i0"
     ".response.json").read_bytes())
ANSWER_EVENTS = [("", orjson.loads(line)) for line in (
    FIXTURES / "openai-compat" / "vercel-deepseek-tool-call.chunks.txt").read_text().splitlines()
    if line.strip()]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CannedGateway]:
    with canned_gateway(tmp_path_factory.mktemp("fuzz-gateway"), ANSWER,
                        ANSWER_EVENTS) as running:
        yield running


def _client_body(which: int, stream: bool) -> Any:
    body = orjson.loads(REQUESTS[which % len(REQUESTS)].read_bytes())
    return {**body, "model": MODEL, "stream": stream}


@settings(max_examples=BODY_CASES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(which=INDEX, stream=st.booleans(), pick=INDEX, op=st.sampled_from(OPS), new=ODD_JSON)
@example(which=0, stream=False, pick=("metadata",), op="replace", new=deep(200))
@example(which=1, stream=False, pick=("messages", 2, "tool_calls", 0, "function", "arguments"),
         op="replace", new=deep_text(300))  # a 500 before (issue 46): now a 400
def test_the_chat_face_answers_mutated_client_bodies_without_a_server_error(
        gateway: CannedGateway, which: int, stream: bool, pick: int | tuple[Any, ...], op: str,
        new: Any) -> None:
    body = mutate(_client_body(which, stream), pick, op, new)
    before = gateway.transport.attempts
    response = gateway.post(orjson.dumps(body))
    event(f"HTTP {response.status_code}")
    assert response.status_code in (200, 400, 404), response.text[:500]
    assert gateway.transport.attempts - before <= 2
    if response.status_code != 200:
        error = response.json()["error"]
        assert isinstance(error["message"], str) and error["message"]
    elif response.headers["content-type"].startswith("text/event-stream"):
        assert sse_data(response.text)[-1] == "[DONE]", response.text[-500:]
    else:
        assert response.json()["choices"][0]["message"]["role"] == "assistant"


def test_the_corpus_covers_every_api() -> None:
    for api in APIS:
        assert len(wholes(api)) >= 10 and len(streams(api)) >= 4, api
    assert len(REQUESTS) >= 15
    assert Path(REQUESTS[0]).is_file()
