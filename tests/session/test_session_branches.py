"""Branch replay: a branch carries every inherited turn's reasoning byte-identical, copying nothing.

A parent session runs the three-turn tool loop; branches are taken at several points (inside a
tool loop, after an answer, at the end, and a branch of a branch). Each branch's next request must
replay the inherited turns exactly as the parent sent them (checked in the emulator's record, on
routes with signed and opaque values), branching must add no message rows, and the parent must be
unaffected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from session_support import (
    CASE_BY_ID,
    Case,
    exact_json,
    provider_for,
    raw_db,
    run,
    stored_dumps,
    three_turn_conversation,
)

from thoughtline import Session, ToolResult, TurnOptions, open_store
from thoughtline.messages import dumps
from thoughtline.testing import ChatEmulator, Received
from thoughtline.transport import HttpTransport

BRANCH_CASES = [CASE_BY_ID[i] for i in ("deepseek", "openrouter-anthropic", "openrouter-google",
                                        "gemini-openai", "copilot")]
BRANCH_POINTS = (2, 4, 8, None)  # in the first tool loop, after answers 1 and 2, everything


def _count(home: Path, sql: str, *params: Any) -> int:
    conn = raw_db(home)
    try:
        return int(conn.execute(sql, params).fetchone()[0])
    finally:
        conn.close()


def _own_rows(home: Path, session_id: str) -> int:
    return _count(home, "SELECT COUNT(*) FROM session_messages WHERE session_id = ?", session_id)


def _content_rows(home: Path) -> tuple[int, int]:
    return (_count(home, "SELECT COUNT(*) FROM messages"),
            _count(home, "SELECT COUNT(*) FROM payloads"))


async def _send_one(session: Session, emu: ChatEmulator, turn: Any) -> Received:
    start = len(emu.received)
    await session.send(turn, TurnOptions(stream=True))
    sent = emu.received[start:]
    assert [r.status for r in sent] == [200], sent[-1].raw[-300:]
    return sent[0]


def _same_prefix(request: Received, reference: list[Any], size: int) -> None:
    messages = request.body["messages"]
    assert len(reference) >= size and len(messages) > size
    assert [exact_json(m) for m in messages[:size]] == [exact_json(m) for m in reference[:size]]


async def _scenario(home: Path, case: Case, emu: ChatEmulator) -> None:
    store = open_store(None, home)
    transport = HttpTransport()
    try:
        conversation = await three_turn_conversation(
            store, provider_for(case, emu), emu, f"[branch/{case.id}]", stream=True,
            transport=transport)
        parent = conversation.session
        reference = emu.received[-1].body["messages"]  # 11 messages: all but the last answer
        parent_before = stored_dumps(home, parent.id)
        assert len(parent_before) == 12
        content = _content_rows(home)

        branches: dict[int | None, Session] = {}
        for at in BRANCH_POINTS:
            branch = parent.branch(at=at, title=f"at {at}")
            assert _own_rows(home, branch.id) == 0, "branching copied message rows"
            assert _content_rows(home) == content
            size = 12 if at is None else at
            assert stored_dumps(home, branch.id) == parent_before[:size]
            assert [dumps(m) for m in branch.history] == parent_before[:size]
            branches[at] = branch

        # At 2 the branch continues the first tool loop with a different tool result.
        call = parent.history[1].tool_calls[0]
        request = await _send_one(branches[2], emu, [ToolResult(call_id=call.id,
                                                                content="rainy (branch)")])
        _same_prefix(request, reference, 2)
        for at in (4, 8):
            request = await _send_one(branches[at], emu, f"Branch at {at}: and in the evening?")
            _same_prefix(request, reference, at)
        whole = await _send_one(branches[None], emu, "Branch at the end: and tomorrow?")
        _same_prefix(whole, reference, 11)
        for at, branch in branches.items():
            assert _own_rows(home, branch.id) == 2, f"branch at {at} stored more than its turn"

        # A branch of a branch inherits through both, still without copies.
        nested = branches[8].branch()
        assert _own_rows(home, nested.id) == 0
        nested_request = await _send_one(nested, emu, "Nested branch: and the weekend?")
        _same_prefix(nested_request, reference, 8)
        inherited = stored_dumps(home, branches[8].id)
        assert stored_dumps(home, nested.id)[:10] == inherited

        # The parent is unaffected and its next request replays what it always did.
        assert stored_dumps(home, parent.id) == parent_before
        request = await _send_one(parent, emu, "Parent again: and next month?")
        _same_prefix(request, reference, 11)
        assert [exact_json(m) for m in request.body["messages"][:12]] == \
            [exact_json(m) for m in whole.body["messages"][:12]]
        for own in (b"Branch at", b"Nested branch", b"rainy (branch)"):
            assert own not in request.raw, "a branch's turn reached the parent"

        # A resumed branch (another store object, as after a restart) replays the same bytes.
        reopened = open_store(None, home)
        try:
            resumed = Session.resume(reopened, branches[4].id, transport=transport)
            assert resumed.problems == ()
            again = await _send_one(resumed, emu, "Branch at 4 resumed: and at night?")
            _same_prefix(again, reference, 4)
        finally:
            reopened.close()
    finally:
        await transport.aclose()
        store.close()


@pytest.mark.parametrize("case", BRANCH_CASES, ids=[c.id for c in BRANCH_CASES])
def test_branches_replay_inherited_turns_byte_identical(pool: Any, tmp_path: Path,
                                                        case: Case) -> None:
    emu = pool.get(case.personality, auth=case.auth)
    run(_scenario(tmp_path / "home", case, emu))


def test_branch_point_out_of_range_is_a_usage_error(pool: Any, tmp_path: Path) -> None:
    from thoughtline import UsageError

    case = CASE_BY_ID["deepseek"]
    store = open_store(None, tmp_path / "home")
    try:
        session = Session.create(store, provider_for(case, pool.get(case.personality)))
        with pytest.raises(UsageError, match="cannot branch"):
            session.branch(at=3)
    finally:
        store.close()
