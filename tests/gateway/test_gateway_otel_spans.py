"""The spans of a gateway request that did more than one upstream request, and of a request that
came with its client's trace context, read back from a loopback OTLP/HTTP receiver.

A transport retry (a 429 or 503 with ``Retry-After: 0``, then the answer) is two CLIENT spans under
the request's SERVER span, the first an error naming the status; a turn over the upstream's
context window is three: the rejection, the compaction's summary request, the turn sent again; a
Codex compaction (``/v1/responses/compact``) is its summary requests. A request carrying a W3C
``traceparent`` is a span of the client's trace; an invalid one starts a new trace; the header
never goes upstream. No span holds a key or a gateway token.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gateway_support import UPSTREAM_KEY, running_gateway
from responses_face_support import ResponsesAgent, responses_client

from helpers_otel import (
    CLIENT,
    INTERNAL,
    SERVER,
    STATUS_ERROR,
    Receiver,
    attributes,
    flushed,
    no_content_nor_secrets,
)
from helpers_otel import receiving as _receiving
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

TOKEN = "tok-otel-gateway-9c41e7"
QUESTION = [{"role": "user", "content": "How warm is it in Oslo?"}]
#: A client's trace context (the W3C Trace Context spec's own example ids).
TRACE_ID, PARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    with _receiving(monkeypatch) as got:
        yield got


def _children(receiver: Receiver, parent: bytes) -> list[dict[str, object]]:
    return [attributes(s) for s in receiver.of_kind(CLIENT) if s.parent_span_id == parent]


@pytest.mark.parametrize(("status", "stream"), [(429, False), (503, True)])
def test_a_transport_retry_is_a_client_span_of_its_own_marked_with_the_status(
        receiver: Receiver, tmp_path: Path, status: int, stream: bool) -> None:
    with ChatEmulator("deepseek") as emu, running_gateway(emu, tmp_path, tokens=(TOKEN,)) as gw:
        emu.fail_next(status, headers={"retry-after": "0"})
        answer = gw.client(TOKEN).chat.completions.create(
            model="ds/deepseek-v4-pro", messages=QUESTION, stream=stream)
        if stream:
            assert "".join(c.choices[0].delta.content or "" for c in answer if c.choices)
        flushed(gw.gateway)
        assert [r.status for r in emu.received] == [status, 200]
    (request,) = receiver.of_kind(SERVER)
    attempts = [s for s in receiver.of_kind(CLIENT) if s.parent_span_id == request.span_id]
    assert len(attempts) == len(receiver.of_kind(CLIENT)) == 2
    assert all(s.trace_id == request.trace_id for s in attempts)
    first, resent = (attributes(s) for s in attempts)
    assert first["error.type"] == str(status) and attempts[0].status.code == STATUS_ERROR
    assert "http.request.resend_count" not in first
    assert resent["http.request.resend_count"] == 1
    assert "error.type" not in resent and attempts[1].status.code != STATUS_ERROR
    assert resent["http.response.status_code"] == 200 and resent["thoughtline.retries"] == 1
    # one attempt of the turn (no lesson): the transport's resend is not the fallback's retry
    assert first["thoughtline.attempt"] == resent["thoughtline.attempt"] == 1
    assert attributes(request)["http.response.status_code"] == 200
    assert not receiver.of_kind(INTERNAL)  # a gateway turn is its request's, not one of its own
    no_content_nor_secrets(receiver, (UPSTREAM_KEY, TOKEN))


def test_an_overflow_compaction_is_a_summary_span_between_the_rejection_and_the_resend(
        receiver: Receiver, tmp_path: Path) -> None:
    model = "claude-sonnet-4-5"
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(12):
        messages += [{"role": "user", "content": f"Note {i}: " + "keep this in mind. " * 40},
                     {"role": "assistant", "content": f"Noted {i}."}]
    messages.append({"role": "user", "content": "What did I ask you to keep?"})
    with AnthropicEmulator() as emu, running_gateway(emu, tmp_path, tokens=(TOKEN,), name="up",
                                                     provider="anthropic", model=model) as gw:
        emu.limit_context(1800)  # the whole conversation is ~2,600 tokens on the wire
        gw.client(TOKEN).chat.completions.create(model=f"up/{model}", messages=messages)
        flushed(gw.gateway)
        assert [r.status for r in emu.received] == [400, 200, 200]
    (request,) = receiver.of_kind(SERVER)
    assert attributes(request)["http.response.status_code"] == 200
    rejected, summary, resent = _children(receiver, request.span_id)
    assert len(receiver.of_kind(CLIENT)) == 3 and not receiver.of_kind(INTERNAL)
    assert rejected["error.type"] == "400" and "thoughtline.purpose" not in rejected
    assert summary["thoughtline.purpose"] == "compaction"
    assert summary["http.response.status_code"] == 200 and "error.type" not in summary
    assert summary["gen_ai.request.model"] == model and summary["gen_ai.usage.output_tokens"] > 0
    assert "thoughtline.purpose" not in resent and resent["http.response.status_code"] == 200
    no_content_nor_secrets(receiver, (UPSTREAM_KEY, TOKEN))


def test_the_compact_endpoint_is_a_request_span_over_its_summary_requests(
        receiver: Receiver, tmp_path: Path) -> None:
    with ChatEmulator("deepseek") as emu, running_gateway(emu, tmp_path, tokens=(TOKEN,)) as gw:
        agent = ResponsesAgent(responses_client(gw.server.origin, TOKEN),
                               model="ds/deepseek-v4-pro")
        for question in ("What's the weather in Paris?", "And in Rome?", "And in Oslo?"):
            agent.ask(question)
            agent.step(stream=False)
            agent.step(stream=False)
        before = len(emu.received)
        compacted = httpx.post(gw.server.origin + "/v1/responses/compact", timeout=60,
                               headers={"authorization": f"Bearer {TOKEN}"},
                               json={"model": "ds/deepseek-v4-pro", "input": agent.input})
        assert compacted.json()["object"] == "response.compaction", compacted.text
        summaries = len(emu.received) - before
        flushed(gw.gateway)
    assert summaries >= 1
    (request,) = [s for s in receiver.of_kind(SERVER) if s.name == "POST /v1/responses/compact"]
    assert attributes(request)["thoughtline.compaction"] is True
    asked = _children(receiver, request.span_id)
    assert len(asked) == summaries  # each summary request, a child of the compaction's request
    assert all(a["thoughtline.purpose"] == "compaction" for a in asked)
    assert all(a["http.response.status_code"] == 200 for a in asked)
    turns = [s for s in receiver.of_kind(CLIENT) if s.parent_span_id != request.span_id]
    assert not [s for s in turns if attributes(s).get("thoughtline.purpose")]
    assert not receiver.of_kind(INTERNAL)
    no_content_nor_secrets(receiver, (UPSTREAM_KEY, TOKEN))


def test_a_request_with_a_traceparent_is_a_span_of_the_clients_trace(
        receiver: Receiver, tmp_path: Path) -> None:
    with ChatEmulator("deepseek") as emu, running_gateway(emu, tmp_path, tokens=(TOKEN,)) as gw:
        gw.client(TOKEN, default_headers={"traceparent": TRACEPARENT}).chat.completions.create(
            model="ds/deepseek-v4-pro", messages=QUESTION)
        flushed(gw.gateway)
        (sent,) = emu.received
    (request,) = receiver.of_kind(SERVER)
    assert request.trace_id.hex() == TRACE_ID and request.parent_span_id.hex() == PARENT_ID
    (attempt,) = receiver.of_kind(CLIENT)
    assert attempt.trace_id.hex() == TRACE_ID and attempt.parent_span_id == request.span_id
    # No upstream documents reading a trace context: it is not forwarded (nor its ids).
    assert "traceparent" not in sent.headers and TRACE_ID.encode() not in sent.raw
    no_content_nor_secrets(receiver, (UPSTREAM_KEY, TOKEN))


@pytest.mark.parametrize("header", [
    f"00-{'0' * 32}-{PARENT_ID}-01",  # an all-zero trace id is invalid
    f"00-{TRACE_ID}-{'0' * 16}-01",  # so is an all-zero parent id
    f"ff-{TRACE_ID}-{PARENT_ID}-01",  # version ff is forbidden
    "not a trace context",
])
def test_an_invalid_traceparent_starts_a_new_trace(receiver: Receiver, tmp_path: Path,
                                                   header: str) -> None:
    with ChatEmulator("deepseek") as emu, running_gateway(emu, tmp_path, tokens=(TOKEN,)) as gw:
        answer = gw.client(TOKEN, default_headers={"traceparent": header}
                           ).chat.completions.create(model="ds/deepseek-v4-pro", messages=QUESTION)
        assert answer.choices[0].message.content
        flushed(gw.gateway)
    (request,) = receiver.of_kind(SERVER)
    assert request.parent_span_id == b"" and request.trace_id.hex() not in (TRACE_ID, "0" * 32)
    (attempt,) = receiver.of_kind(CLIENT)
    assert attempt.trace_id == request.trace_id and attempt.parent_span_id == request.span_id
