"""The gateway's promise: a client that strips reasoning still gets exact replay upstream.

An unmodified ``openai`` SDK runs a two-question tool loop through the gateway against a DeepSeek-
personality emulator (must-echo ``reasoning_content`` on tool-call turns,
api-docs.deepseek.com/guides/thinking_mode),
the Anthropic Messages emulator (signed thinking verified on the way back in), the Gemini emulator
(thought signatures), the OpenAI Responses emulator (encrypted reasoning items) and the Bedrock
Converse emulator (SigV4-checked, signed reasoning), and keeps only role, content and tool calls of
every answer. Every upstream request must be accepted and must be byte-identical to what a direct
thoughtline ``Session`` (which keeps the whole turn) sends for the same conversation; the reasoning
the client was shown comes back upstream byte for byte.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from gateway_support import (
    UPSTREAM_KEY_ENV,
    StrippingAgent,
    running_gateway,
    tool_output,
)

from thoughtline import Session, ToolResult, ToolSpec, TurnOptions, config, open_store
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.testing.bedrock_emulator import BedrockEmulator
from thoughtline.testing.gemini_emulator import GeminiEmulator
from thoughtline.testing.responses_emulator import ResponsesEmulator
from thoughtline.transport import HttpTransport

QUESTIONS = ("What's the weather in Paris?", "And in Rome?")
#: Streamed or not, per request: both paths must rehydrate the same way.
MODES = (False, True, True, False)


@dataclass(frozen=True)
class Upstream:
    """An emulated upstream of one API, played under a preset's provider id."""

    provider: str
    model: str
    emulator: Callable[[], Any]


UPSTREAMS = {
    "deepseek": Upstream("deepseek", "deepseek-v4-pro", lambda: ChatEmulator("deepseek")),
    "anthropic": Upstream("anthropic", "claude-sonnet-4-5", AnthropicEmulator),
    "gemini": Upstream("gemini", "gemini-3-pro-preview", GeminiEmulator),
    "openai-responses": Upstream("openai-responses", "gpt-5.5", ResponsesEmulator),
    "bedrock": Upstream("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                        lambda: BedrockEmulator(credentials=AWS_KEYS)),
}
AWS_KEYS = ("AKIDGATEWAYTEST", "gateway-test-secret-key")


def _gateway_run(emu: Any, tmp: Path, upstream: Upstream) -> StrippingAgent:
    with running_gateway(emu, tmp, name="up", provider=upstream.provider,
                         model=upstream.model) as gw:
        agent = StrippingAgent(gw.client(), model=f"up/{upstream.model}")
        modes = iter(MODES)
        for question in QUESTIONS:
            agent.ask(question)
            assert agent.step(stream=next(modes)).get("tool_calls")
            assert not agent.step(stream=next(modes)).get("tool_calls")
    return agent


async def _direct_run(emu: Any, tmp: Path, upstream: Upstream) -> None:
    store = open_store(tmp / "direct.db", tmp)
    transport = HttpTransport()
    base_url = getattr(emu, "base_url", None) or emu.endpoint_url
    provider = config.provider(upstream.provider, base_url=base_url,
                               key_env=UPSTREAM_KEY_ENV, model=upstream.model)
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


@pytest.mark.parametrize("name", sorted(UPSTREAMS))
def test_stripped_history_replays_byte_identical_to_a_direct_session(
        tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Bedrock signs with botocore's credential chain: these keys, nothing from the machine.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEYS[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_KEYS[1])
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name_ in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name_, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials")
    upstream = UPSTREAMS[name]
    with upstream.emulator() as via_gateway, upstream.emulator() as direct:
        agent = _gateway_run(via_gateway, tmp_path, upstream)
        asyncio.run(_direct_run(direct, tmp_path, upstream))
        sent = [r.raw for r in via_gateway.received]
        expected = [r.raw for r in direct.received]
        assert [r.status for r in via_gateway.received] == [200] * len(MODES)
        assert [r.status for r in direct.received] == [200] * len(MODES)
    assert len(sent) == len(expected) == len(MODES)
    for index, (ours, theirs) in enumerate(zip(sent, expected, strict=True)):
        assert ours == theirs, f"request {index + 1} differs from the direct session's"
    # What the client was shown (and then dropped) went back upstream byte for byte.
    tool_steps = agent.reasoning[0::2]  # each question's tool-call step thought first
    assert all(tool_steps)
    for step, shown in ((0, tool_steps[0]), (2, tool_steps[1])):
        assert orjson.dumps(shown)[1:-1] in sent[step + 1]
    # The client really did strip it: its own history holds no reasoning at all.
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id"}
               for m in agent.messages)


def test_every_response_names_its_session_and_one_conversation_keeps_one(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        agent = StrippingAgent(gw.client())
        agent.ask(QUESTIONS[0])
        agent.step(stream=False)
        first = agent.session
        agent.step(stream=True)
        assert agent.session == first != ""
        history = gw.store.load_history(first).messages
        roles = [m.message.role for m in history]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert all(m.message.reasoning for m in history if m.message.role == "assistant")


def test_turns_with_identical_text_each_get_their_own_reasoning(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        agent = StrippingAgent(gw.client())
        for question in ("Weather in Paris?", "Weather in Turin?"):  # same-length arguments:
            agent.ask(question)                                      # identical tool outputs
            agent.step(stream=False)
            agent.step(stream=False)
        answers = [m["content"] for m in agent.messages if m["role"] == "assistant"
                   and not m.get("tool_calls")]
        assert len(answers) == 2 and answers[0] == answers[1]
        agent.ask("Thanks!")
        agent.step(stream=True)
    last = deepseek.received[-1].body
    replayed = [m["reasoning_content"] for m in last["messages"] if m["role"] == "assistant"]
    assert replayed == agent.reasoning[:-1]
    assert replayed[1] != replayed[3]
