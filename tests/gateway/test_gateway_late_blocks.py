"""Anthropic content blocks of late 2026 through the gateway's ``/v1/messages`` face.

anthropic-sdk-python beta types (``beta_fallback_block_param``, tool changes): a server-side
fallback's ``fallback`` block and a ``tool_addition`` block go back to the Anthropic upstream
that made them byte for byte and in place — through the store,
whole and streamed — and the stored turn names the model that answered. The same history to a
Chat upstream (DeepSeek) carries neither block anywhere, offers the added tool in ``tools``, and
the access log names what was left out and why.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import RunningGateway, running_gateway
from test_gateway_claude_code import read_sse

from thoughtline.messages import Message, Opaque, Reasoning
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

TOKEN = "tok-late-blocks"
ASKED, FALLBACK_TO = "claude-fable-5-1", "claude-opus-5"  # Fable 5.1 reads Opus 5 blocks
BETAS = ("server-side-fallback-2026-07-01,mid-conversation-tool-changes-2026-07-01,"
         "inline-tools-2026-09-15")
WEATHER = {"name": "weather", "description": "Current weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
#: An inline tool, its keys in an order a rebuilt block would not keep.
ADD_CLOCK = {"tool": {"definition": {"name": "clock", "input_schema": {
    "type": "object", "properties": {}}, "description": "The time now"},
    "type": "tool_definition"}, "type": "tool_addition"}
REMOVE_WEATHER = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "weather"}}


@contextmanager
def anthropic_gateway(tmp: Path, log: Path) -> Iterator[tuple[AnthropicEmulator, RunningGateway]]:
    with AnthropicEmulator() as emu, running_gateway(
            emu, tmp, tokens=(TOKEN,), access_log=str(log), name="up", provider="anthropic",
            model=ASKED) as gw:
        yield emu, gw


def send(gw: RunningGateway, body: dict[str, Any], *, stream: bool) -> tuple[list[Any], str]:
    """One request as an Anthropic client sends it: the answer's content blocks as the client
    assembles them, and the session the gateway stored the turn in."""
    reply = httpx.post(gw.server.origin + "/v1/messages?beta=true",
                       content=orjson.dumps({**body, "stream": stream}),
                       headers={"x-api-key": TOKEN, "content-type": "application/json",
                                "anthropic-version": "2023-06-01", "anthropic-beta": BETAS},
                       timeout=60)
    assert reply.status_code == 200, reply.text
    content = read_sse(reply.text) if stream else reply.json()["content"]
    return content, reply.headers["x-thoughtline-session"]


def stored(gw: RunningGateway, session: str) -> list[Message]:
    return [m.message for m in gw.store.load_history(session).messages]


def first_question(*, model: str) -> dict[str, Any]:
    return {"model": model, "max_tokens": 4000, "tools": [WEATHER],
            "fallbacks": [{"model": FALLBACK_TO}],
            "messages": [{"role": "user", "content": "Tell me about lock picking."}]}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_fallback_block_goes_back_verbatim_in_place(tmp_path: Path, stream: bool) -> None:
    with anthropic_gateway(tmp_path, tmp_path / "access.log") as (emu, gw):
        emu.decline_next("cyber")
        body = first_question(model=f"up/{ASKED}")
        shown, session = send(gw, body, stream=stream)
        issued = emu.answers[0]
        body["messages"] += [{"role": "assistant", "content": shown},
                             {"role": "user", "content": "And the history of it?"}]
        send(gw, body, stream=stream)
        received = list(emu.received)
        turns = stored(gw, session)
    kinds = [b["type"] for b in issued]
    assert kinds[:3] == ["thinking", "fallback", "thinking"]  # a hop, thinking either side
    assert orjson.dumps(shown) == orjson.dumps(issued)  # the client saw the blocks as issued
    assert [r.status for r in received] == [200, 200]
    # The whole turn, the fallback block in its place, byte for byte (from the store).
    assert b'{"role":"assistant","content":' + orjson.dumps(issued) + b"}" in received[1].raw
    answer = turns[1]
    assert answer.origin is not None and answer.origin.model == FALLBACK_TO
    before, after = [p for p in answer.parts if isinstance(p, Reasoning)]
    assert before.origin.model == ASKED and after.origin.model == FALLBACK_TO
    (marker,) = [p for p in answer.parts if isinstance(p, Opaque)]
    assert orjson.dumps(marker.native["anthropic"]) == orjson.dumps(issued[1])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_tool_addition_goes_back_verbatim_and_is_not_a_top_level_tool(
        tmp_path: Path, stream: bool) -> None:
    with anthropic_gateway(tmp_path, tmp_path / "access.log") as (emu, gw):
        body = {"model": f"up/{ASKED}", "max_tokens": 4000, "tools": [WEATHER], "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"},
                                         ADD_CLOCK]}]}
        shown, _ = send(gw, body, stream=stream)
        (call,) = [b for b in shown if b["type"] == "tool_use"]
        body["messages"] += [
            {"role": "assistant", "content": shown},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                          "content": "Sunny"}]}]
        send(gw, body, stream=stream)
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200]
    for request in received:
        assert orjson.dumps(ADD_CLOCK) in request.raw  # key order and bytes kept
        assert request.body["tools"] == [WEATHER]  # the added tool stays where it was added
        assert request.body["messages"][0]["content"][1] == ADD_CLOCK


def _history_from_anthropic(tmp: Path) -> dict[str, Any]:
    """A conversation an Anthropic client had with a fallback, a tool added and one removed."""
    with anthropic_gateway(tmp / "first", tmp / "first.log") as (emu, gw):
        emu.decline_next("cyber")
        body = first_question(model=f"up/{ASKED}")
        shown, _ = send(gw, body, stream=False)
    assert any(b["type"] == "fallback" for b in shown)
    body["messages"] += [{"role": "assistant", "content": shown},
                         {"role": "user", "content": [{"type": "text", "text": "Now the time?"},
                                                      ADD_CLOCK, REMOVE_WEATHER]}]
    return body


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_chat_upstream_gets_what_the_blocks_mean_and_never_the_blocks(
        deepseek: ChatEmulator, tmp_path: Path, stream: bool) -> None:
    (tmp_path / "first").mkdir()
    body = _history_from_anthropic(tmp_path)
    log = tmp_path / "access.log"
    with running_gateway(deepseek, tmp_path, tokens=(TOKEN,), access_log=str(log)) as gw:
        send(gw, {**body, "model": "ds/deepseek-v4-pro"}, stream=stream)
    (sent,) = deepseek.received
    assert sent.status == 200
    for word in (b"fallback", b"tool_addition", b"tool_removal", b"tool_definition"):
        assert word not in sent.raw
    assert [t["function"]["name"] for t in sent.body["tools"]] == ["clock"]  # weather removed
    (line,) = [orjson.loads(x) for x in log.read_text().splitlines() if "/v1/messages" in x]
    dropped = " | ".join(line["dropped"])
    for kind in ("fallback blocks:", "tool_addition blocks:", "tool_removal blocks:",
                 "fallbacks"):
        assert kind in dropped
