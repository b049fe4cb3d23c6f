"""Helpers of the compaction tests: a reasoning-heavy tool-calling session on an emulator, and
reading what the emulator received as bytes.

Owns test conveniences only: driving user → tool call → tool result → answer loops through the
public ``Session`` API, and finding each assistant turn's wire form in the recorded request
bodies (keyed by its tool-call id or its text, as the emulator issued them). Expectations stay in
the tests.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable
from typing import Any, TypeVar

import orjson

from thoughtline import AutoCompaction, Session, ToolResult, ToolSpec, TurnOptions, config
from thoughtline.testing import ChatEmulator, Received

T = TypeVar("T")

TOOLS = (ToolSpec(name="lookup", description="Look a fact up",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}},
                              "required": ["query"]}),)


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable
    return asyncio.run(main())


def deepseek(emu: ChatEmulator, **changes: Any) -> config.ProviderConfig:
    """The deepseek preset (a must-echo route) aimed at the emulator."""
    return config.provider("deepseek", base_url=emu.base_url, model="deepseek-reasoner",
                           **changes)


async def tool_loop(session: Session, i: int, *, result_size: int = 200,
                    stream: bool = True, auto: AutoCompaction | None = None) -> None:
    """One exchange: question → (reasoning + tool call) → result → (reasoning + answer);
    through ``auto`` (automatic compaction) when given."""
    send = session.send if auto is None else functools.partial(auto.send, session)
    done = await send(f"Question {i}: look up fact number {i}, please.",
                      TurnOptions(stream=stream))
    calls = done.message.tool_calls
    assert calls, f"exchange {i}: the emulator was expected to call the tool"
    filler = f"fact {i} " * (result_size // 7 + 1)
    results = [ToolResult(call_id=c.id, content=filler[:result_size]) for c in calls]
    done = await send(results, TurnOptions(stream=stream))
    assert done.message.text and not done.message.tool_calls


def accepted(emu: ChatEmulator, start: int = 0) -> list[Received]:
    return [r for r in emu.received[start:] if r.path.endswith("/chat/completions")]


def wire_key(message: dict[str, Any]) -> str:
    """An assistant wire message's identity: its tool-call id, else its text."""
    calls = message.get("tool_calls") or ()
    return calls[0]["id"] if calls else f"text:{message.get('content')}"


def assistant_wire(body: Any) -> dict[str, bytes]:
    """Each assistant message of a request body, as the exact bytes it was received as."""
    out = {}
    for message in body.get("messages", ()):
        if message.get("role") == "assistant":
            out[wire_key(message)] = orjson.dumps(message)
    return out
