"""Two ``thoughtline serve`` processes on different ports share one PostgreSQL database.

This is the deployment the PostgreSQL store exists for: several gateways behind a load
balancer. An unmodified ``openai`` SDK client that strips reasoning from every answer runs a
tool-calling conversation alternating between the two processes, request by request, against a
DeepSeek-personality emulator (must-echo ``reasoning_content`` on tool-call turns: a turn whose
reasoning is missing is refused with 400). Every upstream request must be accepted and
byte-identical to what one direct ``Session`` sends for the same conversation. Then 20
conversations run at once, each alternating between the two processes: none loses a turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import orjson
import pytest
from gateway_support import (
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    ServeProcess,
    StrippingAgent,
    gateway_toml,
    start_serve,
    tool_output,
)

from thoughtline import ProviderConfig, Session, ToolResult, ToolSpec, TurnOptions, open_store
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport

TOKEN = "tenant-token-two-gateways-4c1d"
QUESTIONS = ("What's the weather in Paris?", "And in Rome?")
MODES = (False, True, True, False)  # streamed or not, per request
CONVERSATIONS = 20


@pytest.fixture
def deepseek() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek") as emu:
        yield emu


@pytest.fixture
def gateways(deepseek: ChatEmulator, pg_store_url: str,
             tmp_path: Path) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    """Gateway A names the store in gateway.toml, gateway B gets it from the environment."""
    named, plain = tmp_path / "a.toml", tmp_path / "b.toml"
    named.write_text(gateway_toml(deepseek, extra_server=f'store = "{pg_store_url}"\n'))
    plain.write_text(gateway_toml(deepseek))
    env = {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN}
    first = start_serve(named, tmp_path / "home-a", env)
    try:
        second = start_serve(plain, tmp_path / "home-b",
                             {**env, "THOUGHTLINE_DATABASE_URL": pg_store_url})
        try:
            assert first.base_url != second.base_url
            yield first, second
        finally:
            assert second.terminate() == 0, "".join(second.stderr)
    finally:
        assert first.terminate() == 0, "".join(first.stderr)
    # Each gateway kept its own home empty of state: everything went to PostgreSQL.
    for home in ("home-a", "home-b"):
        assert not (tmp_path / home / "state.db").exists()


def _client(gateway: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=TOKEN, max_retries=0, timeout=120)


async def _direct_run(emu: ChatEmulator, tmp: Path) -> None:
    store = open_store(tmp / "direct.db", tmp)
    transport = HttpTransport()
    provider = ProviderConfig(id="deepseek", base_url=emu.base_url, key_env=UPSTREAM_KEY_ENV,
                              model="deepseek-v4-pro")
    tools = [ToolSpec(name="weather", description="Current weather for a city",
                      parameters={"type": "object", "properties": {"city": {"type": "string"}},
                                  "required": ["city"]})]
    try:
        session = Session.create(store, provider, tools=tools, transport=transport)
        modes = iter(MODES)
        for question in QUESTIONS:
            done = await session.send(question, TurnOptions(stream=next(modes)))
            results = [ToolResult(call_id=c.id, content=tool_output(c.arguments))
                       for c in done.message.tool_calls]
            await session.send(results, TurnOptions(stream=next(modes)))
    finally:
        await transport.aclose()
        store.close()


def test_a_conversation_alternating_between_two_gateways_replays_byte_identical(
        gateways: tuple[ServeProcess, ServeProcess], deepseek: ChatEmulator,
        tmp_path: Path) -> None:
    clients = [_client(g) for g in gateways]
    agent = StrippingAgent(clients[0])
    modes = iter(MODES)
    step = 0
    for question in QUESTIONS:
        agent.ask(question)
        for expect_call in (True, False):
            agent.client = clients[step % 2]  # every request goes to the other gateway
            step += 1
            assert bool(agent.step(stream=next(modes)).get("tool_calls")) is expect_call
    sent = [r.raw for r in deepseek.received]
    assert [r.status for r in deepseek.received] == [200] * len(MODES)

    with ChatEmulator("deepseek") as direct:
        asyncio.run(_direct_run(direct, tmp_path))
        expected = [r.raw for r in direct.received]
    assert len(sent) == len(expected) == len(MODES)
    for index, (ours, theirs) in enumerate(zip(sent, expected, strict=True)):
        assert ours == theirs, f"request {index + 1} differs from the direct session's"
    for n, shown in enumerate(agent.reasoning[:-1]):  # shown, stripped, sent back verbatim
        assert shown and all(orjson.dumps(shown) in raw for raw in sent[n + 1:])


def _conversation(clients: list[openai.OpenAI], index: int) -> StrippingAgent:
    agent = StrippingAgent(clients[index % 2])
    agent.ask(f"What's the weather in city number {index}?")
    assert agent.step(stream=index % 3 == 0).get("tool_calls")
    agent.client = clients[(index + 1) % 2]
    assert not agent.step(stream=index % 2 == 0).get("tool_calls")
    return agent


def test_twenty_concurrent_conversations_across_both_gateways_lose_nothing(
        gateways: tuple[ServeProcess, ServeProcess], deepseek: ChatEmulator,
        pg_store_url: str, tmp_path: Path) -> None:
    clients = [_client(g) for g in gateways]
    with ThreadPoolExecutor(max_workers=CONVERSATIONS) as pool:
        agents = list(pool.map(lambda i: _conversation(clients, i), range(CONVERSATIONS)))

    assert [r.status for r in deepseek.received] == [200] * (2 * CONVERSATIONS)
    sessions = {agent.session for agent in agents}
    assert len(sessions) == CONVERSATIONS and "" not in sessions
    with open_store(pg_store_url, tmp_path) as store:  # type: ignore[attr-defined]
        for agent in agents:
            history = [m.message for m in store.load_history(agent.session).messages]
            assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
            assert history[0].text == agent.messages[0]["content"]
            assert history[1].reasoning_text() == agent.reasoning[0]
            assert history[3].text == agent.messages[-1]["content"]
