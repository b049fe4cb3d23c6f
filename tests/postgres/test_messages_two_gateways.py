"""Two ``thoughtline serve`` processes on one PostgreSQL database serve one Claude Code-style
conversation on ``/v1/messages``, alternating request by request.

Each gateway verifies the values the other minted (the MAC key is the store's, made once by
whichever asked first), and a DeepSeek-personality upstream that refuses a tool-call turn
without its ``reasoning_content`` accepts every request, each earlier turn's reasoning
byte-identical to what the client was shown.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from gateway_support import (
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    ServeProcess,
    gateway_toml,
    start_serve,
)
from messages_support import MessagesAgent, messages_client

from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.testing import ChatEmulator

TOKEN = "tenant-token-messages-two-gateways-77e1"
QUESTIONS = ("What's the weather in Paris?", "And in Rome?")
MODES = (True, False, False, True)


@pytest.fixture
def deepseek() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek") as emu:
        yield emu


@pytest.fixture
def gateways(deepseek: ChatEmulator, pg_store_url: str,
             tmp_path: Path) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    aliases = '\n[aliases]\n"*" = "ds/deepseek-v4-pro"\n'
    env = {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN}
    processes = []
    try:
        for name in ("a", "b"):
            path = tmp_path / f"{name}.toml"
            path.write_text(gateway_toml(deepseek, extra_server=f'store = "{pg_store_url}"\n')
                            + aliases)
            processes.append(start_serve(path, tmp_path / f"home-{name}", env))
        yield processes[0], processes[1]
    finally:
        for process in processes:
            assert process.terminate() == 0, "".join(process.stderr)


def test_a_messages_conversation_alternating_between_two_gateways(
        gateways: tuple[ServeProcess, ServeProcess], deepseek: ChatEmulator) -> None:
    clients = [messages_client(g.base_url.removesuffix("/v1"), TOKEN, timeout=120)
               for g in gateways]
    agent = MessagesAgent(clients[0], model="claude-opus-5-5")
    modes = iter(MODES)
    step = 0
    for question in QUESTIONS:
        agent.ask(question)
        for expect_call in (True, False):
            agent.client = clients[step % 2]  # every request goes to the other gateway
            step += 1
            content = agent.step(stream=next(modes))
            assert any(b["type"] == "tool_use" for b in content) is expect_call
    assert [r.status for r in deepseek.received] == [200] * len(MODES)
    signatures = [b["signature"] for c in agent.answers for b in c if b["type"] == "thinking"]
    assert len(signatures) == len(MODES) and all(s.startswith(MINT_PREFIX) for s in signatures)
    last = deepseek.received[-1].body
    replayed = [m["reasoning_content"] for m in last["messages"] if m["role"] == "assistant"]
    assert replayed == agent.thoughts()[:-1]
    assert all(MINT_PREFIX.encode() not in r.raw for r in deepseek.received)
    # Each gateway verified the values the other minted: no value was rejected anywhere.
    lines = _access_lines(gateways, expected=len(MODES))
    assert [line["rehydrated"] for line in lines] == [0, 1, 2, 3]
    assert not any("minted_rejected" in line for line in lines)


def _access_lines(gateways: tuple[ServeProcess, ServeProcess], *,
                  expected: int) -> list[dict[str, Any]]:
    """The ``/v1/messages`` access-log lines of both gateways, in time order (waits a bounded
    while for the reader threads to collect them)."""
    deadline = time.monotonic() + 20
    while True:
        lines = [orjson.loads(line) for g in gateways for line in list(g.stderr)
                 if line.startswith("{") and '"/v1/messages"' in line]
        if len(lines) >= expected or time.monotonic() > deadline:
            return sorted(lines, key=lambda line: line["time"])
        time.sleep(0.05)
