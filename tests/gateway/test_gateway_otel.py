"""OpenTelemetry traces of the line of thought, read back from an in-process OTLP/HTTP receiver.

The gateway is configured the way an operator would: the standard ``OTEL_*`` variables. A recorded
Claude Code tool loop goes through the Messages face to an upstream emulator; each request must show
as a SERVER span with its rehydration, each upstream request as a CLIENT child with the GenAI
attributes and the carriers it sent, no content unless asked for, and never a key. With nothing
configured no exporter is made and opentelemetry is never imported.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import UPSTREAM_KEY
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from test_gateway_claude_code import ALIAS, TOKEN, Replayer, recorded
from test_gateway_messages import serving

from helpers_otel import (
    CLIENT,
    SERVER,
    Receiver,
    attributes,
    flushed,
    leaks,
    no_content_nor_secrets,
)
from helpers_otel import receiving as _receiving
from thoughtline import tracing
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    with _receiving(monkeypatch) as got:
        yield got


def _loop(emu: Any, tmp: Path, run: str, **upstream: str) -> Replayer:
    replayer = Replayer()
    with serving(emu, tmp, tokens=(TOKEN,), **upstream) as (origin, gateway):
        for record in recorded(run):
            replayer.send(origin, record)
        flushed(gateway)
    return replayer


def _trace(receiver: Receiver) -> tuple[list[Span], dict[bytes, list[Span]]]:
    requests = sorted((s for s in receiver.spans if s.kind == SERVER),
                      key=lambda s: s.start_time_unix_nano)
    children: dict[bytes, list[Span]] = {}
    for span in receiver.spans:
        if span.kind == CLIENT:
            children.setdefault(span.parent_span_id, []).append(span)
    return requests, children


def test_a_claude_code_loop_to_anthropic_shows_carriers_and_rehydration(
        receiver: Receiver, tmp_path: Path) -> None:
    with AnthropicEmulator() as emu:
        _loop(emu, tmp_path, "claude_code_run1", provider="anthropic", model="claude-opus-5-5",
              aliases='"*" = "up/claude-opus-5-5"')
        assert [r.status for r in emu.received] == [200, 200]
    requests, children = _trace(receiver)
    assert [s.name for s in requests] == ["POST /v1/messages"] * 2
    first, second = (attributes(s) for s in requests)
    assert first["http.response.status_code"] == 200 and first["thoughtline.face"] == "messages"
    assert first["thoughtline.session.id"] == second["thoughtline.session.id"]
    assert first["thoughtline.rehydrated"] == 0
    assert second["thoughtline.rehydrated"] >= 1  # the first answer, found again
    assert sum(v for k, v in second.items() if k.startswith("thoughtline.rehydrated.")) >= 1
    for request in requests:  # one upstream request each, a child of its gateway request
        (attempt,) = children[request.span_id]
        assert attempt.trace_id == request.trace_id
        assert attempt.name == "chat claude-opus-5-5"
        values = attributes(attempt)
        assert values["gen_ai.operation.name"] == "chat"
        assert values["gen_ai.provider.name"] == "anthropic"
        assert values["gen_ai.request.model"] == "claude-opus-5-5"
        assert values["gen_ai.response.model"]
        assert values["server.address"] == "127.0.0.1"
        assert values["gen_ai.usage.input_tokens"] > 0
        assert values["gen_ai.usage.output_tokens"] > 0
        assert values["thoughtline.attempt"] == 1
        assert values["thoughtline.verdicts.learned"] == 0
    first_attempt, second_attempt = (attributes(children[r.span_id][0]) for r in requests)
    assert "thinking" not in first_attempt["thoughtline.blocks"]
    assert second_attempt["thoughtline.blocks.thinking"] == 1  # the first answer's, sent back
    assert second_attempt["thoughtline.thinking_omitted"] == 0
    _no_content_nor_secrets(receiver)


def test_reasoning_tokens_and_minted_rehydration_to_deepseek(
        receiver: Receiver, tmp_path: Path) -> None:
    with ChatEmulator("deepseek") as emu:
        _loop(emu, tmp_path, "claude_code_run1", aliases=ALIAS)
    requests, children = _trace(receiver)
    assert len(requests) == 2
    second = attributes(requests[1])
    assert second["thoughtline.minted.issued"] == 1
    assert second["thoughtline.rehydrated.minted"] >= 1  # by the value the gateway minted
    attempts = [attributes(children[r.span_id][0]) for r in requests]
    assert all(a["gen_ai.provider.name"] == "deepseek" for a in attempts)
    assert all(a["gen_ai.usage.reasoning.output_tokens"] > 0 for a in attempts)
    assert attempts[1]["thoughtline.carriers"] == ["reasoning_content"]
    assert attempts[1]["thoughtline.carriers.reasoning_content"] == 1
    _no_content_nor_secrets(receiver)


def test_content_only_when_the_user_opts_in(receiver: Receiver, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tracing.CAPTURE_VAR, "true")
    with ChatEmulator("deepseek") as emu:
        replayer = _loop(emu, tmp_path, "claude_code_run1", aliases=ALIAS)
    _, children = _trace(receiver)
    attempt = attributes(next(iter(children.values()))[0])
    output = orjson.loads(attempt["gen_ai.output.messages"])
    thought = "".join(b["thinking"] for b in replayer.answers[0] if b["type"] == "thinking")
    assert {"type": "reasoning", "content": thought} in output[0]["parts"]
    sent = orjson.loads(attempt["gen_ai.input.messages"])
    assert any(p["type"] == "text" for m in sent if m["role"] == "user" for p in m["parts"])
    assert not leaks(receiver, (UPSTREAM_KEY, TOKEN))  # content, and still never a key


def test_an_upstream_retry_and_the_fallback_retry_are_spans_of_their_own(
        receiver: Receiver, tmp_path: Path) -> None:
    """A signature the upstream rejects: the 400, then the repaired retry, each its own span."""
    stale = {"type": "thinking", "thinking": "An old thought.",
             "signature": "EoBOGUS" + "A" * 340}
    body = {"model": "claude-opus-5-5", "max_tokens": 16000, "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [stale, {"type": "text", "text": "Hello there."}]},
        {"role": "user", "content": "Again"}]}
    with AnthropicEmulator() as emu, serving(
            emu, tmp_path, tokens=(TOKEN,), provider="anthropic", model="claude-opus-5-5",
            aliases='"*" = "up/claude-opus-5-5"') as (origin, gateway):
        reply = httpx.post(origin + "/v1/messages", content=orjson.dumps(body),
                           headers={"x-api-key": TOKEN, "content-type": "application/json"},
                           timeout=60)
        assert reply.status_code == 200, reply.text
        flushed(gateway)
    (request,), children = _trace(receiver)
    attempts = sorted(children[request.span_id], key=lambda s: s.start_time_unix_nano)
    first, retry = (attributes(s) for s in attempts)
    assert (first["thoughtline.attempt"], retry["thoughtline.attempt"]) == (1, 2)
    assert first["error.type"] == "400" and attempts[0].status.code == 2  # STATUS_CODE_ERROR
    assert "error.type" not in retry and attempts[1].status.code != 2
    assert first["thoughtline.fingerprints.added"] == 0
    assert retry["thoughtline.fingerprints.added"] == 1  # the rejected block, left out
    assert retry["thoughtline.thinking_omitted"] == 1
    _no_content_nor_secrets(receiver)


def _no_content_nor_secrets(receiver: Receiver) -> None:
    no_content_nor_secrets(receiver, (UPSTREAM_KEY, TOKEN))


def test_nothing_configured_imports_no_opentelemetry(tmp_path: Path) -> None:
    """The gateway made, a request answered and a library engine built, with no OTEL_* set:
    no tracer exists and no opentelemetry module was ever imported."""
    script = """
