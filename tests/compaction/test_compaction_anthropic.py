"""Compaction on the Anthropic emulator: kept turns' signed and redacted thinking go back byte for
byte on a model that reads earlier thinking; on a preserved-thinking model the compacted session
asks for ``drop_block`` (platform.claude.com/docs/en/build-with-claude/preserved-thinking), stays
accepted, and the drops are shown."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import orjson
import pytest
from compaction_support import TOOLS, run

from thoughtline import Session, ToolResult, config
from thoughtline.compaction import compress, is_checkpoint
from thoughtline.events import Notice
from thoughtline.store.base import Store
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

KEY_ENV = "TL_CMP_ANTHROPIC_KEY"


@pytest.fixture(scope="module")
def anthropic() -> Iterator[AnthropicEmulator]:
    with AnthropicEmulator() as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-ant-fake-compaction")


def _provider(emu: AnthropicEmulator, model: str) -> config.ProviderConfig:
    return replace(config.presets()["anthropic"], base_url=emu.base_url, model=model,
                   key_env=KEY_ENV)


def _assistant_contents(body: Any, until: str = "\0") -> list[bytes]:
    """Assistant contents as bytes, up to the first message mentioning ``until``."""
    out = []
    for message in body["messages"]:
        if until in orjson.dumps(message).decode():
            break
        if message["role"] == "assistant":
            out.append(orjson.dumps(message["content"]))
    return out


async def _conversation(session: Session, loops: int) -> None:
    for i in range(loops):
        done = await session.send(f"What's the weather in city {i}?")
        calls = done.message.tool_calls
        if calls:
            await session.send([ToolResult(call_id=c.id, content=f"sunny, {20 + i} C")
                                for c in calls])
    await session.send("status?")


def test_kept_thinking_goes_back_byte_for_byte(anthropic: AnthropicEmulator,
                                               store: Store) -> None:
    async def scenario() -> tuple[Session, Any]:
        session = Session.create(store, _provider(anthropic, "claude-opus-4-5"), tools=TOOLS,
                                 system="Be brief.")
        await _conversation(session, 4)
        result = await compress(session, keep=5)
        await session.send("and now?")
        await session.aclose()
        return session, result

    start = len(anthropic.received)
    session, result = run(scenario())
    sent = anthropic.received[start:]
    assert all(r.status == 200 for r in sent)
    assert result.compacted and result.settings == {}  # this model binds no blocks
    assert session.history[0].role == "system" and is_checkpoint(session.history[1])
    before = set(_assistant_contents(sent[-3].body))  # the "status?" request
    kept = _assistant_contents(sent[-1].body, "status?")
    assert len(kept) >= 2 and all(content in before for content in kept)
    assert any(b'"signature"' in c or b'"redacted_thinking"' in c for c in kept)


def test_a_preserved_thinking_model_drops_stale_blocks_visibly_and_stays_accepted(
        anthropic: AnthropicEmulator, store: Store) -> None:
    async def scenario() -> tuple[Session, Any, list[str]]:
        session = Session.create(store, _provider(anthropic, "claude-fable-5-1"), tools=TOOLS,
                                 system="Be brief.")
        await _conversation(session, 3)
        result = await compress(session, keep=4)
        shown = [e.text async for e in session.stream("and now?") if isinstance(e, Notice)]
        await session.aclose()
        return session, result, shown

    start = len(anthropic.received)
    session, result, shown = run(scenario())
    sent = anthropic.received[start:]
    assert all(r.status == 200 for r in sent)
    assert result.settings == {"anthropic": {"prefix_mismatch_behavior": "drop_block"}}
    assert session.config.api_settings("anthropic")["prefix_mismatch_behavior"] == "drop_block"
    last = sent[-1].body
    assert last["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert any("dropped" in line for line in shown)  # the drops are shown, never silent
    summary_request = sent[-2].body
    assert "[assistant, thinking]" not in orjson.dumps(summary_request).decode()


@pytest.mark.parametrize("model", ["claude-opus-4-5", "claude-fable-5-1"])
def test_automatic_compaction_on_a_long_anthropic_tool_session(anthropic: AnthropicEmulator,
                                                               store: Store, model: str) -> None:
    import itertools

    from thoughtline.compaction import AutoCompaction, CompactionSettings

    auto = AutoCompaction(CompactionSettings(windows={"anthropic": 6000}, keep=4))
    compacted_on: list[int] = []  # which sends compacted first
    sends = itertools.count()

    async def send(session: Session, turn: Any) -> Any:
        count, number = auto.compactions, next(sends)
        done = await auto.send(session, turn)
        if auto.compactions > count:
            compacted_on.append(number)
        return done

    async def scenario() -> None:
        session = Session.create(store, _provider(anthropic, model), tools=TOOLS)
        for i in range(40):
            done = await send(session, f"What's the weather in city {i}? " + "Details. " * 20)
            for call in done.message.tool_calls:
                await send(session, [ToolResult(call_id=call.id, content="sunny " * 40)])
        await session.aclose()

    start = len(anthropic.received)
    run(scenario())
    sent = anthropic.received[start:]
    assert all(r.status == 200 for r in sent)  # accepted throughout, drops and all
    assert len(compacted_on) >= 2 and len(sent) == next(sends) + len(compacted_on)
    assert all(b - a > 1 for a, b in itertools.pairwise(compacted_on))  # never twice in a row
