"""Helpers for the Anthropic end-to-end tests: routes aimed at the emulator, a tool conversation
through the public ``Session`` API, and reading the emulator's records.

Expectations stay in the tests; the emulator's record (what it received and what it answered) is
the witness, independent of the codec.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import orjson

from thoughtline import Done, ProviderConfig, Session, ToolResult, ToolSpec, config, open_store
from thoughtline.events import Event, Notice
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.testing.server import Received

T = TypeVar("T")
TOOLS = (ToolSpec(name="weather", description="Current weather for a city",
                  parameters={"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}),)
KEYS = {"TL_TEST_ANTHROPIC_KEY": "sk-ant-test", "TL_TEST_VERTEX_TOKEN": "ya29.test-token",
        "TL_TEST_FOUNDRY_KEY": "foundry-test-key",
        # Fake AWS credentials for SigV4 (botocore reads them from the environment).
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLETEST", "AWS_SECRET_ACCESS_KEY": "test/secret/key",
        "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}


@dataclass(frozen=True, slots=True)
class RouteCase:
    """A preset aimed at the emulator on one platform's path."""

    name: str
    preset: str
    key_env: str
    platform_path: bool = False  # base URL …/anthropic (Foundry, Bedrock) instead of the root
    changes: Mapping[str, str] = field(default_factory=dict)

    def provider(self, emu: AnthropicEmulator, model: str) -> ProviderConfig:
        base = emu.platform_url if self.platform_path else emu.base_url
        return replace(config.presets()[self.preset], base_url=base, model=model,
                       key_env=self.key_env, **self.changes)


ROUTES = (
    RouteCase("direct", "anthropic", "TL_TEST_ANTHROPIC_KEY"),
    RouteCase("vertex", "vertex-anthropic", "TL_TEST_VERTEX_TOKEN",
              changes={"project": "test-project", "region": "us-east5"}),
    RouteCase("foundry", "foundry", "TL_TEST_FOUNDRY_KEY", platform_path=True),
    RouteCase("bedrock", "bedrock-anthropic", "", platform_path=True,
              changes={"region": "us-east-1"}),
)
ROUTE = {case.name: case for case in ROUTES}


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable
    return asyncio.run(main())


def new_session(home: Path, provider: ProviderConfig, **kwargs: Any) -> Session:
    return Session.create(open_store(None, home), provider, tools=kwargs.pop("tools", TOOLS),
                          **kwargs)


async def collect(session: Session, turn: Any) -> tuple[Done, list[Event]]:
    """One turn's events; the transport is closed after it (each ``run`` is a new event loop)."""
    try:
        events = [event async for event in session.stream(turn)]
    finally:
        await session.aclose()
    done = events[-1]
    assert isinstance(done, Done)
    return done, events


def notices(events: Sequence[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


async def tool_conversation(session: Session) -> list[Done]:
    """Two tool loops: a call, its answer (signed empty-text + redacted thinking), again."""
    answers = []
    for question in ("What's the weather in Paris?", "And in Rome?"):
        called = await session.send(question)
        answers.append(called)
        [call] = called.message.tool_calls
        answers.append(await session.send([ToolResult(call_id=call.id, content="sunny, 21 C")]))
    await session.aclose()
    return answers


def assistant_contents(received: Received) -> list[bytes]:
    """The assistant messages' content exactly as the emulator received them (keys in order)."""
    return [orjson.dumps(m["content"]) for m in received.body["messages"]
            if m["role"] == "assistant"]


def issued(emu: AnthropicEmulator, start: int, count: int) -> list[bytes]:
    return [orjson.dumps(content) for content in emu.answers[start:start + count]]


def signatures(received: Received) -> set[str]:
    return {b.get("signature") or b.get("data") for m in received.body["messages"]
            if m["role"] == "assistant" for b in m["content"]
            if b["type"] in ("thinking", "redacted_thinking")}
