"""Issue 45 item 1: a resent conversation's items are converted and digested once (``memo``).

The memo is only an optimization: the same conversation through a gateway with it and through
one with it off must send the upstream the same bytes, request by request — growing, with an
edit in the middle of the history, a regenerated answer (a branch) and a client's own
compaction (its history replaced by a summary) — per face, the Responses face both to another
API and to its own (where the provider's reasoning items go back verbatim).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import MODEL, TOOLS, running_gateway, tool_output
from messages_support import MESSAGES_TOOLS
from responses_face_support import RESPONSES_TOOLS

from thoughtline.gateway.memo import Memos
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.testing.responses_emulator import ResponsesEmulator

CLAUDE = "up/claude-opus-5-5"


def _chat_step(post: Callable[[dict[str, Any]], Any], history: list[Any]) -> None:
    answer = post({"model": MODEL, "messages": history, "tools": TOOLS})["choices"][0]["message"]
    history.append({k: v for k, v in answer.items() if k in ("role", "content", "tool_calls")})
    for call in answer.get("tool_calls") or ():
        history.append({"role": "tool", "tool_call_id": call["id"],
                        "content": tool_output(call["function"]["arguments"])})


def _messages_step(post: Callable[[dict[str, Any]], Any], history: list[Any]) -> None:
    content = post({"model": CLAUDE, "max_tokens": 4000, "messages": history,
                    "tools": MESSAGES_TOOLS})["content"]
    history.append({"role": "assistant", "content": content})
    results = [{"type": "tool_result", "tool_use_id": b["id"],
                "content": tool_output(orjson.dumps(b["input"]).decode())}
               for b in content if b["type"] == "tool_use"]
    if results:
        history.append({"role": "user", "content": results})


def _responses_step(model: str) -> Callable[[Callable[[dict[str, Any]], Any], list[Any]], None]:
    """A Codex-like step: every output item resent as received, each call answered."""

    def step(post: Callable[[dict[str, Any]], Any], history: list[Any]) -> None:
        output = post({"model": model, "input": history, "tools": RESPONSES_TOOLS,
                       "store": False, "include": ["reasoning.encrypted_content"]})["output"]
        history.extend(output)
        for item in output:
            if item["type"] == "function_call":
                history.append({"type": "function_call_output", "call_id": item["call_id"],
                                "output": tool_output(item["arguments"])})

    return step


FACES = {
    "chat": ("/v1/chat/completions", _chat_step, lambda: ChatEmulator("deepseek"), {}),
    "messages": ("/v1/messages", _messages_step, AnthropicEmulator,
                 {"name": "up", "provider": "anthropic", "model": "claude-opus-5-5"}),
    "responses": ("/v1/responses", _responses_step(MODEL), lambda: ChatEmulator("deepseek"),
                  {}),
    "responses-to-responses": ("/v1/responses", _responses_step("up/gpt-5.5"),
                               ResponsesEmulator,
                               {"name": "up", "provider": "openai-responses",
                                "model": "gpt-5.5"}),
}


def _poster(origin: str, path: str) -> Any:
    """POSTs a body to the gateway's ``path``, asserting a 200; returns the answer's JSON."""
    def post(body: dict[str, Any]) -> Any:
        reply = httpx.post(origin + path, content=orjson.dumps(body), timeout=60,
                           headers={"content-type": "application/json",
                                    "authorization": "Bearer none"})
        assert reply.status_code == 200, reply.text
        return reply.json()

    return post


def _conversation(face: str, tmp: Path, memos: Memos) -> tuple[list[bytes], int]:
    """The scripted conversation through a gateway using ``memos``: what its upstream received,
    and how many conversions the memo held at the end."""
    path, step, emulator, upstream = FACES[face]
    with emulator() as emu, running_gateway(emu, tmp, **upstream) as gw:
        gw.gateway.conversations.memos = memos

        post = _poster(gw.server.origin, path)
        history: list[Any] = []

        def turn(question: str | None) -> None:
            """The question asked (None: the history ends with one), answered to the end."""
            if question is not None:
                history.append({"role": "user", "content": question})
            step(post, history)
            while history[-1].get("role") != "assistant":  # a tool was called and answered
                step(post, history)

        turn("Weather in Paris?")
        turn("And in Rome?")
        turn("And in Oslo?")
        asked = next(i for i, m in enumerate(history) if m.get("content") == "And in Rome?")
        history[asked] = {"role": "user", "content": "And in Milan?"}  # an edit, mid-history
        turn("And in Berlin?")
        while history[-1].get("role") == "assistant" or history[-1].get("type") == "reasoning":
            history.pop()  # the last answer regenerated: a branch
        turn(None)
        turn("And in Madrid?")
        history[:] = [{"role": "user", "content": "Summary: the weather in five cities."}]
        turn(None)  # the client compacted its history itself
        turn("Thanks.")
        return [r.raw for r in emu.received], len(memos._walks)


@pytest.mark.parametrize("face", sorted(FACES))
def test_the_upstream_gets_the_same_bytes_with_the_memo_and_without(
        face: str, tmp_path: Path) -> None:
    remembered, held = _conversation(face, tmp_path / "on", Memos())
    computed, none = _conversation(face, tmp_path / "off", Memos(entries=0))
    assert held > 0 and none == 0  # the memo was used, and only in the first run
    assert len(remembered) == len(computed) >= 10
    for number, (a, b) in enumerate(zip(remembered, computed, strict=True)):
        assert a == b, f"request {number} differs"


def test_a_provider_reasoning_item_resent_through_the_memo_reaches_it_byte_for_byte(
        tmp_path: Path) -> None:
    """On the Responses face to its own API, each reasoning item the client resends (remembered
    by the memo from the second request on) is in the upstream's request as the client's bytes."""
    path, step, emulator, upstream = FACES["responses-to-responses"]
    with emulator() as emu, running_gateway(emu, tmp_path, **upstream) as gw:
        post = _poster(gw.server.origin, path)
        history: list[Any] = []
        for question in ("Weather in Paris?", "And in Rome?", "And in Oslo?"):
            history.append({"role": "user", "content": question})
            step(post, history)
            while history[-1].get("role") != "assistant":
                step(post, history)
        resent = [orjson.dumps(item) for item in history if item.get("type") == "reasoning"]
        history.append({"role": "user", "content": "Thanks."})
        step(post, history)
        last = emu.received[-1].raw
        held = len(gw.gateway.conversations.memos._walks)
    assert held > 0 and len(resent) >= 3
    for item in resent:
        assert item in last
