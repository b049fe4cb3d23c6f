"""Interrupted answers, through a ``Session`` against the loopback emulators.

An answer cut off mid-stream is stored marked incomplete; nothing of it may be replayed as if it
were whole: no thinking block as signed, and no tool call (its result never existed, and every
provider rejects a call with no result, so each later turn would fail).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from cut_transport import CutTransport

from bedrock.aws_env import KEYS, fake_aws
from fallback_e2e.fallback_e2e_support import LOOKUP, store_at
from thoughtline import Session, ThoughtlineError, TurnOptions, replay
from thoughtline.codecs.anthropic import CODEC as ANTHROPIC_CODEC
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.bedrock import CODEC as BEDROCK_CODEC
from thoughtline.config import ProviderConfig, presets
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolResult,
    dumps,
    loads,
    tool_results,
    user,
)
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.testing.bedrock_emulator import BedrockEmulator

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
CLAUDE_37 = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
GPT_OSS = "openai.gpt-oss-120b-1:0"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BEDROCK = FIXTURES / "bedrock"
ANTHROPIC = FIXTURES / "anthropic"


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
    assert _uses(resumed.body) == whole and len(whole) == 1  # the later answer's call only
    again.store.close()


def test_an_interrupted_turn_opens_no_pending_calls_that_later_requests_repair(
        bedrock: BedrockEmulator, tmp_path: Path) -> None:
    # The cut call was never run: no later request may answer it with a made-up error result.
    store = store_at(tmp_path)
    transport = CutTransport()
    session = Session.create(store, _bedrock(bedrock), tools=[LOOKUP], transport=transport)
    _cut_after_the_call(session, transport)
    [cut_call] = session.history[-1].tool_calls
    mark = len(bedrock.received)
    asyncio.run(_send(session, "never mind, thanks", stream=False))
    [after] = bedrock.received[mark:]
    assert after.status == 200
    results = [b["toolResult"] for m in after.body["messages"] for b in m["content"]
               if "toolResult" in b]
    assert results == [] and cut_call.id.encode() not in after.raw
    store.close()


def test_anthropic_never_replays_the_cut_tool_use_of_an_interrupted_turn(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TL_TEST_ANTHROPIC_KEY", "sk-ant-test")
    with AnthropicEmulator() as emu:
        provider = replace(presets()["anthropic"], base_url=emu.base_url,
                           model="claude-opus-4-5", key_env="TL_TEST_ANTHROPIC_KEY")
        transport = CutTransport()
        session = Session.create(store_at(tmp_path), provider, tools=[LOOKUP],
                                 transport=transport)
        transport.cut_before("message_delta")  # every block arrived, the turn never ended
        with pytest.raises(ThoughtlineError):
            asyncio.run(_send(session, "weather in Paris"))
        assert transport.cuts == 1
        partial = session.history[-1]
        assert partial.incomplete and partial.tool_calls
        mark = len(emu.received)
        asyncio.run(_send(session, "never mind, thanks", stream=False))
        [after] = emu.received[mark:]
        assert after.status == 200, after.raw[-300:]
        assert partial.tool_calls[0].id.encode() not in after.raw
        session.store.close()


# --- signature completeness on the codecs (recorded answers) -------------------------------------


def _converse_answer(*, signed: bool) -> Message:
    """The recorded Claude-on-Bedrock tool answer; without its signature when ``signed`` is
    False (Claude always signs, so an unsigned block is one cut off before its signature)."""
    body = orjson.loads((BEDROCK / "pydantic-ai-bedrock-claude-tool-with-thinking.i0.response"
                                   ".json").read_bytes())
    if not signed:
        del body["output"]["message"]["content"][0]["reasoningContent"]["reasoningText"][
            "signature"]
    return BEDROCK_CODEC.decode_response(body, Origin(api="bedrock", provider="bedrock",
                                                      model=CLAUDE_37)).message


def _converse_body(turn: Message, target: str) -> bytes:
    history = [user("q"), turn, tool_results([ToolResult(call_id=turn.tool_calls[0].id,
                                                         content="France")])]
    plan = replay.plan(BEDROCK_CODEC.resolve("bedrock", None, target))
    return BEDROCK_CODEC.encode_request(history, plan, RequestSpec(model=target)).raw


@pytest.mark.parametrize("target", [CLAUDE_37, GPT_OSS])
def test_bedrock_thinking_cut_before_its_signature_is_never_sent(target: str) -> None:
    whole = _converse_answer(signed=True)
    [thought] = whole.reasoning
    assert orjson.dumps(thought.text) in _converse_body(whole, target)  # the control: it goes
    cut = _converse_answer(signed=False)
    assert not cut.reasoning[0].complete
    body = _converse_body(cut, target)
    assert orjson.dumps(thought.text)[:60] not in body  # neither signed nor as readable text
    assert cut.tool_calls[0].id.encode() in body  # the rest of the turn still goes


def _sse(path: Path) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    name, data = "", []
    for line in [*path.read_text("utf-8").splitlines(), ""]:
        if not line:
            if data:
                out.append((name, orjson.loads("\n".join(data))))
            name, data = "", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    return out


def _anthropic_turn(events: list[tuple[str, Any]], model: str) -> Message:
    fold = ANTHROPIC_CODEC.new_fold(Origin(api="anthropic", provider="anthropic",
                                           host="api.anthropic.com", model=model))
    for name, payload in events:
        fold.add_event(name, payload)
    return fold.finish().message


def _anthropic_body(turn: Message, model: str) -> bytes:
    plan = replay.plan(ANTHROPIC_CODEC.resolve("anthropic", None, model))
    return ANTHROPIC_CODEC.encode_request([user("q"), turn, user("again")], plan,
                                          RequestSpec(model=model)).raw


def test_anthropic_redacted_block_that_never_stopped_is_never_sent() -> None:
    # The message stopped, but the first redacted block's own content_block_stop never came:
    # the block is incomplete and is never replayed, while the rest of the turn is.
    events = _sse(ANTHROPIC / "pydantic-ai-anthropic-redacted-thinking-stream.i0.response.sse.txt")
    model = events[0][1]["message"]["model"]
    datas = [p["content_block"]["data"] for _, p in events if p["type"] == "content_block_start"
             and p["content_block"]["type"] == "redacted_thinking"]
    whole = _anthropic_turn(events, model)
    assert all(orjson.dumps(d) in _anthropic_body(whole, model) for d in datas)  # the control
    first_stop = next(i for i, (_, p) in enumerate(events) if p["type"] == "content_block_stop")
    cut = _anthropic_turn(events[:first_stop] + events[first_stop + 1:], model)
    assert not cut.incomplete and not cut.reasoning[0].complete and cut.reasoning[0].data
    body = _anthropic_body(cut, model)
    assert datas[0].encode() not in body
    assert whole.text and orjson.dumps(whole.text) in body


def test_anthropic_stored_signed_block_marked_incomplete_is_never_sent() -> None:
    # A stored (or imported) turn whose thinking block is marked incomplete keeps the signature
    # it had, and still never goes out signed.
    model = "claude-sonnet-4-5"
    where = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com", model=model)
    whole = Message(role="assistant", origin=where, parts=(
        Reasoning(kind="signed", text="thought", signature="SIG-cut-short", origin=where),
        Text(text="answer")))
    assert b"SIG-cut-short" in _anthropic_body(whole, model)  # the control: it goes
    cut = loads(dumps(whole).replace(b'"SIG-cut-short"', b'"SIG-cut-short","complete":false'))
    assert not cut.reasoning[0].complete and cut.reasoning[0].signature == "SIG-cut-short"
    body = _anthropic_body(cut, model)
    assert b"SIG-cut-short" not in body and b'"answer"' in body


def test_anthropic_interrupted_turn_replays_none_of_its_server_tool_blocks() -> None:
    # Opaque blocks (server tool use and results) of a cut turn may themselves be cut.
    body = orjson.loads((ANTHROPIC / "pydantic-ai-anthropic-sonnet5-empty-thinking-replay.i0"
                                     ".response.json").read_bytes())
    model = "claude-sonnet-5"
    where = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com", model=model)
    whole = ANTHROPIC_CODEC.decode_response(body, where).message
    opaque = [orjson.dumps(p.native["anthropic"]) for p in whole.parts if isinstance(p, Opaque)]
    assert opaque and all(o in _anthropic_body(whole, model) for o in opaque)  # the control
    cut = replace(whole, incomplete=True)
    sent = _anthropic_body(cut, model)
    assert not any(o in sent for o in opaque)
