"""Item 11: SIGTERM mid-turn is handled like Ctrl-C — the prompt and the partial answer are kept
(marked incomplete), the request is logged, no empty session is left — and exits 143.

The signal is sent once the answer is visibly streaming (an event read from the child's stdout),
not after a sleep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from cli_support import ENTRY, Cli, readable

from thoughtline.testing import ChatEmulator


@pytest.fixture(scope="module")
def slow_emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek", require_auth=False) as emulator:
        emulator.chunk_delay = 0.3  # long enough that the answer is still streaming
        yield emulator


def wait_for_output(proc: subprocess.Popen[bytes], text: bytes, limit: float = 30) -> bytes:
    """Read the child's stdout until ``text`` appears (the limit only stops a hung test)."""
    assert proc.stdout is not None
    seen = b""
    deadline = time.monotonic() + limit
    while text not in seen:
        assert time.monotonic() < deadline, seen
        if readable(proc.stdout.fileno(), 0.1):
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"the child closed stdout early: {seen!r}"
            seen += chunk
    return seen


def test_sigterm_mid_answer_keeps_the_session_and_logs_the_request(
        cli: Cli, slow_emu: ChatEmulator) -> None:
    proc = subprocess.Popen([*ENTRY, "chat", "--provider", "deepseek", "--base-url",
                             slow_emu.base_url, "--show-reasoning", "-p",
                             "a slow question"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=cli.environ())
    try:
        wait_for_output(proc, b"Turn 1:")  # the reasoning has started to stream
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    [session] = cli.sessions()
    turns = cli.show(session["id"])["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    assert turns[0]["preview"] == "a slow question"
    assert turns[1]["incomplete"] is True
    [record] = cli.log_records()
    assert record["outcome"] == "cancelled"


def test_an_answer_that_cannot_be_stored_is_never_stored_as_incomplete(
        tmp_path, slow_emu: ChatEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 11: a write lock held past every retry made a finished answer be stored
    "(incomplete)". A stored answer is complete, or it is not stored (it is rescued to a file)."""
    import asyncio
    import json as jsonlib

    from thoughtline import ProviderConfig, Session, open_store
    from thoughtline import session as session_module
    from thoughtline.errors import StoreError
    from thoughtline.requestlog import RequestLog

    monkeypatch.setattr(session_module, "_WRITE_ATTEMPTS", (0.0, 0.0))
    store = open_store(tmp_path / "state.db", tmp_path)
    provider = ProviderConfig(id="deepseek", base_url=slow_emu.base_url,
                              model="deepseek-reasoner")
    slow_emu.chunk_delay = 0.0
    real_append = store.append
    locked = {"on": False}

    def busy_append(*args, **kwargs):
        if locked["on"]:
            raise StoreError("database is locked")
        return real_append(*args, **kwargs)

    monkeypatch.setattr(store, "append", busy_append)

    async def scenario() -> BaseException | None:
        session = Session.create(store, provider, log=RequestLog(tmp_path / "logs"),
                                 rescue_dir=tmp_path / "rescue")
        locked["on"] = True
        try:
            await session.send("answer me")
        except StoreError as exc:
            return exc
        finally:
            locked["on"] = False
            await session.aclose()
        return None

    try:
        error = asyncio.run(scenario())
        [record] = store.list_sessions()
        stored = store.load_history(record.id).messages
    finally:
        slow_emu.chunk_delay = 0.3
        store.close()
    assert isinstance(error, StoreError) and "nothing was lost" in str(error)
    assert stored == ()  # not half of it, and never an "(incomplete)" copy of a whole answer
    [rescued] = (tmp_path / "rescue").iterdir()
    messages = jsonlib.loads(rescued.read_text())["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert not messages[1].get("incomplete")
    [log] = RequestLog(tmp_path / "logs").read()
    assert log["outcome"] == "unsaved"


def test_sigterm_at_the_interactive_prompt_leaves_no_empty_session(cli: Cli) -> None:
    from cli_support import PtyProcess

    tty = PtyProcess([*ENTRY, "chat", "--provider", "demo"], cli.environ())
    try:
        tty.expect("(/help)")
        tty.expect("›")
        tty.proc.send_signal(signal.SIGTERM)
        assert tty.wait() == 143
    finally:
        tty.close()
    assert cli.sessions() == []
