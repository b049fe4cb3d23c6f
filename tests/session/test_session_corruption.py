"""Corrupt-row detection at session level: a damaged payload is reported when the canonical
history is decoded, and never sent.

After one tool loop, a stored opaque value (signature, encrypted reasoning, Copilot blob, Gemini
thought signature) is damaged directly in ``state.db`` — one byte changed, truncated, or the row
deleted. A resume reads only the verified wire forms; decoding the canonical history (here:
reading ``session.history``) verifies every row and must report the damage in
``session.problems``; the next request must then carry neither the original nor the damaged bytes
(checked in the emulator's record) and must still succeed where the route can do without the
value. A damaged message skeleton makes that decode fail loudly, naming the way out (branch before
it), and that way out works. (What a resume sends before anything is decoded — the intact wire
forms — is in ``test_stored_wire_forms``.)
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
    provider_for,
    raw_db,
    run,
    tool_loop,
)

from thoughtline import (
    CorruptPayload,
    ProviderError,
    Session,
    StoreError,
    TurnOptions,
    open_store,
)
from thoughtline.messages import dumps
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport

# (case, damage, the route can do without the value)
SCENARIOS = [
    ("openrouter-anthropic", "flip", True),
    ("openrouter-anthropic", "truncate", True),
    ("openrouter-anthropic", "delete", True),
    ("openrouter-openai", "flip", True),
    ("copilot", "flip", True),
    ("copilot", "truncate", True),
    ("gemini-openai", "flip", True),  # a call without its signature gets Gemini's documented dummy
    ("openrouter-google", "flip", False),  # OpenRouter's Gemini requires reasoning_details
]


async def _first_loop(home: Path, case: Case, emu: ChatEmulator, marker: str,
                      ) -> tuple[str, frozenset[str], list[bytes]]:
    store = open_store(None, home)
    transport = HttpTransport()
    try:
        session = Session.create(store, provider_for(case, emu), tools=TOOLS, transport=transport)
        conversation = Conversation(session=session, marker=marker)
        await tool_loop(conversation, emu, 0, stream=False)
        return session.id, conversation.turns[0].issued, [dumps(m) for m in session.history]
    finally:
        await transport.aclose()
        store.close()


def _damage(home: Path, value: str, how: str) -> tuple[str, bytes]:
    """Damage the first payload row holding ``value``; returns (its digest, the damaged value)."""
    needle = value.encode()
    conn = raw_db(home)
    try:
        rows = sorted((d, bytes(b)) for d, b in conn.execute("SELECT digest, data FROM payloads")
                      if needle in bytes(b))
        assert rows, "the opaque value is not stored as a payload"
        digest, data = rows[0]
        at = data.index(needle) + len(needle) // 2
        if how == "flip":
            swapped = b"B" if data[at:at + 1] == b"A" else b"A"
            damaged = data[:at] + swapped + data[at + 1:]
            bad_value = needle[:len(needle) // 2] + swapped + needle[len(needle) // 2 + 1:]
        elif how == "truncate":
            damaged = data[:at]
            bad_value = needle[:len(needle) // 2]
        else:
            damaged = b""
            bad_value = needle
        if how == "delete":
            conn.execute("DELETE FROM payloads WHERE digest = ?", (digest,))
        else:
            conn.execute("UPDATE payloads SET data = ? WHERE digest = ?", (damaged, digest))
        return digest, bad_value
    finally:
        conn.close()


async def _resume_and_send(home: Path, session_id: str, text: str,
                           ) -> tuple[Session, list[bytes], BaseException | None]:
    store = open_store(None, home)
    transport = HttpTransport()
    try:
        session = Session.resume(store, session_id, transport=transport)
        loaded = [dumps(m) for m in session.history]
        try:
            await session.send(text, TurnOptions(stream=False))
        except ProviderError as exc:
            return session, loaded, exc
        return session, loaded, None
    finally:
        await transport.aclose()
        store.close()


@pytest.mark.parametrize(("case_id", "how", "allowed"), SCENARIOS,
                         ids=[f"{c}-{h}" for c, h, _ in SCENARIOS])
def test_damaged_payload_is_reported_and_never_sent(pool: Any, tmp_path: Path, case_id: str,
                                                    how: str, allowed: bool) -> None:
    case = CASE_BY_ID[case_id]
    emu = pool.get(case.personality, auth=case.auth)
    home = tmp_path / "home"
    marker = f"[corrupt/{case.id}/{how}]"
    session_id, issued, history = run(_first_loop(home, case, emu, marker))
    # The turn's value as stored (Copilot also issues a blob it supersedes within the same answer).
    (value,) = [v for v in issued if v.encode() in history[1]]
    digest, bad_value = _damage(home, value, how)

    start = len(emu.received)
    session, loaded, error = run(_resume_and_send(home, session_id, f"{marker} And then?"))
    assert [p.digest for p in session.problems] == [digest]
    problem = session.problems[0]
    assert problem.seq == 1  # the first assistant turn
    assert ("missing" if how == "delete" else "corrupt") in problem.detail
    assert len(loaded) == len(history)
    assert all(value.encode() not in m for m in loaded)  # the damaged part was not loaded

    sent = emu.received[start:]
    assert len(sent) == 1
    assert value.encode() not in sent[0].raw
    assert bad_value not in sent[0].raw
    if allowed:
        assert error is None and sent[0].status == 200, sent[0].raw[-300:]
    else:
        assert isinstance(error, ProviderError) and error.status == 400
        assert "reasoning details" in str(error)
    # The other turn's opaque values are intact and still replayed.
    later_values = [v for v in emu.issued if v.encode() in history[3]]
    assert all(v.encode() in sent[0].raw for v in later_values)


def test_damaged_skeleton_fails_loudly_and_branching_before_it_recovers(
        pool: Any, tmp_path: Path) -> None:
    case = CASE_BY_ID["openrouter-anthropic"]
    emu = pool.get(case.personality, auth=case.auth)
    home = tmp_path / "home"
    marker = "[corrupt/skeleton]"
    session_id, _, history = run(_first_loop(home, case, emu, marker))
    conn = raw_db(home)
    try:
        (message_id,) = conn.execute("SELECT message_id FROM session_messages WHERE session_id = ? "
                                     "AND seq = 3", (session_id,)).fetchone()
        (skeleton,) = conn.execute("SELECT skeleton FROM messages WHERE digest = ?",
                                   (message_id,)).fetchone()
        damaged = bytes(skeleton).replace(b"sunny", b"rainy", 1)
        assert damaged != bytes(skeleton)
        conn.execute("UPDATE messages SET skeleton = ? WHERE digest = ?", (damaged, message_id))
    finally:
        conn.close()

    store = open_store(None, home)
    try:
        resumed = Session.resume(store, session_id)  # reads the verified wire forms only
        with pytest.raises(CorruptPayload, match="branch") as caught:
            resumed.history  # noqa: B018 - decoding the canonical history verifies it
        assert isinstance(caught.value, StoreError)
        assert "position 3" in str(caught.value)
        branch = store.branch(session_id, at=3, title="before the damage")
    finally:
        store.close()

    start = len(emu.received)
    session, loaded, error = run(_resume_and_send(home, branch.id, f"{marker} Once more?"))
    assert error is None and session.problems == ()
    assert loaded == history[:3]
    sent = emu.received[start:]
    assert [r.status for r in sent] == [200]
    assert b"rainy" not in sent[0].raw
