"""``thoughtline logs``: one record per request, matching what the provider received.

The expected carriers are computed here from the emulator's record of each request body, not from
thoughtline's codecs. Records must hold no message text, no key and no headers.
"""

from __future__ import annotations

import json
import queue
import signal
import stat
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_support import ENTRY, Cli, carriers_of

from thoughtline.testing import ChatEmulator, Received

MARKER = "zebra-7731 tell me something"
KEY = "sk-log-secret-5150"


@dataclass
class History:
    cli: Cli
    emu: ChatEmulator
    session: str
    requests: list[Received]


@pytest.fixture(scope="module")
def history(module_home: Path, emu: ChatEmulator) -> History:
    """Session A: two streamed turns, one rejected request (400), one non-streamed turn."""
    cli = Cli(module_home, env={"DEEPSEEK_API_KEY": KEY})
    mark = len(emu.received)
    first = cli.json("chat", "--provider", "deepseek", "--base-url", emu.base_url,
                     "-p", MARKER, "--json")
    cli.ok("chat", "-c", "-p", f"{MARKER} again")
    emu.fail_next(400, {"error": {"message": "Injected rejection", "type": "invalid_request"}})
    assert cli.run("chat", "-c", "-p", f"{MARKER} rejected").returncode == 1
    cli.ok("chat", "-c", "--no-stream", "-p", f"{MARKER} whole")
    return History(cli=cli, emu=emu, session=first["session"],
                   requests=list(emu.received[mark:]))


def expected_record(request: Received) -> dict[str, Any]:
    assistants, carriers = carriers_of(request.body)
    pads = sum(1 for m in request.body["messages"]
               if m.get("role") == "assistant" and m.get("reasoning_content") == " ")
    return {"status": request.status, "model": request.body["model"],
            "stream": request.body.get("stream") is True, "assistant_turns": assistants,
            "carriers": carriers, "pads": pads}


def test_json_records_match_the_requests_one_to_one(history: History) -> None:
    result = history.cli.ok("logs", "--json")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r.status for r in history.requests] == [200, 200, 400, 200]
    assert len(records) == len(history.requests)
    for record, request in zip(records, history.requests, strict=True):
        assert {k: record[k] for k in expected_record(request)} == expected_record(request)
        assert record["session"] == history.session
        assert (record["provider"], record["host"], record["route"]) == (
            "deepseek", "127.0.0.1", "default")
        assert record["retries"] == 0 and record["verdicts"] == []
        assert record["native"] == {} and record["body_extras"] == []
    assert [r["carriers"] for r in records] == [
        {}, {"reasoning_content": 1}, {"reasoning_content": 2}, {"reasoning_content": 2}]
    times = [r["time"] for r in records]
    assert times == sorted(times)


def test_text_lines_say_what_each_request_carried(history: History) -> None:
    lines = history.cli.ok("logs").stdout.splitlines()
    assert len(lines) == 4
    assert "200" in lines[0] and "no reasoning fields" in lines[0]
    assert "reasoning_content×1" in lines[1] and "1 assistant turns" in lines[1]
    assert " 400 " in lines[2] and "reasoning_content×2" in lines[2]
    assert all(history.session[:8] in line and "deepseek" in line for line in lines)


def test_logs_hold_no_text_no_key_no_headers(history: History) -> None:
    log_dir = history.cli.home / "logs"
    stored = b"".join(p.read_bytes() for p in log_dir.iterdir())
    shown = (history.cli.ok("logs").stdout + history.cli.ok("logs", "--json").stdout).encode()
    for blob in (stored, shown):
        for secret in (MARKER, "zebra-7731", "Scripted answer", "the last message is", KEY,
                       "Bearer", "authorization"):
            assert secret.encode() not in blob, secret
    # Owner-only permissions (docs/configuration.md).
    assert stat.S_IMODE(log_dir.stat().st_mode) == 0o700
    for path in log_dir.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE((history.cli.home / "state.db").stat().st_mode) & 0o077 == 0


