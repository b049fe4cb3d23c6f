"""Issue 17 on the Anthropic emulator: a session resumed in a new store handle sends a request
spliced from its stored wire forms (nothing decoded), the emulator — which checks every signed
block against its block and prefix — accepts the next turn, every stored block goes back byte
for byte, and a rejection of a spliced request is repaired with the usual one retry.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from anthropic_support import (
    ROUTE,
    assistant_contents,
    collect,
    issued,
    new_session,
    notices,
    run,
    signatures,
    tool_conversation,
)

from thoughtline import Done, Session, open_store
from thoughtline.codecs.anthropic import part_fingerprint
from thoughtline.messages import Message, Reasoning, ToolResult, tool_results, user
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

PENDING = user("And tomorrow?")
CASES = [("direct", "claude-opus-4-5"), ("direct", "claude-sonnet-4-5"),
         ("direct", "claude-fable-5-1"), ("vertex", "claude-sonnet-4-5"),
         ("bedrock", "claude-opus-4-5")]


def _stored(emu: AnthropicEmulator, home: Path, route: str, model: str) -> str:
    session = new_session(home, ROUTE[route].provider(emu, model), system="Answer briefly.")
    run(tool_conversation(session))
    return session.id


def _results(done: Done) -> list[Message]:
    """The pending turn answering the answer's tool calls (an unanswered call is answered from
    the decoded turns), if it made any."""
    calls = done.message.tool_calls
    return [tool_results(ToolResult(call_id=c.id, content="rain") for c in calls)] if calls else []


@pytest.mark.parametrize(("route", "model"), CASES, ids=[f"{r}-{m}" for r, m in CASES])
def test_a_resumed_session_splices_its_request_and_the_next_turn_is_accepted(
        emu: AnthropicEmulator, tmp_path: Path, route: str, model: str) -> None:
    answers = len(emu.answers)
    session_id = _stored(emu, tmp_path, route, model)
    resumed = Session.resume(open_store(None, tmp_path), session_id)
    body = resumed.request_bytes([PENDING], stream=True)
    assert resumed._history.decoded is False  # spliced from the stored forms
    ordinary = Session.resume(open_store(None, tmp_path), session_id)
    assert len(ordinary.history) == 9  # decoded: the ordinary load
    assert ordinary.request_bytes([PENDING], stream=True) == body
    mark = len(emu.received)
    done, _ = run(collect(resumed, PENDING.text))
    [request] = emu.received[mark:]
    assert request.status == 200 and done.message.parts
    assert resumed._history.decoded is False  # the answer's forms came from the stored ones
    assert request.raw == body
    contents, made = assistant_contents(request), issued(emu, answers, 4)
    if model == "claude-sonnet-4-5":  # only the last assistant turn keeps its thinking
        assert contents[3] == made[3]
        assert contents[:3] == [orjson.dumps([b for b in orjson.loads(c) if b["type"] not in (
            "thinking", "redacted_thinking")]) for c in made[:3]]
    else:
        assert contents == made  # every block, byte for byte
    # And the resume after that splices too, the new turn's form included.
    again = Session.resume(open_store(None, tmp_path), session_id)
    again.request_bytes(_results(done), stream=True)
    assert again._history.decoded is False and again.turns == 11


def test_a_rejected_block_of_a_spliced_request_is_repaired_with_one_retry(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    session_id = _stored(emu, tmp_path, "direct", "claude-opus-4-5")
    resumed = Session.resume(open_store(None, tmp_path), session_id)
    spliced = resumed.request_bytes([user("One more question")], stream=True)
    assert resumed._history.decoded is False
    first = orjson.loads(spliced)["messages"][1]["content"][0]
    assert first["type"] in ("thinking", "redacted_thinking")
    emu.fail_next(400, {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "messages.1.content.0: Invalid `signature` in `thinking` block"}})
    mark = len(emu.received)
    done, events = run(collect(resumed, "One more question"))
    rejected, retry = emu.received[mark:]
    assert (rejected.status, retry.status) == (400, 200)  # exactly one retry
    assert rejected.raw == spliced  # the spliced bytes were what the API refused
    value = first.get("signature") or first.get("data")
    assert value in signatures(rejected) and value not in signatures(retry)
    assert len(signatures(retry)) == len(signatures(rejected)) - 1  # everything else replays
    assert any("messages.1.content.0" in n for n in notices(events))
    part = next(p for p in Session.resume(open_store(None, tmp_path), session_id).history[2].parts
                if isinstance(p, Reasoning))
    assert part_fingerprint(part) in resumed.fingerprints
    # The lesson is a new plan: its forms were stored with the answer, and splice next time.
    later = Session.resume(open_store(None, tmp_path), session_id)
    body = later.request_bytes(_results(done), stream=True)
    assert later._history.decoded is False and value.encode() not in body
