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

import pytest
from compaction_support import TOOLS, deepseek, run, tool_loop

from thoughtline import Session, open_store
from thoughtline.compaction import compress
from thoughtline.errors import StoreError
from thoughtline.messages import dumps
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


def test_a_failure_inside_the_store_write_rolls_everything_back(
        emu: ChatEmulator, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(None, home)
    try:
        session_id, stored = _session(store, emu)

        def broken(*args: object, **kwargs: object) -> None:
            raise StoreError("disk full (injected after the old generation was archived)")

        monkeypatch.setattr(store_history, "append", broken)

        async def scenario() -> None:
            session = Session.resume(store, session_id)
            try:
                with pytest.raises(StoreError, match="disk full"):
                    await compress(session, keep=2)
                assert [dumps(m) for m in session.history] == stored  # in memory too
            finally:
                await session.aclose()

        run(scenario())
    finally:
        store.close()
    monkeypatch.undo()
    _unchanged(home, session_id, stored)


def test_a_turn_appended_meanwhile_makes_the_write_refuse(emu: ChatEmulator,
                                                          store: Store) -> None:
    from thoughtline.messages import user

    session_id, stored = _session(store, emu)

    async def sneaky(prompt: object) -> tuple[str, str | None]:
        store.append(session_id, [user("written by another process meanwhile")])
        return "summary", "stop"

    async def scenario() -> None:
        session = Session.resume(store, session_id)
        try:
            with pytest.raises(StoreError, match="changed while"):
                await compress(session, keep=2, summarize=sneaky)
        finally:
            await session.aclose()

    run(scenario())
    loaded = [m.message for m in store.load_history(session_id).messages]
    assert [dumps(m) for m in loaded[:-1]] == stored and loaded[-1].text.startswith("written")
    assert [g.number for g in store.list_generations(session_id)] == [0]
