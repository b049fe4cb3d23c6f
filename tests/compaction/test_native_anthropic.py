"""``[compaction] native = true`` on the Anthropic emulator: on-demand compaction is the
summarizer (beta ``compact-2026-09-04``, the compaction-on-demand page), its signed ``compaction``
block is stored verbatim and replayed, in place, only to the provider that produced it; any failure
falls back to our own summarizer, and a 400 naming compaction turns it off for the session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from compaction_support import TOOLS, run

from thoughtline import Session, ToolResult, config
from thoughtline.compaction import CompactionSettings, compress, is_checkpoint, load_settings
from thoughtline.errors import ConfigError
from thoughtline.messages import Opaque
from thoughtline.requestlog import RequestLog
from thoughtline.store.base import Store
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

KEY_ENV = "TL_CMP_NATIVE_KEY"
NATIVE = CompactionSettings(native=True)
BETA = "compact-2026-09-04"


@pytest.fixture(scope="module")
def anthropic() -> Iterator[AnthropicEmulator]:
    with AnthropicEmulator() as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-ant-fake-native")


def _provider(emu: AnthropicEmulator, model: str) -> config.ProviderConfig:
    return replace(config.presets()["anthropic"], base_url=emu.base_url, model=model,
                   key_env=KEY_ENV)


async def _conversation(session: Session, loops: int) -> None:
    for i in range(loops):
        done = await session.send(f"What's the weather in city {i}?")
        calls = done.message.tool_calls
        if calls:
            await session.send([ToolResult(call_id=c.id, content=f"sunny, {20 + i} C")
                                for c in calls])
    await session.send("status?")


def _compaction_blocks(body: Any) -> list[tuple[int, str, bytes]]:
    return [(i, m["role"], orjson.dumps(b)) for i, m in enumerate(body["messages"])
            if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "compaction"]


def test_on_demand_compaction_is_the_summary_and_goes_back_verbatim_in_place(
        anthropic: AnthropicEmulator, store: Store) -> None:
    async def scenario() -> tuple[Session, Any]:
        session = Session.create(store, _provider(anthropic, "claude-sonnet-4-6"), tools=TOOLS,
                                 system="Be brief.")
        await _conversation(session, 3)
        result = await compress(session, keep=4, settings=NATIVE)
        await session.send("and now?")
        await session.send("and then?")
        await session.aclose()
        return session, result

    start = len(anthropic.received)
    session, result = run(scenario())
    sent = anthropic.received[start:]
    assert all(r.status == 200 for r in sent)
    assert result.compacted and "own compaction" in result.describe()
    ask = sent[-3]  # the compaction request: the head as messages, the beta and the parameter
    assert "compaction" in ask.body and BETA in ask.headers["anthropic-beta"]
    answered = anthropic.answers[-3]
    assert [b["type"] for b in answered] == ["compaction"]
    mark = session.history[1]
    assert is_checkpoint(mark) and answered[0]["content"] in mark.text
    stored = [p for p in mark.parts if isinstance(p, Opaque)]
    assert [dict(p.native["anthropic"]) for p in stored] == answered  # verbatim, signature too
    for request in sent[-2:]:  # replayed byte for byte, alone, where the checkpoint sits
        blocks = _compaction_blocks(request.body)
        assert blocks == [(0, "assistant", orjson.dumps(answered[0]))]
        assert "compaction" not in request.body  # the parameter is for the summary only
        assert "[Summary of the earlier part" not in orjson.dumps(request.body).decode()


def test_a_model_without_it_falls_back_to_our_summarizer(anthropic: AnthropicEmulator,
                                                         store: Store) -> None:
    async def scenario() -> tuple[Session, Any]:
        session = Session.create(store, _provider(anthropic, "claude-opus-4-5"), tools=TOOLS)
        await _conversation(session, 3)
        result = await compress(session, keep=4, settings=NATIVE)
        await session.send("and now?")
        await session.aclose()
        return session, result

    start = len(anthropic.received)
    session, result = run(scenario())
    sent = anthropic.received[start:]
    assert result.compacted
    assert "compaction" not in sent[-2].body  # no native request: our summary prompt
    assert not any(isinstance(p, Opaque) for p in session.history[0].parts)
    assert _compaction_blocks(sent[-1].body) == []


def test_a_400_naming_compaction_falls_back_and_turns_it_off_for_the_session(
        anthropic: AnthropicEmulator, store: Store) -> None:
    rejection = {"type": "error", "error": {"type": "invalid_request_error", "message":
                 "compaction: on-demand compaction is temporarily unavailable"}}

    async def scenario() -> tuple[Session, Any, Any]:
        session = Session.create(store, _provider(anthropic, "claude-sonnet-4-6"), tools=TOOLS)
        await _conversation(session, 3)
        anthropic.fail_next(400, rejection)
        first = await compress(session, keep=4, settings=NATIVE)
        await _conversation(session, 2)
        second = await compress(session, keep=4, settings=NATIVE)
        await session.aclose()
        return session, first, second

    start = len(anthropic.received)
    session, first, second = run(scenario())
    sent = anthropic.received[start:]
    assert first.compacted and "off for this session" in first.describe()
    asked = [r for r in sent if "compaction" in (r.body or {})]
    assert len(asked) == 1 and asked[0].status == 400  # never asked again
    assert second.compacted and second.native == ""
    off = session.config.api_settings("thoughtline.native_compaction")
    assert off["off"] is True and "400" in off["reason"]
    reopened = Session.resume(store, session.id)
    assert reopened.config.api_settings("thoughtline.native_compaction")["off"] is True


def test_another_provider_gets_our_summary_and_never_the_block(anthropic: AnthropicEmulator,
                                                               store: Store) -> None:
    with AnthropicEmulator(account="acct-other") as other:
        async def scenario() -> Session:
            session = Session.create(store, _provider(anthropic, "claude-sonnet-4-6"),
                                     tools=TOOLS)
            await _conversation(session, 3)
            await compress(session, keep=4, settings=NATIVE)
            session.set_provider(replace(_provider(other, "claude-sonnet-4-6"), id="claude-b"))
            await session.send("still there?")
            await session.aclose()
            return session

        moved = run(scenario())
        sent = other.received[-1]
    assert sent.status == 200
    assert _compaction_blocks(sent.body) == []
    first = sent.body["messages"][0]
    assert first["role"] == "user" and "Compacted summary of" in orjson.dumps(first).decode()
    assert any(isinstance(p, Opaque) for p in moved.history[0].parts)  # still stored


def test_another_api_gets_our_summary_text_and_the_log_says_why(
        anthropic: AnthropicEmulator, emu: Any, store: Store, tmp_path: Path) -> None:
    from compaction_support import deepseek

    log = RequestLog(tmp_path / "logs")

    async def scenario() -> Session:
        session = Session.create(store, _provider(anthropic, "claude-sonnet-4-6"), tools=TOOLS,
                                 log=log)
        await _conversation(session, 3)
        await compress(session, keep=4, settings=NATIVE)
        await session.send("and now?")
        session.set_provider(deepseek(emu))
        await session.send("still there?")
        await session.aclose()
        return session

    session = run(scenario())
    sent = emu.received[-1]
    assert sent.status == 200
    text = orjson.dumps(sent.body).decode()
    assert "Compacted summary of" in text and '"compaction"' not in text
    assert "signature" not in text
    records = [r for r in log.read() if r["session"] == session.id]
    assert "compaction_left_out" not in records[-2]  # Anthropic, after the compaction: sent
    left = records[-1]["compaction_left_out"]
    assert left["count"] == 1 and left["made_by"] == ["anthropic"]
    assert "readable only by the provider that made it" in left["reason"]


def test_native_is_read_from_config_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[compaction]\nnative = true\n")
    assert load_settings(tmp_path).native is True
    (tmp_path / "config.toml").write_text("[compaction]\nnative = \"yes\"\n")
    with pytest.raises(ConfigError, match="native must be true or false"):
        load_settings(tmp_path)


def test_automatic_compaction_uses_it_and_counts_its_requests(anthropic: AnthropicEmulator,
                                                              store: Store) -> None:
    from thoughtline.compaction import AutoCompaction

    auto = AutoCompaction(CompactionSettings(native=True, windows={"anthropic": 6000}, keep=4))

    async def scenario() -> Session:
        session = Session.create(store, _provider(anthropic, "claude-sonnet-4-6"), tools=TOOLS)
        for i in range(24):
            done = await auto.send(session, f"What's the weather in city {i}? " + "Details. " * 20)
            for call in done.message.tool_calls:
                await auto.send(session, [ToolResult(call_id=call.id, content="sunny " * 40)])
        await session.aclose()
        return session

    start = len(anthropic.received)
    session = run(scenario())
    sent = anthropic.received[start:]
    asked = [r for r in sent if "compaction" in r.body]
    assert all(r.status == 200 for r in sent)
    assert auto.compactions >= 1 and auto.summary_requests == len(asked) == auto.compactions
    assert any(isinstance(p, Opaque) for p in session.history[0].parts)