import sys, tomllib
from starlette.testclient import TestClient
from thoughtline import tracing
from thoughtline.gateway.app import Gateway
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.store import SQLiteStore
from thoughtline.turn import TurnEngine
from thoughtline.transport.http import HttpTransport
text = ('[server]\\nhost = "127.0.0.1"\\nport = 0\\ntokens_env = "T"\\n[[upstream]]\\n'
        'name = "up"\\nprovider = "deepseek"\\nbase_url = "http://127.0.0.1:9"\\n'
        'models = ["deepseek-v4-pro"]\\n')
gateway = Gateway(parse(tomllib.loads(text)), SQLiteStore(sys.argv[1]), environ={"T": "t"})
with TestClient(create_app(gateway)) as client:
    assert client.get("/healthz").status_code == 200
    client.post("/v1/messages", json={"model": "deepseek-v4-pro", "max_tokens": 5,
                "messages": [{"role": "user", "content": "hi"}]}, headers={"x-api-key": "t"})
assert gateway.tracer is None and TurnEngine(HttpTransport()).tracer is None
assert not tracing.configured()
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
"""
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "state.db")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("env", "on"), [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "console"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
])
def test_the_standard_variables_decide(env: dict[str, str], on: bool) -> None:
    assert tracing.configured(env) is on


def test_token_usage_by_type_is_a_prometheus_histogram(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Metrics stay Prometheus, traced or not: the GenAI token usage, reasoning included."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    with ChatEmulator("deepseek") as emu, serving(emu, tmp_path, tokens=(TOKEN,),
                                                  aliases=ALIAS) as (origin, gateway):
        Replayer().send(origin, recorded("claude_code_run1")[0])
        assert gateway.tracer is None
        text = gateway.metrics.text().decode()
    labels = ('gen_ai_operation_name="chat",gen_ai_provider_name="deepseek",'
              'gen_ai_request_model="deepseek-v4-pro",gen_ai_token_type="{}"')
    for kind in ("input", "output", "reasoning"):
        assert f"gen_ai_client_token_usage_count{{{labels.format(kind)}}} 1.0" in text
