"""Crash safety: a process SIGKILLed in the middle of a streamed turn loses nothing.

A fresh Python process resumes a stored session and streams a turn from a slowed-down emulator;
once the emulator has the request and some of the answer has arrived, the process is killed with
SIGKILL (no cleanup of any kind runs). Then ``state.db`` must pass ``PRAGMA integrity_check``,
every earlier turn must load byte-identical, the interrupted turn must be absent or stored marked
incomplete (never as complete, signed reasoning), and the session must take another turn whose
request replays the earlier turns exactly as before.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from session_support import (
    CASE_BY_ID,
    TOOLS,
    Case,
    Conversation,
    exact_json,
    integrity,
    provider_for,
    question,
    requests_of,
    run,
    start_worker,
    stored_dumps,
    tool_loop,
)

from thoughtline import Reasoning, Session, TurnOptions, open_store
from thoughtline.messages import loads
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport

# Must-echo text, signed reasoning_details items, and a message-level opaque blob.
KILL_CASES = [CASE_BY_ID[i] for i in ("deepseek", "openrouter-anthropic", "copilot")]
CHUNK_DELAY = 0.1  # seconds before each streamed chunk: the answer takes over a second
DELTAS_BEFORE_KILL = 2
WATCHDOG = 30.0


async def _first_loop(home: Path, case: Case, emu: ChatEmulator, marker: str) -> str:
    store = open_store(None, home)
    transport = HttpTransport()
    try:
        session = Session.create(store, provider_for(case, emu), tools=TOOLS, transport=transport)
        await tool_loop(Conversation(session=session, marker=marker), emu, 0, stream=True)
        return session.id
    finally:
        await transport.aclose()
        store.close()


def _kill_mid_stream(home: Path, session_id: str, text: str) -> list[dict[str, Any]]:
    """Start the worker, wait for a few reasoning deltas, SIGKILL it; returns the events seen."""
    proc = start_worker([{"home": str(home), "session": session_id, "text": text,
                          "stream": True, "events": True}])
    watchdog = threading.Timer(WATCHDOG, proc.kill)
    watchdog.start()
    events: list[dict[str, Any]] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append(json.loads(line))
            if "result" in events[-1]:
                break
            if sum(e.get("event") == "reasoning" for e in events) >= DELTAS_BEFORE_KILL:
                os.kill(proc.pid, signal.SIGKILL)
                break
        proc.wait(timeout=WATCHDOG)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, events)
    return events


async def _next_turn(home: Path, session_id: str, text: str) -> tuple[Session, Any]:
    store = open_store(None, home)
    transport = HttpTransport()
    try:
        session = Session.resume(store, session_id, transport=transport)
        done = await session.send(text, TurnOptions(stream=True))
        return session, done
    finally:
        await transport.aclose()
        store.close()


@pytest.mark.parametrize("case", KILL_CASES, ids=[c.id for c in KILL_CASES])
def test_sigkill_mid_stream_leaves_a_sound_resumable_session(pool: Any, tmp_path: Path,
                                                             case: Case) -> None:
    emu = pool.get(case.personality, auth=case.auth, tag="kill")
    home = tmp_path / "home"
    marker = f"[kill/{case.id}]"
    session_id = run(_first_loop(home, case, emu, marker))
    before = stored_dumps(home, session_id)
    assert len(before) == 4
    last_request = requests_of(emu, marker)[-1]
    count = len(requests_of(emu, marker))

    emu.chunk_delay = CHUNK_DELAY
    try:
        events = _kill_mid_stream(home, session_id, question(marker, 1))
    finally:
        emu.chunk_delay = 0.0
    assert sum(e.get("event") == "reasoning" for e in events) == DELTAS_BEFORE_KILL
    assert not any("result" in e for e in events), "the turn finished before the kill"
    killed = requests_of(emu, marker)[count:]
    assert [r.status for r in killed] == [200]  # the provider had the request and was answering

    assert integrity(home) == [("ok",)]
    after = stored_dumps(home, session_id)
    assert after[:len(before)] == before, "an earlier turn changed"
    interrupted = after[len(before):]
    assert len(interrupted) in (0, 2)
    if interrupted:  # stored only as an incomplete partial answer, never as complete reasoning
        partial = loads(interrupted[1])
        assert partial.role == "assistant" and partial.incomplete
        assert all(not p.complete for p in partial.parts if isinstance(p, Reasoning))

    session, done = run(_next_turn(home, session_id, question(marker, 2)))
    assert session.problems == ()
    assert done.message.tool_calls
    resumed = requests_of(emu, marker)[count + 1:]
    assert [r.status for r in resumed] == [200]
    old, new = last_request.body["messages"], resumed[0].body["messages"]
    # The earlier turns replay exactly as the killed process's predecessor sent them.
    assert [exact_json(m) for m in new[:len(old)]] == [exact_json(m) for m in old]
    assert stored_dumps(home, session_id)[:len(after)] == after
