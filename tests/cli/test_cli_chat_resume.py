"""``chat -r/--resume`` and ``-c/--continue`` in a new process replay the earlier reasoning.

Each resumed run is a fresh ``thoughtline`` process. The emulator's own record is the witness:
every assistant turn a resumed request carries must hold, byte for byte, the ``reasoning_content``
the emulator issued for it (recomputed here from the emulator's script), and the whole earlier
history must reach the wire unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_support import Cli, assistant_messages

from thoughtline.testing import ChatEmulator, Received
from thoughtline.testing.script import plan_turn

FIRST = "tell me about resumes"


def canonical(messages: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in messages]


def assert_faithful_replay(previous: Received, current: Received) -> None:
    """``current`` continues ``previous``: the same history, then the answer it was given."""
    before, now = previous.body["messages"], current.body["messages"]
    assert canonical(now[: len(before)]) == canonical(before)  # byte-identical history
    answered = now[len(before)]
    issued = plan_turn(previous.body)
    assert answered["role"] == "assistant"
    assert answered["reasoning_content"] == issued.reasoning
    assert answered["reasoning_content"].encode() == issued.reasoning.encode()
    assert answered["content"] == issued.content
    # ... and every older assistant turn still carries what was issued for it.
    for index, message in enumerate(now):
        if message["role"] == "assistant":
            said = plan_turn({"messages": now[:index]})
            assert message["reasoning_content"] == said.reasoning, index


class Conversation:
    """Session A (titled ``FIRST``) in one state home; requests are read off the emulator."""

    def __init__(self, cli: Cli, emu: ChatEmulator) -> None:
        self.cli, self.emu = cli, emu
        mark = len(emu.received)
        first = cli.json("chat", "--provider", "deepseek", "--base-url", emu.base_url,
                         "-p", FIRST, "--json")
        self.id: str = first["session"]
        [self.last] = emu.received[mark:]
        assert first["reply"]["reasoning"] == plan_turn(self.last.body).reasoning

    def resume(self, *args: str, json_out: bool = True) -> tuple[Any, Received]:
        mark = len(self.emu.received)
        if json_out:
            out: Any = self.cli.json("chat", *args, "--json")
        else:
            out = self.cli.ok("chat", *args).stdout
        [request] = self.emu.received[mark:]
        assert request.status == 200
        return out, request


@pytest.fixture(scope="module")
def convo(module_home: Any, emu: ChatEmulator) -> Conversation:
    return Conversation(Cli(module_home), emu)


def test_resume_by_full_id_replays_the_reasoning(convo: Conversation) -> None:
    stdout, request = convo.resume("-r", convo.id, "-p", "again", "--show-reasoning",
                                    json_out=False)
    assert_faithful_replay(convo.last, request)
    assert len(assistant_messages(request.body)) == 1
    said = plan_turn(request.body)
    assert said.reasoning in stdout and said.content in stdout
    convo.last = request


def test_resume_by_unique_prefix(convo: Conversation) -> None:
    out, request = convo.resume("-r", convo.id[:8], "-p", "by prefix")
    assert out["session"] == convo.id
    assert_faithful_replay(convo.last, request)
    assert len(assistant_messages(request.body)) == 2
    convo.last = request


def test_resume_by_title(convo: Conversation) -> None:
    out, request = convo.resume("--resume", FIRST, "-p", "by title")
    assert out["session"] == convo.id
    assert_faithful_replay(convo.last, request)
    convo.last = request
    turns = convo.cli.show(convo.id)["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"] * 4


def test_resume_alone_and_continue_take_the_latest(convo: Conversation) -> None:
    cli, emu = convo.cli, convo.emu
    mark = len(emu.received)
    other = cli.json("chat", "--provider", "deepseek", "--base-url", emu.base_url,
                     "-p", "a newer session", "--json")["session"]
    [newest] = emu.received[mark:]
    assert other != convo.id
    out, request = convo.resume("-r", "-p", "latest, by -r alone")
    assert out["session"] == other
    assert_faithful_replay(newest, request)
    out, again = convo.resume("-c", "-p", "latest, by -c")
    assert out["session"] == other
    assert_faithful_replay(request, again)
    assert FIRST not in json.dumps(again.body)  # session A's history stays in session A
    # -r with a session continues that one again, even though it is not the latest.
    out, back = convo.resume("-r", convo.id, "-p", "back to A")
    assert out["session"] == convo.id
    assert_faithful_replay(convo.last, back)
