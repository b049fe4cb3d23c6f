"""OpenTelemetry traces of library turns (``Session.send``), read back from a loopback OTLP/HTTP
receiver: the standard ``OTEL_*`` variables are all a library user sets.

Each turn is an INTERNAL span (``turn {model}``) with its upstream requests as CLIENT children —
a transport retry one more child, the first an error naming the status — under the application's
current span when it has one. A turn that fails ends its span as an error. No span holds the key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from session_support import CASE_BY_ID, provider_for, run

from helpers_otel import (
    CLIENT,
    INTERNAL,
    SERVER,
    STATUS_ERROR,
    Receiver,
    attributes,
    no_content_nor_secrets,
)
from helpers_otel import receiving as _receiving
from thoughtline import Done, ProviderError, Session, ThoughtlineError, open_store, tracing
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport, TransportConfig

DEEPSEEK = CASE_BY_ID["deepseek"]
FAST = TransportConfig(max_retries=2, backoff_base=0.001, backoff_cap=0.05)
#: An application's own span, current while it sends the turn.
APP_TRACE, APP_SPAN = 0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    with _receiving(monkeypatch) as got:
        monkeypatch.setattr(tracing, "_DEFAULT", [])  # the process's tracer made anew, from these
        yield got


@pytest.fixture
def emu(pool: object) -> ChatEmulator:
    return pool.get("deepseek", tag="otel")  # type: ignore[attr-defined]


async def _turn(home: Path, emu: ChatEmulator) -> Done | ThoughtlineError:
    store = open_store(None, home)
    transport = HttpTransport(FAST)
    try:
        session = Session.create(store, provider_for(DEEPSEEK, emu), transport=transport)
        try:
            return await session.send("How warm is it today?")
        except ThoughtlineError as exc:
            return exc
    finally:
        await transport.aclose()
        store.close()


def _exported(home: Path, emu: ChatEmulator) -> Done | ThoughtlineError:
    outcome = run(_turn(home, emu))
    tracer = tracing.default()
    assert tracer is not None  # the OTEL_* variables asked for traces
    tracer.shutdown()  # what the process's exit does: export what is queued
    return outcome


def test_a_library_turn_is_a_span_with_each_upstream_request_a_child(
        receiver: Receiver, emu: ChatEmulator, tmp_path: Path,
        fake_keys: dict[str, str]) -> None:
    emu.fail_next(429, headers={"retry-after": "0"})
    start = len(emu.received)
    app = trace.NonRecordingSpan(trace.SpanContext(APP_TRACE, APP_SPAN, is_remote=False,
                                                   trace_flags=trace.TraceFlags(1)))  # sampled
    with trace.use_span(app):
        assert isinstance(_exported(tmp_path, emu), Done)
    assert [r.status for r in emu.received[start:]] == [429, 200]
    assert not receiver.of_kind(SERVER)
    (turn,) = receiver.of_kind(INTERNAL)
    assert turn.name == f"turn {DEEPSEEK.model}"
    assert int.from_bytes(turn.trace_id) == APP_TRACE  # the application's trace
    assert int.from_bytes(turn.parent_span_id) == APP_SPAN
    values = attributes(turn)
    assert values["thoughtline.outcome"] == "ok" and turn.status.code != STATUS_ERROR
    assert values["gen_ai.provider.name"] == "deepseek"
    assert values["gen_ai.request.model"] == DEEPSEEK.model
    assert values["thoughtline.session.id"]
    assert "gen_ai.operation.name" not in values  # its requests are the GenAI operations
    assert not [k for k in values if k.startswith("gen_ai.usage.")]  # counted once, below
    attempts = receiver.of_kind(CLIENT)
    assert [s.parent_span_id for s in attempts] == [turn.span_id] * 2
    assert all(s.trace_id == turn.trace_id for s in attempts)
    first, resent = (attributes(s) for s in attempts)
    assert first["error.type"] == "429" and attempts[0].status.code == STATUS_ERROR
    assert resent["http.request.resend_count"] == 1 and "error.type" not in resent
    assert resent["gen_ai.operation.name"] == "chat"
    assert resent["gen_ai.usage.output_tokens"] > 0
    assert resent["thoughtline.session.id"] == values["thoughtline.session.id"]
    no_content_nor_secrets(receiver, fake_keys.values())


def test_a_failed_library_turn_ends_its_span_as_an_error(
        receiver: Receiver, emu: ChatEmulator, tmp_path: Path,
        fake_keys: dict[str, str]) -> None:
    emu.fail_next(401, {"error": {"message": "Authentication Fails", "type": "auth_error"}})
    outcome = _exported(tmp_path, emu)
    assert isinstance(outcome, ProviderError) and outcome.status == 401
    (turn,) = receiver.of_kind(INTERNAL)
    assert turn.parent_span_id == b""  # no application span: a trace of its own
    values = attributes(turn)
    assert values["thoughtline.outcome"] == "error" and values["error.type"] == "401"
    assert turn.status.code == STATUS_ERROR
    (attempt,) = receiver.of_kind(CLIENT)
    assert attempt.parent_span_id == turn.span_id
    assert attributes(attempt)["error.type"] == "401"
    no_content_nor_secrets(receiver, fake_keys.values())


def test_a_library_turn_left_midway_ends_its_span_as_cancelled(
        receiver: Receiver, emu: ChatEmulator, tmp_path: Path) -> None:
    """An application that stops reading a streamed turn: its span still ends, and says so."""
    async def first_event_only() -> None:
        store = open_store(None, tmp_path)
        transport = HttpTransport(FAST)
        try:
            session = Session.create(store, provider_for(DEEPSEEK, emu), transport=transport)
            async with contextlib.aclosing(session.stream("How warm is it today?")) as events:
                async for _ in events:
                    break
        finally:
            await transport.aclose()
            store.close()

    run(first_event_only())
    tracer = tracing.default()
    assert tracer is not None
    tracer.shutdown()
    (turn,) = receiver.of_kind(INTERNAL)
    assert attributes(turn)["thoughtline.outcome"] == "cancelled"
    assert attributes(turn)["error.type"] == "cancelled" and turn.status.code == STATUS_ERROR
    (attempt,) = receiver.of_kind(CLIENT)
    assert attempt.parent_span_id == turn.span_id
    assert attributes(attempt)["thoughtline.outcome"] == "cancelled"
