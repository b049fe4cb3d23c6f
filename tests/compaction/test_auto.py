"""Automatic compaction: a 200-turn reasoning-heavy tool-calling session on a must-echo route,
and a property over random reasoning-heavy sessions that preflight and tail walk agree and that
compaction runs at most once per threshold crossing."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from compaction_support import TOOLS, accepted, assistant_wire, deepseek, run
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline import Session, ToolResult, TurnOptions, config, open_store
from thoughtline.compaction import AutoCompaction, CompactionSettings, session_estimator
from thoughtline.estimate import body_tokens
from thoughtline.events import Done, Event
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, Usage, user
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator

WINDOW = 9000
SUMMARY_MARK = "Summarize this conversation"


def _is_summary(record: object) -> bool:
    body = getattr(record, "body", None)
    return isinstance(body, dict) and SUMMARY_MARK in str(body["messages"][-1].get("content"))


def test_a_200_turn_session_compacts_automatically_and_keeps_its_line_of_thought(
        emu: ChatEmulator, store: Store, home: Path, deepseek_key: str) -> None:
    auto = AutoCompaction(CompactionSettings(windows={"deepseek": WINDOW}, keep=6))
    compacted_on: list[int] = []
    checked = [0]

    async def send(session: Session, turn: str | list[ToolResult], number: int) -> Done:
        turns = [r for r in accepted(emu) if not _is_summary(r)]
        before = assistant_wire(turns[-1].body) if turns else {}
        count = auto.compactions
        done = await auto.send(session, turn, TurnOptions(stream=True))
        if auto.compactions > count:
            compacted_on.append(number)
            after = assistant_wire(accepted(emu)[-1].body)
            kept = set(after) & set(before)
            assert kept and len(set(after) - set(before)) <= 1, number
            for key in kept:  # every retained turn's reasoning went back byte for byte
                assert after[key] == before[key], (number, key)
            checked[0] += len(kept)
        return done

    async def scenario() -> Session:
        session = Session.create(store, deepseek(emu), tools=TOOLS, system="Think, then act.")
        for i in range(100):
            done = await send(session, f"Question {i}: look up fact number {i}, please.", 2 * i)
            results = [ToolResult(call_id=c.id, content=f"fact {i}: " + "detail " * 30)
                       for c in done.message.tool_calls]
            assert results, f"exchange {i}: the emulator was expected to call the tool"
            await send(session, results, 2 * i + 1)
        await session.aclose()
        return session

    start = len(emu.received)
    session = run(scenario())
    records = [r for r in emu.received[start:] if r.path.endswith("/chat/completions")]
    assert all(r.status == 200 for r in records)  # the must-echo route accepted every request
    turns = [r for r in records if not _is_summary(r)]
    assert len(turns) == 200 and len(records) == 200 + len(compacted_on)
    assert len(compacted_on) >= 3 and checked[0] > 0
    assert all(b - a > 1 for a, b in itertools.pairwise(compacted_on))
    assert max(body_tokens(r.body) for r in turns) <= WINDOW  # never sent over the window
    generations = store.list_generations(session.id)
    assert len(generations) == len(compacted_on) + 1

    # the public contract, through the real entry point
    proc = subprocess.run([sys.executable, "-m", "thoughtline.cli.main", "sessions", "compact",
                           session.id, "--keep", "4", "--json"], capture_output=True, text=True,
                          timeout=120, check=False,
                          env={**os.environ, "THOUGHTLINE_HOME": str(home),
                               "DEEPSEEK_API_KEY": deepseek_key})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    reported = json.loads(lines[0])
    assert set(reported) == {"session", "compacted", "turns_before", "turns_after",
                             "tokens_before", "tokens_after"}
    assert reported["session"] == session.id and reported["compacted"] is True
    assert reported["turns_before"] == len(session.history)
    assert reported["turns_after"] == len(store.load_history(session.id).messages)
    assert reported["tokens_after"] < reported["tokens_before"]


# --- property: random reasoning-heavy sessions, no network --------------------------------------

ORIGIN = Origin(api="openai-chat", provider="openrouter", host="openrouter.ai",
                model="openai/gpt-5")


def _reply(draw: st.DrawFn, index: int, calls: bool) -> Message:
    size = draw(st.integers(0, 1200))
    thought = draw(st.sampled_from(["Let me think. ", "考虑一下。", "Hmm… "])) * (size // 12 + 1)
    parts: list[object] = [Reasoning(kind="text", text=thought, origin=ORIGIN)]
    if draw(st.booleans()):  # an encrypted item: opaque, replayed verbatim on this route
        item = {"type": "reasoning.encrypted", "data": "Q" * draw(st.integers(16, 3000)),
                "format": "openai-responses-v1", "index": 0}
        parts.append(Reasoning(kind="encrypted", data=item["data"], origin=ORIGIN,
                               native={"openrouter": item}))
    if calls:
        parts.append(ToolCall(id=f"call-{index}", name="lookup", arguments='{"q": 1}'))
    else:
        parts.append(Text(text=f"answer {index}"))
    return Message(role="assistant", origin=ORIGIN, parts=tuple(parts))  # type: ignore[arg-type]


async def _fixed_summary(prompt: Sequence[Message]) -> tuple[str, str | None]:
    return "the story so far: " + "s" * 200, "stop"


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_preflight_and_tail_walk_agree_and_compaction_runs_once_per_crossing(
        data: st.DataObject) -> None:
    window = data.draw(st.integers(3000, 12000), label="window")
    keep = data.draw(st.integers(0, 6), label="keep")
    auto = AutoCompaction(CompactionSettings(windows={"openrouter": window}, keep=keep,
                                             threshold=data.draw(st.sampled_from([0.6, 0.8]))),
                          summarize=_fixed_summary)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(None, Path(tmp))
        try:
            run(_drive(data, store, auto))
        finally:
            store.close()


async def _drive(data: st.DataObject, store: Store, auto: AutoCompaction) -> None:
    session = Session.create(store, config.provider("openrouter", model="openai/gpt-5"),
                             tools=TOOLS)
    limit = auto.limit(session)
    assert limit is not None
    over_run, previous = 0, False
    for index in range(data.draw(st.integers(5, 40), label="turns")):
        pending = _pending(session, index)
        preflight = session_estimator(session).price([*session.history, pending])
        count = auto.compactions
        seen: list[int] = []
        await _consume(auto.around(session, pending, _fake_run(data, session, pending, index,
                                                               seen)))
        compacted = auto.compactions > count
        over_run = over_run + compacted if preflight > limit else 0
        assert over_run <= 1  # at most one compaction per threshold crossing
        assert not (compacted and previous)  # never twice in a row
        if compacted:
            assert auto.last is not None
            assert seen == [auto.last.tokens_after]  # the walk priced what preflight now sees
            assert auto.last.tokens_after < auto.last.tokens_before
        previous = compacted


def _pending(session: Session, index: int) -> Message:
    last = session.history[-1] if session.history else None
    if last is not None and last.tool_calls:
        return Message(role="tool", parts=tuple(ToolResult(call_id=c.id, content="r" * 300)
                                                for c in last.tool_calls))
    return user(f"turn {index}: " + "q" * 200)


def _fake_run(data: st.DataObject, session: Session, pending: Message, index: int,
              seen: list[int]) -> Callable[[], AsyncIterator[Event]]:
    """What the turn engine would do, without a network: price the request it would send now
    (after any compaction), store the turn, report usage."""
    async def events() -> AsyncIterator[Event]:
        seen.append(session_estimator(session).price([*session.history, pending]))
        message = _reply(data.draw, index, data.draw(st.booleans(), label="calls"))
        session.store.append(session.id, [pending, message])
        session.reload()
        reported = int(seen[0] * data.draw(st.floats(0.6, 1.4), label="usage"))
        yield Done(message=message, usage=Usage(input_tokens=reported), finish_reason="stop")
    return events


async def _consume(events: AsyncIterator[Event]) -> None:
    async for _ in events:
        pass

