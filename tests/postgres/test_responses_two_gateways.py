"""Two ``thoughtline serve`` processes on one PostgreSQL database serve one Codex-style
conversation on ``/v1/responses``, alternating request by request, with a remote compaction in
the middle.

Each gateway verifies the reasoning items and the compaction item the other minted (the MAC key
is the store's), and a DeepSeek-personality upstream that refuses a tool-call turn without its
``reasoning_content`` accepts every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_support import (
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    ServeProcess,
    gateway_toml,
    start_serve,
)
from responses_face_support import ResponsesAgent, item_json, responses_client

from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.testing import ChatEmulator

TOKEN = "tenant-token-responses-two-gateways-5c1d"
QUESTIONS = ("What's the weather in Paris?", "And in Rome?", "And in Oslo?")


@pytest.fixture
def deepseek() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek") as emu:
        yield emu


@pytest.fixture
def gateways(deepseek: ChatEmulator, pg_store_url: str,
             tmp_path: Path) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    aliases = '\n[aliases]\n"gpt-5.5" = "ds/deepseek-v4-pro"\n'
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


def test_a_codex_conversation_alternating_between_two_gateways(
        gateways: tuple[ServeProcess, ServeProcess], deepseek: ChatEmulator) -> None:
    clients = [responses_client(g.base_url.removesuffix("/v1"), TOKEN, timeout=120)
               for g in gateways]
    agent = ResponsesAgent(clients[0], model="gpt-5.5", headers={"session-id": "codex-1"})
    step = 0
    for number, question in enumerate(QUESTIONS):
        agent.ask(question)
        for expect_call in (True, False):
            agent.client = clients[step % 2]  # every request goes to the other gateway
            step += 1
            output = agent.step(stream=step % 3 != 0)
            assert any(i["type"] == "function_call" for i in output) is expect_call
        if number == 1:  # Codex's remote compaction, answered by the other gateway
            agent.client = clients[step % 2]
            step += 1
            args = agent._args()
            args["input"] = [*agent.input, {"type": "compaction_trigger"}]
            (item,) = [item_json(i) for i in agent.client.responses.create(**args).output]
            assert item["type"] == "compaction"
            assert item["encrypted_content"].startswith(MINT_PREFIX)
            agent.input = [i for i in agent.input if i.get("role") == "user"] + [item]
    assert all(r.status == 200 for r in deepseek.received)
    assert all(MINT_PREFIX.encode() not in r.raw for r in deepseek.received)
    last = deepseek.received[-1].body
    replayed = [m["reasoning_content"] for m in last["messages"] if m["role"] == "assistant"]
    assert replayed and all(r in agent.summaries() for r in replayed)
    assert agent.summaries()[-2] in replayed  # the newest tool turn's reasoning went back
