"""The interactive loop on a pseudo-terminal: turns, slash commands, Ctrl-C and Ctrl-D.

``chat`` runs as a real process whose controlling terminal is a pty, so prompt_toolkit, the
terminal's line discipline (Ctrl-C → SIGINT) and the streaming renderer all behave as for a user.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from cli_support import ENTRY, Cli, PtyProcess

PROMPT = "›"


@pytest.fixture
def chat_tty(cli: Cli) -> Iterator[PtyProcess]:
    tty = PtyProcess([*ENTRY, "chat", "--provider", "demo"], cli.environ())
    try:
        yield tty
    finally:
        tty.close()


def command(tty: PtyProcess, line: str, shows: str) -> str:
    """Type ``line``, wait for ``shows`` in the answer and for the next prompt."""
    tty.expect(PROMPT)
    tty.line(line)
    seen = tty.expect(shows)
    return seen


def test_turns_and_slash_commands(cli: Cli, chat_tty: PtyProcess) -> None:
    tty = chat_tty
    header = tty.expect("(/help)")
    assert "demo-reasoner" in header
    answer = command(tty, "hello there", "Scripted answer 1 to: hello there")
    assert "The user says “hello there”" in answer  # reasoning shown by default

    # Esc then Enter inserts a newline: one message over two lines.
    tty.expect(PROMPT)
    tty.send("first line\x1b\rsecond line\r")
    tty.expect("Scripted answer 2 to: first line second line")

    command(tty, "/reasoning hide", "reasoning hidden")
    quiet = command(tty, "quiet now", "Scripted answer 3 to: quiet now")
    assert "The user says “quiet now”" not in quiet
    command(tty, "/reasoning show", "reasoning shown")
    command(tty, "/reasoning sideways", "usage: /reasoning show|hide")

    command(tty, "/model other-model", "model: other-model (route")
    branched = command(tty, "/branch my-branch", "turns carried over")
    match = re.search(r"now in session ([0-9a-f]{12}) \(my-branch\) with 6 turns", branched)
    assert match, branched
    branch_prefix = match.group(1)
    listing = command(tty, "/sessions", "hello there")
    assert f"* {branch_prefix}" in listing
    tty.expect(PROMPT)
    tty.send("\x1b[A\r")  # history: Up recalls "/sessions"
    assert f"* {branch_prefix}" in tty.expect("hello there")

    in_branch = command(tty, "in the branch", "Scripted answer 4 to: in the branch")
    assert "The user says “in the branch”" in in_branch  # shown again
    command(tty, "/compact 2", "compacted: ")  # the rest of compaction: tests/compaction
    command(tty, "/frobnicate", "unknown command /frobnicate")
    command(tty, "/help", "/branch [title]")
    tty.expect(PROMPT)
    tty.send("\x03")  # Ctrl-C at the prompt: nothing to stop, the loop goes on
    command(tty, "/exit", "/exit")
    assert tty.wait() == 0
    assert "Traceback" not in tty.screen

    records = {r["title"]: r for r in cli.sessions()}
    assert set(records) == {"hello there", "my-branch"}
    branch, original = records["my-branch"], records["hello there"]
    assert branch["id"].startswith(branch_prefix)
    # /compact 2 left a checkpoint and the last two turns; generation 0 is the branch as it was.
    assert (branch["parent"], branch["turns"], original["turns"]) == (original["id"], 3, 6)
    generations = cli.read("sessions", "show", branch["id"], "--generations", "--json")
    assert [(g["generation"], g["turns"]) for g in generations["generations"]] == [(0, 8), (1, 3)]
    assert cli.invoke("sessions", "restore", branch["id"], "--generation", "0").returncode == 0
    assert branch["model"] == "other-model"
    shared = [t["id"] for t in cli.show(original["id"])["turns"]]
    branch_turns = cli.show(branch["id"])["turns"]
    assert [t["id"] for t in branch_turns[:6]] == shared  # reasoning carried over untouched
    assert branch_turns[2]["preview"] == "first line\nsecond line"
    models = [r["model"] for r in cli.log_records()]
    assert models == ["demo-reasoner"] * 3 + ["other-model"] * 2  # the last one: the summary
    assert "hello there" in (cli.home / "prompt-history").read_text()


def test_ctrl_d_exits_0(chat_tty: PtyProcess) -> None:
    chat_tty.expect(PROMPT)
    chat_tty.send("\x04")
    assert chat_tty.wait() == 0


@pytest.fixture
def slow_provider() -> Iterator[str]:
    """A DeepSeek emulator in another process, pausing before every streamed chunk."""
    proc = subprocess.Popen([sys.executable, "-m", "thoughtline.testing", "deepseek", "--no-auth",
                             "--chunk-delay", "0.15"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


def test_ctrl_c_stops_the_stream_and_keeps_the_session(cli: Cli, slow_provider: str) -> None:
    tty = PtyProcess([*ENTRY, "chat", "--provider", "deepseek", "--base-url", slow_provider],
                     cli.environ())
    try:
        tty.expect(PROMPT)
        tty.line("hello slow")
        tty.expect("Turn 1:")  # streaming has begun
        tty.send("\x03")
        stopped = tty.expect("interrupted")
        assert "I can answer that directly" not in stopped  # the answer really stopped
        tty.expect(PROMPT)
        tty.line("next one")
        tty.expect("to: next one")
        tty.expect(PROMPT)
        tty.send("\x04")
        assert tty.wait() == 0
        assert "Traceback" not in tty.screen
    finally:
        tty.close()
    [session] = cli.sessions()
    turns = cli.show(session["id"])["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert [t["incomplete"] for t in turns] == [False, True, False, False]
    assert turns[3]["preview"].endswith("to: next one")
    assert [r["status"] for r in cli.log_records()][-1:] == [200]  # the finished turn
