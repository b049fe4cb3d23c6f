"""Done-when: a real ``thoughtline serve`` SIGKILLed between two steps of a tool loop, restarted,
and the unmodified SDK client (which strips reasoning) continues with full replay.

SIGKILL runs no cleanup at all: whatever the client was answered must already be in the store.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import openai
import orjson
from gateway_support import (
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    StrippingAgent,
    gateway_toml,
    start_serve,
)

from thoughtline.testing import ChatEmulator

TOKEN = "tenant-token-restart-7f3a"


def _client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=TOKEN, max_retries=0)


def test_sigkill_between_steps_then_restart_continues_with_full_replay(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = tmp_path / "gateway.toml"
    config.write_text(gateway_toml(deepseek))
    env = {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN}

    first = start_serve(config, home, env)
    try:
        agent = StrippingAgent(_client(first.base_url))
        agent.ask("What's the weather in Oslo?")
        assert agent.step(stream=True).get("tool_calls")
    finally:
        first.kill()
    assert first.process.returncode == -9

    second = start_serve(config, home, env)
    try:
        agent.client = _client(second.base_url)
        assert not agent.step(stream=False).get("tool_calls")
        agent.ask("And in Bergen?")
        assert agent.step(stream=False).get("tool_calls")
        assert second.terminate() == 0  # graceful shutdown on SIGTERM
    finally:
        if second.process.poll() is None:
            second.kill()

    statuses = [r.status for r in deepseek.received]
    assert statuses == [200, 200, 200]
    shown = agent.reasoning[0]
    assert shown and orjson.dumps(shown) in deepseek.received[1].raw
    assert orjson.dumps(shown) in deepseek.received[2].raw
    # No pad was needed: every tool-call turn went back with its own reasoning.
    assert b'"reasoning_content":" "' not in deepseek.received[2].raw

    db = sqlite3.connect(home / "state.db")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stored = b"".join(bytes(row[0]) for row in db.execute("SELECT skeleton FROM messages"))
    stored += b"".join(bytes(row[0]) for row in db.execute("SELECT data FROM payloads"))
    db.close()
    logs = b"".join(p.read_bytes() for p in home.rglob("*.jsonl"))
    errors = "".join(first.stderr + second.stderr).encode()
    for where in (stored, logs, errors):
        assert UPSTREAM_KEY.encode() not in where
        assert TOKEN.encode() not in where
    assert b'"status":200' in errors  # the access log went to stderr, one line per request


def test_sigterm_lets_an_inflight_stream_finish_then_exits_cleanly(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(gateway_toml(deepseek))
    env = {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN}
    deepseek.chunk_delay = 0.05
    serve = start_serve(config, tmp_path / "home", env)
    try:
        stream = _client(serve.base_url).chat.completions.create(
            model="ds/deepseek-v4-pro", stream=True,
            messages=[{"role": "user", "content": "Tell me about fjords."}])
        chunks = iter(stream)
        first_chunk = next(chunks)
        serve.process.send_signal(signal.SIGTERM)
        rest = list(chunks)
        assert serve.process.wait(30) == 0
    finally:
        if serve.process.poll() is None:
            serve.kill()
    text = "".join(c.choices[0].delta.content or "" for c in [first_chunk, *rest] if c.choices)
    assert text.startswith("Scripted answer")
    assert rest[-1].choices[0].finish_reason == "stop"