def test_session_filter_and_last_n(history: History) -> None:
    cli, emu = history.cli, history.emu
    other = cli.json("chat", "--provider", "deepseek", "--base-url", emu.base_url,
                     "-p", "another session", "--json")["session"]
    mine = cli.log_records("--session", other[:10])
    assert [r["session"] for r in mine] == [other]
    theirs = cli.log_records("--session", history.session)
    assert len(theirs) == 4 and {r["session"] for r in theirs} == {history.session}
    assert cli.log_records("-n", "1") == mine
    unknown = cli.run("logs", "--session", "no-such-session")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr


def _reader(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def test_follow_prints_records_written_after_it_started(history: History) -> None:
    cli = history.cli
    existing = len(cli.log_records())
    follower = subprocess.Popen([*ENTRY, "logs", "-f", "--json"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=cli.environ())
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(follower.stdout, lines), daemon=True).start()
    try:
        for _ in range(existing):  # first the records already there
            json.loads(lines.get(timeout=20))
        # No sleep needed: `logs -f` opens the log before it prints what is there, so a record
        # written from now on is followed (requestlog.Follower), whatever the timing.
        assert lines.empty()
        mark = len(history.emu.received)
        cli.ok("chat", "-r", history.session, "-p", "while followed")
        [request] = history.emu.received[mark:]
        record = json.loads(lines.get(timeout=20))
        assert record["session"] == history.session
        assert {k: record[k] for k in expected_record(request)} == expected_record(request)
        assert record["carriers"] == {"reasoning_content": 3}
        follower.send_signal(signal.SIGINT)
        _, stderr = follower.communicate(timeout=20)
        assert follower.returncode == 0, stderr
        assert "Traceback" not in stderr
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)


def test_a_request_whose_stream_broke_off_is_logged(cli: Cli, emu: ChatEmulator) -> None:
    mark = len(emu.received)
    emu.cut_stream_after(2)
    result = cli.run("chat", "--provider", "deepseek", "--base-url", emu.base_url, "-p", "cut")
    assert result.returncode == 1
    assert len(emu.received[mark:]) == 1
    [record] = cli.log_records()
    assert record["outcome"] == "interrupted"


def test_records_of_a_session_never_stored_say_so(cli: Cli, emu: ChatEmulator) -> None:
    """Issue 31 item 7: a failed first request leaves a log record but no session; ``logs``
    says so, and ``logs --session ID`` shows its records instead of "no session"."""
    chat = ("chat", "--provider", "deepseek", "--base-url", emu.base_url)
    emu.fail_next(400, {"error": {"message": "no such model", "type": "invalid_request"}})
    assert cli.run(*chat, "-p", "refused").returncode == 1
    kept = cli.json(*chat, "-p", "answered", "--json")["session"]
    [lost, ok] = cli.log_records()
    assert [s["id"] for s in cli.sessions()] == [kept] == [ok["session"]]
    orphan = lost["session"]
    assert orphan != kept and lost["status"] == 400
    assert lost["stored_session"] is False and "stored_session" not in ok

    lines = cli.ok("logs").stdout.splitlines()
    assert len(lines) == 2
    assert f"{orphan[:8]} 400 " in lines[0] and lines[0].endswith("(no stored session)")
    assert "no stored session" not in lines[1] and f"{kept[:8]} 200 " in lines[1]

    for ref in (orphan, orphan[:10]):
        shown = cli.run("logs", "--session", ref)
        assert shown.returncode == 0, shown.stderr
        [line] = shown.stdout.splitlines()
        assert f"{orphan[:8]} 400 " in line and line.endswith("(no stored session)")
        assert f"{orphan} (no stored session)" in shown.stderr
    assert cli.log_records("--session", orphan) == [lost]
    unknown = cli.run("logs", "--session", "f" * 32)
    assert unknown.returncode == 2 and "no session" in unknown.stderr
