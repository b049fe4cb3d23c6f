"""The ``/v1/messages`` face: Anthropic clients keep their line of thought on any upstream.

The official ``anthropic`` SDK runs a two-question tool loop (whole and streamed) through the
gateway to the DeepSeek (must-echo), Anthropic, Gemini, Responses and Bedrock emulators, sending
every answer's blocks back as Claude Code does; every upstream request is accepted and the
thinking the client was shown goes back upstream byte for byte, while a value the gateway minted
never reaches a provider. Then the client's habits: ``"signature": ""``, dropped thinking, forged
and other tenants' values, a restart between steps, and errors in the Messages shape.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import UPSTREAM_KEY, gateway_toml
from messages_support import (
    MessagesAgent,
    messages_client,
    unsigned,
    without_thinking,
)
from test_gateway_replay import AWS_KEYS, MODES, QUESTIONS, UPSTREAMS, Upstream

import anthropic
from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.requestlog import RequestLog
from thoughtline.store import SQLiteStore
from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer

TOKENS = ("tok-alice", "tok-bob")


@contextmanager
def serving(emu: Any, tmp: Path, *, tokens: tuple[str, ...] = (), aliases: str = "",
            provider: str = "deepseek", model: str = "deepseek-v4-pro",
            db: str = "state.db", max_body: int | None = None) -> Iterator[tuple[str, Gateway]]:
    """A gateway (SQLite store ``tmp/db``) in front of ``emu``: (its origin, the gateway)."""
    text = gateway_toml(emu, name="up", provider=provider, model=model, max_body=max_body)
    if aliases:
        text += f"\n[aliases]\n{aliases}\n"
    store = SQLiteStore(tmp / db)
    gateway = Gateway(parse(tomllib.loads(text)), store,
                      environ={"TL_GATEWAY_TEST_TOKENS": ",".join(tokens)},
                      request_log=RequestLog(tmp / "logs"))
    server = LoopbackServer(create_app(gateway), name="gateway").start()
    try:
        yield server.origin, gateway
    finally:
        server.stop()
        store.close()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEYS[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_KEYS[1])
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials")


def _loop(agent: MessagesAgent) -> None:
    modes = iter(MODES)
    for question in QUESTIONS:
        agent.ask(question)
        assert any(b["type"] == "tool_use" for b in agent.step(stream=next(modes)))
        assert not any(b["type"] == "tool_use" for b in agent.step(stream=next(modes)))


@pytest.mark.parametrize("name", sorted(UPSTREAMS))
def test_sdk_tool_loop_keeps_reasoning_on_every_upstream(tmp_path: Path, name: str,
                                                         aws: None) -> None:
    upstream: Upstream = UPSTREAMS[name]
    with upstream.emulator() as emu, serving(emu, tmp_path, provider=upstream.provider,
                                             model=upstream.model) as (origin, _):
        agent = MessagesAgent(messages_client(origin), model=f"up/{upstream.model}")
        _loop(agent)
        sent = [r.raw for r in emu.received]
        assert [r.status for r in emu.received] == [200] * len(MODES)
    assert all(MINT_PREFIX.encode() not in raw for raw in sent)
    # Every answer that thought shows it; tool steps' thinking goes back on the next request.
    for step in (0, 2):
        shown = agent.answers[step]
        thinking = [b for b in shown if b["type"] == "thinking"]
        assert thinking and all(b["signature"] for b in thinking)
        for block in thinking:
            if block["thinking"]:
                assert orjson.dumps(block["thinking"])[1:-1] in sent[step + 1]
            if not block["signature"].startswith(MINT_PREFIX):  # a provider's own signature
                assert block["signature"].encode() in sent[step + 1]
    own = name == "anthropic"
    signatures = [b["signature"] for c in agent.answers for b in c if b["type"] == "thinking"]
    assert all(s.startswith(MINT_PREFIX) != own for s in signatures)


def test_deepseek_gets_each_earlier_turn_byte_identical(deepseek: ChatEmulator,
                                                        tmp_path: Path) -> None:
    with serving(deepseek, tmp_path, aliases='"*" = "up/deepseek-v4-pro"') as (origin, _):
        agent = MessagesAgent(messages_client(origin), model="claude-opus-5-5")
        _loop(agent)
        agent.ask("Thanks!")
        agent.step(stream=True)
    last = deepseek.received[-1].body
    replayed = [m["reasoning_content"] for m in last["messages"] if m["role"] == "assistant"]
    assert replayed == agent.thoughts()[:-1]
    assert all(r.status == 200 for r in deepseek.received)


@pytest.mark.parametrize("habit", [unsigned, without_thinking], ids=["empty", "dropped"])
def test_empty_or_dropped_thinking_still_rehydrates(deepseek: ChatEmulator, tmp_path: Path,
                                                    habit: Any) -> None:
    with serving(deepseek, tmp_path) as (origin, _):
        agent = MessagesAgent(messages_client(origin), model="up/deepseek-v4-pro",
                              resend=habit)
        _loop(agent)
    assert all(r.status == 200 for r in deepseek.received)
    last = deepseek.received[-1].body
    replayed = [m["reasoning_content"] for m in last["messages"] if m["role"] == "assistant"]
    assert replayed == agent.thoughts()[:-1]


def _swap_signatures(blocks: list[dict[str, Any]], value: str) -> list[dict[str, Any]]:
    return [{**b, "signature": value} if b["type"] == "thinking" else b for b in blocks]


def test_another_tenants_values_bring_no_reasoning(deepseek: ChatEmulator,
                                                   tmp_path: Path) -> None:
    with serving(deepseek, tmp_path, tokens=TOKENS) as (origin, _):
        alice = MessagesAgent(messages_client(origin, TOKENS[0]), model="up/deepseek-v4-pro")
        alice.ask(QUESTIONS[0])
        alice.step(stream=False)
        # Bob sends Alice's conversation: her answer with her minted value, his tool result.
        bob = MessagesAgent(messages_client(origin, TOKENS[1]), model=alice.model,
                            messages=[dict(m) for m in alice.messages])
        bob.step(stream=True)
    request = deepseek.received[-1]
    assert request.status == 200  # answered, not refused
    assert orjson.dumps(alice.thoughts()[0])[1:-1] not in request.raw
    assert MINT_PREFIX.encode() not in request.raw


@pytest.mark.parametrize("kind", ["forged", "misplaced"])
def test_a_forged_or_misplaced_value_names_no_turn(deepseek: ChatEmulator, tmp_path: Path,
                                                   kind: str) -> None:
    with serving(deepseek, tmp_path, tokens=TOKENS) as (origin, _):
        alice = MessagesAgent(messages_client(origin, TOKENS[0]), model="up/deepseek-v4-pro")
        alice.ask(QUESTIONS[0])
        (minted,) = [b["signature"] for b in alice.step(stream=False)
                     if b["type"] == "thinking"]
        value = minted[:-2] + ("AA" if not minted.endswith("AA") else "BB") \
            if kind == "forged" else minted
        # A turn the gateway never answered, carrying a value naming (or forging) a real one.
        made_up = [{"type": "thinking", "thinking": "INJECTED THOUGHT", "signature": value},
                   {"type": "text", "text": "Made up."}]
        other = MessagesAgent(messages_client(origin, TOKENS[0]), model=alice.model, messages=[
            {"role": "user", "content": "Hello"}, {"role": "assistant", "content": made_up},
            {"role": "user", "content": "Go on."}])
        other.step(stream=False)
    request = deepseek.received[-1]
    assert request.status == 200
    assert b"INJECTED THOUGHT" not in request.raw  # the text beside a minted value is ours
    assert orjson.dumps(alice.thoughts()[0])[1:-1] not in request.raw
    assert MINT_PREFIX.encode() not in request.raw


def test_a_restart_between_steps_changes_nothing(deepseek: ChatEmulator,
                                                 tmp_path: Path) -> None:
    agent: MessagesAgent | None = None
    for round_ in range(2):
        with serving(deepseek, tmp_path) as (origin, _):
            client = messages_client(origin)
            if agent is None:
                agent = MessagesAgent(client, model="up/deepseek-v4-pro")
                agent.ask(QUESTIONS[0])
            agent.client = client
            agent.step(stream=bool(round_))
    assert agent is not None
    assert [r.status for r in deepseek.received] == [200, 200]
    replayed = deepseek.received[-1].body["messages"][1]["reasoning_content"]
    assert replayed == agent.thoughts()[0]


def _post(origin: str, path: str, body: Any, **headers: str) -> httpx.Response:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return httpx.post(origin + path, content=raw, headers={
        "content-type": "application/json", **headers}, timeout=30)


def test_errors_come_in_the_messages_shape(deepseek: ChatEmulator, tmp_path: Path) -> None:
    body = {"model": "up/deepseek-v4-pro", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]}
    with serving(deepseek, tmp_path, tokens=TOKENS) as (origin, _):
        denied = _post(origin, "/v1/messages", body, **{"x-api-key": "wrong"})
        assert denied.status_code == 401
        assert denied.json()["error"]["type"] == "authentication_error"
        assert denied.json()["type"] == "error"
        ok = _post(origin, "/v1/messages?beta=true", body, **{"x-api-key": TOKENS[0]})
        assert ok.status_code == 200 and ok.json()["type"] == "message"
        bare = _post(origin, "/messages", body, authorization=f"Bearer {TOKENS[1]}")
        assert bare.status_code == 200
        unknown = _post(origin, "/v1/messages", {**body, "model": "nowhere/claude-opus-5-5"},
                        **{"x-api-key": TOKENS[0]})
        assert unknown.status_code == 404
        assert unknown.json()["error"]["type"] == "not_found_error"
        assert "up/<model>" in unknown.json()["error"]["message"]
        broken = _post(origin, "/v1/messages", b"{nope", **{"x-api-key": TOKENS[0]})
        assert broken.status_code == 400
        assert broken.json()["error"]["type"] == "invalid_request_error"
        wrong = _post(origin, "/v1/messages", {**body, "messages": [{"role": "tool"}]},
                      **{"x-api-key": TOKENS[0]})
        assert wrong.status_code == 400 and "messages[0]" in wrong.json()["error"]["message"]
        deepseek.fail_next(403, {"error": {"message": f"Incorrect API key: {UPSTREAM_KEY}",
                                           "type": "invalid_request_error"}})
        denied = _post(origin, "/v1/messages", body, **{"x-api-key": TOKENS[0]})
        assert denied.status_code == 502  # the gateway's key was refused: not the client's fault
        assert denied.json()["error"]["type"] == "api_error"
        assert UPSTREAM_KEY not in denied.text
        deepseek.fail_next(400, {"error": {"message": "bad max_tokens", "type": "invalid"}})
        refused = _post(origin, "/v1/messages", body, **{"x-api-key": TOKENS[0]})
        assert refused.status_code == 400
        assert refused.json()["error"]["type"] == "invalid_request_error"
        assert "bad max_tokens" in refused.json()["error"]["message"]


def test_a_body_over_the_limit_gets_413_in_the_messages_shape(deepseek: ChatEmulator,
                                                              tmp_path: Path) -> None:
    body = {"model": "up/deepseek-v4-pro", "max_tokens": 64,
            "messages": [{"role": "user", "content": "x" * 4096}]}
    with serving(deepseek, tmp_path, max_body=1024) as (origin, _):
        large = _post(origin, "/v1/messages", body)
    assert large.status_code == 413
    assert large.json() == {"type": "error", "error": {
        "type": "request_too_large", "message": large.json()["error"]["message"]}}
    assert "max_body_bytes" in large.json()["error"]["message"]
    assert deepseek.received == []


def test_a_stream_that_breaks_ends_with_an_error_event(deepseek: ChatEmulator,
                                                       tmp_path: Path) -> None:
    with serving(deepseek, tmp_path) as (origin, _):
        client = messages_client(origin)
        deepseek.cut_stream_after(3)
        with pytest.raises(anthropic.APIStatusError) as caught, client.messages.stream(
                model="up/deepseek-v4-pro", max_tokens=64,
                messages=[{"role": "user", "content": "hi"}]) as events:
            events.get_final_message()  # the SDK raises on an `error` event
        assert caught.value.body["error"]["type"] == "api_error"
        raw = _post(origin, "/v1/messages", {"model": "up/deepseek-v4-pro", "stream": True,
                                             "max_tokens": 64,
                                             "messages": [{"role": "user", "content": "x"}]})
        assert raw.status_code == 200 and raw.text.startswith("event: message_start")
        assert "event: ping" in raw.text and raw.text.rstrip().endswith(
            'data: {"type":"message_stop"}')


def test_count_tokens_prices_the_request_as_it_would_be_sent(deepseek: ChatEmulator,
                                                             tmp_path: Path) -> None:
    with serving(deepseek, tmp_path, tokens=TOKENS) as (origin, gateway):
        alice = MessagesAgent(messages_client(origin, TOKENS[0]), model="up/deepseek-v4-pro",
                              resend=without_thinking)
        alice.ask(QUESTIONS[0])
        alice.step(stream=False)
        body = {"model": alice.model, "messages": alice.messages}
        sessions = len(gateway.store.store.list_sessions(tenant=None))
        mine = _post(origin, "/v1/messages/count_tokens", body, **{"x-api-key": TOKENS[0]})
        theirs = _post(origin, "/messages/count_tokens", body, **{"x-api-key": TOKENS[1]})
        assert len(gateway.store.store.list_sessions(tenant=None)) == sessions  # nothing made
        sdk = messages_client(origin, TOKENS[0]).messages.count_tokens(**body)
    assert mine.status_code == theirs.status_code == 200
    # Alice's stored reasoning goes back to DeepSeek: her request costs more than Bob's copy.
    thought = len(alice.thoughts()[0])
    assert mine.json()["input_tokens"] - theirs.json()["input_tokens"] >= thought // 8
    assert sdk.input_tokens == mine.json()["input_tokens"]
    assert len(deepseek.received) == 1  # counting sends nothing upstream


@pytest.mark.parametrize("how", ["header", "metadata"])
def test_claude_code_session_ids_keep_identical_conversations_apart(
        deepseek: ChatEmulator, tmp_path: Path, how: str) -> None:
    sessions: dict[str, list[str]] = {}
    answers: dict[str, list[Any]] = {}
    with serving(deepseek, tmp_path) as (origin, _):
        client = messages_client(origin)
        for name in ("first", "second", "first", "second"):
            body: dict[str, Any] = {"model": "up/deepseek-v4-pro", "max_tokens": 1024,
                                    "messages": [{"role": "user", "content": "Hello"}]}
            named = {"X-Claude-Code-Session-Id": f"cc-{name}"}
            if how == "metadata":
                body["metadata"] = {"user_id": orjson.dumps(
                    {"device_id": "d", "session_id": f"cc-{name}"}).decode()}
                named = {}
            if name in answers:  # the same visible history in both conversations
                body["messages"] += [{"role": "assistant", "content": answers[name]},
                                     {"role": "user", "content": "Again"}]
            raw = client.messages.with_raw_response.create(**body, extra_headers=named)
            answers.setdefault(name, [{"type": "text", "text": b.text}
                                      for b in raw.parse().content if b.type == "text"])
            sessions.setdefault(name, []).append(raw.headers["X-Thoughtline-Session"])
    assert answers["first"] == answers["second"]  # identical visible turns
    # Each follow-up landed in its own conversation's session, not the newest identical turn's.
    assert sessions["first"][0] == sessions["first"][1]
    assert sessions["second"][0] == sessions["second"][1]
    assert sessions["first"][0] != sessions["second"][0]
