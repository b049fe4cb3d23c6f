"""Interrupted streams in one process: an answer cut off is never stored or replayed as complete.

The emulator cuts a streamed answer after ``n`` chunks, either dropping the connection (abrupt)
or ending the body cleanly without ``[DONE]`` and without a finish reason (graceful), at several
points of the answer. The turn must raise a ``ThoughtlineError``; with ``keep_partial=False`` the
session is exactly as before the turn (in memory and on disk); with ``keep_partial=True`` the
partial answer is stored marked incomplete with every reasoning part incomplete. The next request
must be accepted, replay the earlier complete turns unchanged, and carry none of the opaque values
the emulator issued in the cut answer (checked in the emulator's record).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from session_support import (
    CASE_BY_ID,
    TOOLS,
    Case,
    Conversation,
    exact_json,
    provider_for,
    run,
    stored_dumps,
    tool_loop,
)

from thoughtline import Reasoning, Session, ThoughtlineError, TurnOptions, open_store
from thoughtline.messages import dumps
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport

CUT_CASES = [CASE_BY_ID[i] for i in ("deepseek", "openrouter-anthropic", "openrouter-openai",
                                     "openrouter-google", "copilot", "gemini-openai")]
# Dropping the partial is the session's business, whatever the route: a few routes suffice.
DROP_CASES = [CASE_BY_ID[i] for i in ("deepseek", "openrouter-anthropic", "gemini-openai")]
# Chunk counts to cut after: before anything, inside the reasoning, just after the opaque values
# and tool call, and past the end (abrupt: the connection drops before [DONE] arrives).
CUT_POINTS = (0, 2, 12, 14, 30)
OPAQUE = {"openrouter-anthropic", "openrouter-openai", "openrouter-google", "copilot",
          "gemini-openai"}
MODES = ("abrupt", "graceful")
#: Wire fields that carry signed or opaque reasoning (Copilot: opencode's Copilot chat model;
#: reasoning_details: openrouter.ai reasoning-tokens guide).
SIGNED_CARRIERS = frozenset({"reasoning_details", "reasoning_opaque", "reasoning_text",
                             "extra_content"})


async def _scenario(home: Path, case: Case, emu: ChatEmulator, *, graceful: bool,
                    keep_partial: bool, points: tuple[int, ...]) -> list[str]:
    """For each cut point: branch the base session, cut a turn, check, send the next turn."""
    store = open_store(None, home)
    transport = HttpTransport()
    outcomes: list[str] = []
    try:
        base = Session.create(store, provider_for(case, emu), tools=TOOLS, transport=transport)
        marker = f"[cut/{case.id}/{graceful}/{keep_partial}]"
        await tool_loop(Conversation(session=base, marker=marker), emu, 0, stream=True)
        reference = emu.received[-1].body["messages"]
        for n in points:
            outcomes.append(await _cut_once(home, base, emu, n, reference, graceful=graceful,
                                            keep_partial=keep_partial))
    finally:
        await transport.aclose()
        store.close()
    return outcomes


async def _cut_once(home: Path, base: Session, emu: ChatEmulator, n: int,
                    reference: list[Any], *, graceful: bool, keep_partial: bool) -> str:
    session = base.branch()
    before = [dumps(m) for m in session.history]
    issued_before = set(emu.issued)
    emu.cut_stream_after(n, graceful=graceful)
    start = len(emu.received)
    try:
        await session.send(f"Cut after {n}: and the weather next week?",
                           TurnOptions(stream=True, keep_partial=keep_partial))
    except ThoughtlineError:
        outcome = "interrupted"
    else:  # only a clean end after the finish chunk may count as a whole answer
        assert graceful, f"cut after {n}: an abruptly dropped stream was accepted as complete"
        outcome = "complete"
    assert [r.status for r in emu.received[start:]] == [200]
    cut_values = set(emu.issued) - issued_before

    stored = stored_dumps(home, session.id)
    assert stored == [dumps(m) for m in session.history], "memory and disk disagree"
    assert stored[:len(before)] == before
    added = [session.history[i] for i in range(len(before), len(session.history))]
    if outcome == "complete":
        assert len(added) == 2 and not added[1].incomplete
        cut_values = set()
    elif not keep_partial or not added:
        assert stored == before, f"cut after {n}: the session changed"
        outcome += "/absent"
    else:
        assert len(added) == 2 and added[0].role == "user", f"cut after {n}"
        partial = added[1]
        assert partial.role == "assistant" and partial.incomplete
        assert all(not p.complete for p in partial.parts if isinstance(p, Reasoning))
        outcome += "/partial"
        if any(v.encode() in dumps(partial) for v in cut_values):
            outcome += "+opaque"  # an opaque value had arrived before the cut

    start = len(emu.received)
    await session.send(f"Cut after {n}: never mind, thanks.", TurnOptions(stream=False))
    after = emu.received[start:]
    assert [r.status for r in after] == [200], f"cut after {n}: {after[-1].raw[-300:]!r}"
    messages = after[0].body["messages"]
    assert [exact_json(m) for m in messages[:len(reference)]] == \
        [exact_json(m) for m in reference], "an earlier complete turn was replayed differently"
    for value in cut_values:  # an interrupted turn's opaque values are never sent as signed
        assert value.encode() not in after[0].raw, f"cut after {n}: {value[:16]}… was sent"
    if outcome.startswith("interrupted/partial"):
        wire = messages[len(before) + 1]  # after the question that was cut
        assert wire["role"] == "assistant"
        assert not set(wire) & SIGNED_CARRIERS, f"cut after {n}: {sorted(wire)}"
        for call in wire.get("tool_calls") or ():
            assert "extra_content" not in call and "thought_signature" not in call["function"]
    return outcome


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CUT_CASES, ids=[c.id for c in CUT_CASES])
def test_partial_answer_is_stored_incomplete_and_never_replayed_as_signed(
        pool: Any, tmp_path: Path, case: Case, mode: str) -> None:
    emu = pool.get(case.personality, auth=case.auth, tag="cut")
    outcomes = run(_scenario(tmp_path / "home", case, emu, graceful=mode == "graceful",
                             keep_partial=True, points=CUT_POINTS))
    assert outcomes[0] == "interrupted/absent"  # nothing arrived: nothing to keep
    assert any(o.startswith("interrupted/partial") for o in outcomes), outcomes
    if mode == "abrupt":
        assert all(o.startswith("interrupted") for o in outcomes)
        if case.id in OPAQUE:  # some cut came after an opaque value arrived, so the check bites
            assert any(o.endswith("+opaque") for o in outcomes), outcomes
    else:  # cut past the end of a clean stream: it was a whole answer after all
        assert outcomes[-1] == "complete"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", DROP_CASES, ids=[c.id for c in DROP_CASES])
def test_without_keep_partial_the_session_is_exactly_as_before(pool: Any, tmp_path: Path,
                                                               case: Case, mode: str) -> None:
    emu = pool.get(case.personality, auth=case.auth, tag="cut")
    outcomes = run(_scenario(tmp_path / "home", case, emu, graceful=mode == "graceful",
                             keep_partial=False, points=(2, 10)))
    assert outcomes == ["interrupted/absent"] * 2
