"""A compaction stopped by Ctrl-C, killed outright, or failing inside its store write leaves the
previous generation exactly as it was (and nothing half-written)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from compaction_support import TOOLS, deepseek, run, tool_loop

from thoughtline import Session, open_store
from thoughtline.compaction import CompactionResult, compress, is_checkpoint
from thoughtline.errors import StoreError
from thoughtline.messages import dumps, message_from_json
from thoughtline.persist import Unsaved
from thoughtline.store import history as store_history
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator

SUMMARY_MARK = "Summarize this conversation"


@pytest.fixture(scope="module")
def slow() -> Iterator[ChatEmulator]:
    """Its own instance: streamed chunks are paced, so a summary is still streaming when the
    test stops the process."""
    with ChatEmulator("deepseek") as emulator:
        yield emulator


def _session(store: Store, emu: ChatEmulator) -> tuple[str, list[bytes]]:
    async def scenario() -> Session:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        for i in range(4):
            await tool_loop(session, i)
        await session.aclose()
        return session

    session = run(scenario())
    return session.id, [dumps(m) for m in session.history]


def _summary_started(emu: ChatEmulator, start: int) -> bool:
    return any(isinstance(r.body, dict) and SUMMARY_MARK in str(r.body["messages"][-1]
                                                                 .get("content"))
               for r in emu.received[start:])


def _unchanged(home: Path, session_id: str, stored: list[bytes]) -> None:
    conn = sqlite3.connect(home / "state.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT COUNT(*) FROM session_generations").fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM generation_messages").fetchone() == (0,)
    finally:
        conn.close()
    reopened = open_store(None, home)
    try:
        loaded = reopened.load_history(session_id)
        assert not loaded.problems
        assert [dumps(m.message) for m in loaded.messages] == stored
    finally:
        reopened.close()


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_stopping_a_compaction_mid_summary_keeps_the_previous_generation(
        slow: ChatEmulator, home: Path, deepseek_key: str, how: signal.Signals) -> None:
    store = open_store(None, home)
    try:
        session_id, stored = _session(store, slow)
    finally:
        store.close()
    slow.chunk_delay = 0.2
    start = len(slow.received)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli.main", "sessions", "compact", session_id,
             "--keep", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "THOUGHTLINE_HOME": str(home), "DEEPSEEK_API_KEY": deepseek_key})
        try:
            _wait_for(lambda: _summary_started(slow, start) or proc.poll() is not None)
            assert proc.poll() is None, proc.communicate()
            proc.send_signal(how)
            _out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    finally:
        slow.chunk_delay = 0.0
    if how == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "interrupted — the session is unchanged" in err
        assert "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL
    _unchanged(home, session_id, stored)


def _wait_for(condition: object, attempts: int = 600) -> None:
    """Poll until ``condition()`` holds (a bounded wait for an event, not a timing check)."""
    import time

    for _ in range(attempts):
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("the awaited event never happened")


def test_a_failure_inside_the_store_write_rolls_everything_back_and_rescues_the_compaction(
        emu: ChatEmulator, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(None, home)
    try:
        session_id, stored = _session(store, emu)

        def broken(*args: object, **kwargs: object) -> None:
            raise StoreError("disk full (injected after the old generation was archived)")

        monkeypatch.setattr(store_history, "append", broken)

        async def scenario() -> StoreError:
            session = Session.resume(store, session_id)
            try:
                with pytest.raises(StoreError, match="disk full") as raised:
                    await compress(session, keep=2)
                assert [dumps(m) for m in session.history] == stored  # in memory too
                return raised.value
            finally:
                await session.aclose()

        error = run(scenario())
    finally:
        store.close()
    monkeypatch.undo()
    _unchanged(home, session_id, stored)
    # The one persistence path's last resort: the summary was paid for, so the compacted
    # history is in the rescue file the error names; the session went on from its previous one.
    assert isinstance(error, Unsaved) and error.path is not None
    assert error.path.parent == home / "rescue" and str(error.path) in str(error)
    assert error.path.stat().st_mode & 0o777 == 0o600
    record = orjson.loads(error.path.read_bytes())
    assert record["session"] == session_id and record["replaces"]["turns"] == len(stored)
    assert record["replaces"]["note"]["ended_by"] == "compaction"
    rescued = [message_from_json(m) for m in record["messages"]]
    tail = [dumps(m) for m in rescued[1:]]
    assert is_checkpoint(rescued[0]) and tail and tail == stored[-len(tail):]


def test_a_turn_appended_meanwhile_sends_the_compaction_to_a_branch(emu: ChatEmulator,
                                                                     store: Store) -> None:
    # The one persistence path (``persist``): a compaction made from turns another writer went
    # on from is never written over that writer's turn; it becomes the next generation of a
    # branch holding exactly what it read, and the session follows the branch.
    from thoughtline.messages import user

    session_id, stored = _session(store, emu)

    async def sneaky(prompt: object) -> tuple[str, str | None]:
        store.append(session_id, [user("written by another process meanwhile")])
        return "summary", "stop"

    async def scenario() -> tuple[CompactionResult, list[bytes]]:
        session = Session.resume(store, session_id)
        try:
            result = await compress(session, keep=2, summarize=sneaky)
            return result, [dumps(m) for m in session.history]
        finally:
            await session.aclose()

    result, held = run(scenario())
    assert result.compacted and result.branched_from == session_id
    branch = store.get_session(result.session)
    assert branch.id != session_id and branch.parent_id == session_id
    on_branch = [m.message for m in store.load_history(branch.id).messages]
    assert [dumps(m) for m in on_branch] == held  # the session went on from the branch
    tail = [dumps(m) for m in on_branch[1:]]
    assert on_branch[0].text.endswith("summary") and len(tail) >= 2
    assert tail == stored[-len(tail):]  # the kept tail of what it read, nothing after it
    assert not any("meanwhile" in m.text for m in on_branch)
    archived = store.generation_ids(branch.id, 0)  # what the compaction read, restorable
    assert [mid for _, mid in archived] == [m.id for m in store.load_history(
        session_id).messages][:len(stored)]
    assert "new branch" in result.describe()
    loaded = [m.message for m in store.load_history(session_id).messages]
    assert [dumps(m) for m in loaded[:-1]] == stored and loaded[-1].text.startswith("written")
    assert [g.number for g in store.list_generations(session_id)] == [0]

