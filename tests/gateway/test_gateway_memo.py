"""Issue 45 item 1: a resent conversation's items are converted and digested once (``memo``).

The memo is only an optimization: the same conversation through a gateway with it and through
one with it off must send the upstream the same bytes, request by request — growing, with an
edit in the middle of the history, a regenerated answer (a branch) and a client's own
compaction (its history replaced by a summary) — per face.
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

from thoughtline.gateway.memo import Memos
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

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


FACES = {
    "chat": ("/v1/chat/completions", _chat_step, lambda: ChatEmulator("deepseek"), {}),
    "messages": ("/v1/messages", _messages_step, AnthropicEmulator,
                 {"name": "up", "provider": "anthropic", "model": "claude-opus-5-5"}),
}


def _conversation(face: str, tmp: Path, memos: Memos) -> tuple[list[bytes], int]:
    """The scripted conversation through a gateway using ``memos``: what its upstream received,
    and how many conversions the memo held at the end."""
    path, step, emulator, upstream = FACES[face]
    with emulator() as emu, running_gateway(emu, tmp, **upstream) as gw:
        gw.gateway.conversations.memos = memos

        def post(body: dict[str, Any]) -> Any:
            reply = httpx.post(gw.server.origin + path, content=orjson.dumps(body), timeout=60,
                               headers={"content-type": "application/json",
                                        "authorization": "Bearer none"})
            assert reply.status_code == 200, reply.text
            return reply.json()

        history: list[Any] = []

        def turn(question: str | None) -> None:
            """The question asked (None: the history ends with one), answered to the end."""
            if question is not None:
                history.append({"role": "user", "content": question})
            step(post, history)
            while history[-1]["role"] != "assistant":  # a tool was called and answered
                step(post, history)

        turn("Weather in Paris?")
        turn("And in Rome?")
        turn("And in Oslo?")
        asked = next(i for i, m in enumerate(history) if m["content"] == "And in Rome?")
        history[asked] = {"role": "user", "content": "And in Milan?"}  # an edit, mid-history
        turn("And in Berlin?")
        while history[-1]["role"] == "assistant":  # the last answer regenerated: a branch
            history.pop()
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
