"""Interrupted answers, through a ``Session`` against the loopback emulators.

An answer cut off mid-stream is stored marked incomplete; nothing of it may be replayed as if it
were whole: no thinking block as signed, and no tool call (its result never existed, and every
provider rejects a call with no result, so each later turn would fail).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cut_transport import CutTransport

from bedrock.aws_env import KEYS, fake_aws
from fallback_e2e.fallback_e2e_support import LOOKUP, store_at
from thoughtline import Session, ThoughtlineError, TurnOptions
from thoughtline.config import ProviderConfig
from thoughtline.testing.bedrock_emulator import BedrockEmulator

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[BedrockEmulator]:
    fake_aws(monkeypatch)
    with BedrockEmulator(region="us-east-1", credentials=KEYS) as emulator:
        yield emulator


def _bedrock(emu: BedrockEmulator, model: str = CLAUDE) -> ProviderConfig:
    return ProviderConfig(id="bedrock", api="bedrock", base_url=emu.endpoint_url, model=model,
                          auth="sigv4:bedrock", region="us-east-1")


async def _send(session: Session, text: str, *, stream: bool = True) -> None:
    await session.send(text, TurnOptions(stream=stream, keep_partial=True))


def _cut_after_the_call(session: Session, transport: CutTransport) -> None:
    """One question whose streamed answer (thinking, then a whole tool call) is cut just before
    ``messageStop``: every block arrived, the turn never finished."""
    transport.cut_before("messageStop")
    with pytest.raises(ThoughtlineError):
        asyncio.run(_send(session, "weather in Paris"))
    assert transport.cuts == 1
    partial = session.history[-1]
    assert partial.role == "assistant" and partial.incomplete and partial.tool_calls


def _uses(body: Any) -> list[str]:
    return [b["toolUse"]["toolUseId"] for m in body["messages"] for b in m["content"]
            if "toolUse" in b]


def test_bedrock_never_replays_the_cut_tool_call_of_an_interrupted_turn(
        bedrock: BedrockEmulator, tmp_path: Path) -> None:
    store = store_at(tmp_path)
    transport = CutTransport()
    session = Session.create(store, _bedrock(bedrock), tools=[LOOKUP], transport=transport)
    _cut_after_the_call(session, transport)
    [cut_call] = session.history[-1].tool_calls
    mark = len(bedrock.received)
    asyncio.run(_send(session, "never mind, thanks", stream=False))
    [after] = bedrock.received[mark:]
    assert after.status == 200, after.raw[-300:]
    assert _uses(after.body) == []  # the only call so far is the cut one
    # The stored history still holds the cut call (nothing is lost), marked incomplete.
    assert session.history[1].incomplete and session.history[1].tool_calls == (cut_call,)
    store.close()

    # A resumed session splices its stored wire forms: they must not hold the call either.
    again = Session.resume(store_at(tmp_path), session.id, transport=CutTransport())
    mark = len(bedrock.received)
    asyncio.run(_send(again, "and in Rome?", stream=False))
    [resumed] = bedrock.received[mark:]
    assert resumed.status == 200, resumed.raw[-300:]
    whole = [c.id for m in again.history[:-2] if not m.incomplete for c in m.tool_calls]
    assert _uses(resumed.body) == whole and len(whole) == 1  # the answer after the cut's call
    again.store.close()

