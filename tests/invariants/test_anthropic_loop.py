"""Anthropic: the first assistant turn of the current tool loop keeps its thinking.

On a model that keeps only the last assistant turn's thinking outside the loop (Sonnet 4.5, Claude
3.7; docs.anthropic.com/en/docs/build-with-claude/extended-thinking), every turn of the current tool
loop still goes back verbatim: the first one too, not only the last. Checked on the codec's encoder
and through a ``Session`` whose request is rebuilt from its stored wire forms after a resume (the
splice recomputes the loop from the stored metas), byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from thoughtline import Session, open_store, replay
from thoughtline.codecs.anthropic import CODEC
from thoughtline.codecs.anthropic.binding import PREFIX_KEY
from thoughtline.codecs.base import RequestSpec
from thoughtline.config import ProviderConfig
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    user,
)

TOOL = ToolSpec(name="f", description="a tool", parameters={"type": "object"})


def _turn(n: int, model: str, *, call: bool) -> Message:
    where = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com", model=model)
    parts: list[Any] = [Reasoning(kind="signed", text=f"thought {n}", signature=f"sig-{n}",
                                  origin=where), Text(text=f"answer {n}")]
    if call:
        parts.append(ToolCall(id=f"call-{n}", name="f", arguments='{"n":1}'))
    return Message(role="assistant", parts=tuple(parts), origin=where)


def _results(call_id: str, role: str) -> Message:
    """Tool results as a ``tool`` message, or as a ``user`` message holding only results (how an
    Anthropic-format client or an import sends them): neither opens a new loop."""
    return Message(role=role, parts=(ToolResult(call_id=call_id, content="ok"),))


def _history(model: str, role: str = "tool") -> list[Message]:
    """An earlier exchange, then a tool loop of two calls (its first turn is not the last)."""
    return [user("zero"), _turn(0, model, call=False), user("one"), _turn(1, model, call=True),
            _results("call-1", role), _turn(2, model, call=True), _results("call-2", role)]


def _signatures(body: Any) -> list[str]:
    return [b["signature"] for m in body["messages"] for b in m["content"]
            if b["type"] == "thinking"]


@pytest.mark.parametrize("role", ["tool", "user"])
@pytest.mark.parametrize(("model", "expected"), [
    ("claude-sonnet-4-5", ["sig-1", "sig-2"]),  # the loop whole, the earlier turn without
    ("claude-3-7-sonnet-20250219", ["sig-1", "sig-2"]),
    ("claude-opus-4-5", ["sig-0", "sig-1", "sig-2"]),  # keeps every turn's thinking
])
def test_the_first_turn_of_the_tool_loop_keeps_its_thinking(model: str, expected: list[str],
                                                           role: str) -> None:
    plan = replay.plan(CODEC.resolve("anthropic", None, model))
    body = CODEC.encode_request(_history(model, role), plan,
                                RequestSpec(model=model, tools=(TOOL,)))
    assert _signatures(body.body) == expected


def test_a_resumed_session_rebuilds_the_loop_from_its_stored_forms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_TEST_ANTHROPIC_KEY", "sk-ant-test")
    model = "claude-sonnet-4-5"
    provider = ProviderConfig(id="anthropic", api="anthropic", base_url="http://127.0.0.1:9",
                              model=model, key_env="TL_TEST_ANTHROPIC_KEY")
    store = open_store(None, tmp_path)
    session = Session.create(store, provider, tools=[TOOL])
    session.append(_history(model))
    live, _ = session.build_request()
    assert _signatures(live) == ["sig-1", "sig-2"]
    store.close()
    resumed = Session.resume(open_store(None, tmp_path), session.id)
    again, _ = resumed.build_request()
    assert orjson.dumps(again) == orjson.dumps(live)
    # One more plain question closes the loop: now only the last assistant turn keeps thinking.
    closed, _ = resumed.build_request([user("two")])
    assert _signatures(closed) == ["sig-2"]
    resumed.store.close()


def test_a_resumed_splice_follows_a_changed_mismatch_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fable 5.1 binds blocks to their prefix. A turn stamped under another prefix is stale: its
    # thinking stays home, unless the session lets the API drop such blocks (drop_block). A
    # resumed session that changes the setting must not reuse the splice it made before.
    monkeypatch.setenv("TL_TEST_ANTHROPIC_KEY", "sk-ant-test")
    model = "claude-fable-5-1"
    provider = ProviderConfig(id="anthropic", api="anthropic", base_url="http://127.0.0.1:9",
                              model=model, key_env="TL_TEST_ANTHROPIC_KEY")
    store = open_store(None, tmp_path)
    session = Session.create(store, provider)
    elsewhere = {"anthropic": {PREFIX_KEY: "0" * 64}}  # stamped under some other prefix
    turn = _turn(1, model, call=False)
    session.append([user("one"), Message(role="assistant", parts=turn.parts, origin=turn.origin,
                                         native=elsewhere), user("two")])
    resumed = Session.resume(store, session.id)
    assert b"sig-1" not in resumed.request_bytes(stream=True)  # stale: left out
    setting = {"anthropic": {"prefix_mismatch_behavior": "drop_block"}}
    resumed.remember(setting)
    after = resumed.request_bytes(stream=True)
    assert b"sig-1" in after  # nothing is stale under drop_block
    fresh = Session.resume(store, session.id)
    assert fresh.request_bytes(stream=True) == after
    store.close()
