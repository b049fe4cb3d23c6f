"""``thoughtline chat`` one-shot: -p / positional / piped prompts, --json, flags, exit codes.

Every run is a subprocess of the installed command against an in-process emulator, so each test
checks both what the CLI printed and what the provider actually received.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import (
    ANSI,
    DIM,
    ENTRY,
    Cli,
    assistant_messages,
    readable,
    seed_sessions,
    strip_ansi,
)

from thoughtline.testing import ChatEmulator
from thoughtline.testing.script import plan_turn


def deepseek(emu: ChatEmulator) -> tuple[str, ...]:
    return ("chat", "--provider", "deepseek", "--base-url", emu.base_url)


def last_user_text(body: dict) -> str:
    return body["messages"][-1]["content"]


def test_json_prints_exactly_the_documented_object(cli: Cli, emu: ChatEmulator) -> None:
    before = len(emu.received)
    result = cli.ok(*deepseek(emu), "-p", "hi", "--json", "--title", "json check")
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout  # nothing but the object
    out = json.loads(lines[0])
    assert list(out) == ["session", "reply", "usage"]
    assert list(out["reply"]) == ["text", "reasoning", "tool_calls"]
    [request] = emu.received[before:]
    assert request.status == 200 and request.body["stream"] is True
    said = plan_turn(request.body)  # what the emulated model answered, from its own script
    assert out["reply"] == {"text": said.content, "reasoning": said.reasoning, "tool_calls": []}
    assert isinstance(out["usage"], dict) and out["usage"]
    assert all(isinstance(v, int) for v in out["usage"].values())
    [listed] = cli.sessions()
    assert listed["id"] == out["session"]
    assert (listed["title"], listed["provider"], listed["turns"]) == ("json check", "deepseek", 2)


def test_positional_prompt(cli: Cli, emu: ChatEmulator) -> None:
    before = len(emu.received)
    result = cli.ok(*deepseek(emu), "what is a positional prompt")
    [request] = emu.received[before:]
    assert last_user_text(request.body) == "what is a positional prompt"
    assert "Scripted answer 1 to: what is a positional prompt" in result.stdout


def test_piped_stdin_is_the_prompt(cli: Cli, emu: ChatEmulator) -> None:
    before = len(emu.received)
    out = cli.json(*deepseek(emu), "--json", input="a piped question\nover two lines\n")
    [request] = emu.received[before:]
    assert last_user_text(request.body) == "a piped question\nover two lines"
    assert out["reply"]["text"] == plan_turn(request.body).content
    assert cli.sessions()[0]["title"].startswith("a piped question")


def test_no_stream_and_model_override(cli: Cli, emu: ChatEmulator) -> None:
    before = len(emu.received)
    result = cli.ok(*deepseek(emu), "--no-stream", "--model", "deepseek-chat", "--show-reasoning",
                    "-p", "whole")
    [request] = emu.received[before:]
    assert request.body.get("stream") is not True
    assert request.body["model"] == "deepseek-chat"
    said = plan_turn(request.body)
    assert said.reasoning in result.stdout and said.content in result.stdout
    assert result.stdout.index(said.reasoning) < result.stdout.index(said.content)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_hide_reasoning(cli: Cli, emu: ChatEmulator, stream: bool) -> None:
    before = len(emu.received)
    flags = () if stream else ("--no-stream",)
    result = cli.ok(*deepseek(emu), *flags, "--hide-reasoning", "-p", "keep it quiet")
    [request] = emu.received[before:]
    said = plan_turn(request.body)
    assert said.content in result.stdout
    assert "Turn 1: the last message" not in result.stdout + result.stderr
    # ... but the reasoning is still kept (and will be replayed): hiding is display only.
    [turn] = [t for t in cli.show(cli.sessions()[0]["id"])["turns"] if t["role"] == "assistant"]
    assert turn["reasoning"][0]["bytes"] == len(said.reasoning.encode())


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_piped_one_shot_prints_the_answer_only(cli: Cli, emu: ChatEmulator, stream: bool) -> None:
    """Issue 31 item 1: ``chat -p hi > out.txt`` captures the answer; the reasoning goes to
    stderr (plain there, as stderr is not a terminal either)."""
    before = len(emu.received)
    flags = () if stream else ("--no-stream",)
    result = cli.ok(*deepseek(emu), *flags, "-p", "only the answer please")
    [request] = emu.received[before:]
    said = plan_turn(request.body)
    assert result.stdout == said.content + "\n"
    assert said.reasoning in result.stderr
    assert not ANSI.search(result.stderr), result.stderr


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_show_reasoning_keeps_it_on_piped_stdout(cli: Cli, emu: ChatEmulator,
                                                 stream: bool) -> None:
    before = len(emu.received)
    flags = () if stream else ("--no-stream",)
    result = cli.ok(*deepseek(emu), *flags, "--show-reasoning", "-p", "all of it on stdout")
    [request] = emu.received[before:]
    said = plan_turn(request.body)
    assert result.stdout.index(said.reasoning) < result.stdout.index(said.content)
    assert said.reasoning not in result.stderr


def test_piped_one_shot_dims_the_reasoning_on_a_terminal_stderr(cli: Cli,
                                                                 emu: ChatEmulator) -> None:
    before = len(emu.received)
    master, slave = pty.openpty()
    env = {**cli.environ(), "TERM": "xterm-256color"}
    proc = subprocess.Popen([*ENTRY, *deepseek(emu), "-p", "stderr is a terminal"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            env=env)
    os.close(slave)
    try:
        stdout, _ = proc.communicate(timeout=60)
        stderr = b""
        while readable(master, 1):
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            stderr += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0, stderr
    said = plan_turn(emu.received[before].body)
    assert stdout.decode() == said.content + "\n"
    text = stderr.decode()
    assert DIM.search(text), text
    assert said.reasoning in strip_ansi(text).replace("\r\n", "\n")


def test_chat_help_says_where_the_reasoning_goes(cli: Cli) -> None:
    help_text = " ".join(cli.ok("chat", "--help").stdout.split())
    assert "stdout is the answer only" in help_text
    assert "--show-reasoning writes it to stdout" in help_text


def test_demo_provider_needs_no_key_and_no_network(cli: Cli) -> None:
    out = cli.json("chat", "--provider", "demo", "-p", "hi demo", "--json")
    assert out["reply"]["text"] == "Scripted answer 1 to: hi demo"
    assert "hi demo" in out["reply"]["reasoning"]
    assert cli.sessions()[0]["provider"] == "demo"


def test_unknown_session_is_a_usage_error(cli: Cli) -> None:
    seed_sessions(cli.home, 2)
    result = cli.run("chat", "--resume", "no-such-session", "-p", "again")
    assert result.returncode == 2, result
    assert "no-such-session" in result.stderr
    assert "Traceback" not in result.stderr


def test_continue_without_any_session_is_a_usage_error(cli: Cli) -> None:
    result = cli.run("chat", "-c", "-p", "hello")
    assert result.returncode == 2
    assert "no session" in result.stderr and "Traceback" not in result.stderr


def test_json_needs_a_prompt(cli: Cli, emu: ChatEmulator) -> None:
    result = cli.run(*deepseek(emu), "--json")
    assert result.returncode == 2 and "--json" in result.stderr
    assert result.stdout == ""


def test_no_provider_and_no_key_says_how_to_fix_it(cli: Cli) -> None:
    for args in (("-p", "hello"), ()):  # one-shot, and interactive with stdin not a terminal
        result = cli.run("chat", *args)
        assert result.returncode == 2, result
        message = result.stderr.strip()
        assert "Traceback" not in message
        assert "\n\n" not in message  # one plain paragraph
        assert "DEEPSEEK_API_KEY" in message
        assert "config.toml" in message
        assert "--provider" in message
    assert cli.sessions() == []  # nothing half-created


def test_provider_error_exits_1_and_keeps_the_session(cli: Cli, emu: ChatEmulator) -> None:
    first = cli.json(*deepseek(emu), "-p", "first", "--json")
    session = first["session"]
    turns_before = [t["id"] for t in cli.show(session)["turns"]]
    emu.fail_next(400, {"error": {"message": "Model overloaded, try later (test 7731)",
                                  "type": "invalid_request_error"}})
    before = len(emu.received)
    result = cli.run("chat", "-r", session, "-p", "second", "--json")
    assert result.returncode == 1, result
    # --json still prints exactly one object on stdout, naming the error (issue 10)
    [line] = result.stdout.splitlines()
    failure = json.loads(line)
    assert failure["session"] == session
    assert failure["error"]["status"] == 400 and "test 7731" in failure["error"]["message"]
    assert "400" in result.stderr and "test 7731" in result.stderr
    assert "Traceback" not in result.stderr
    assert [r.status for r in emu.received[before:]] == [400]  # no blind retry
    assert [t["id"] for t in cli.show(session)["turns"]] == turns_before
    # ... and it is still usable: the next turn replays the first answer's reasoning.
    again = cli.json("chat", "-r", session, "-p", "second", "--json")
    assert again["session"] == session
    [replayed] = assistant_messages(emu.received[-1].body)
    assert replayed["reasoning_content"] == first["reply"]["reasoning"]


# --- keys ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def auth_emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek", require_auth=True) as emulator:
        yield emulator


def assert_key_not_stored(home: Path, key: str) -> None:
    for path in home.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_preset_key_variable_is_sent(cli: Cli, auth_emu: ChatEmulator) -> None:
    key = "sk-preset-dummy-0451"
    before = len(auth_emu.received)
    cli.ok(*deepseek(auth_emu), "-p", "auth please", env={"DEEPSEEK_API_KEY": key})
    [request] = auth_emu.received[before:]
    assert request.status == 200
    assert request.headers["authorization"] == f"Bearer {key}"
    assert_key_not_stored(cli.home, key)


def test_api_key_env_names_the_variable(cli: Cli, auth_emu: ChatEmulator) -> None:
    key = "sk-from-my-var-9313"
    env = {"MY_TL_SECRET": key, "DEEPSEEK_API_KEY": "sk-not-this-one"}
    before = len(auth_emu.received)
    cli.ok(*deepseek(auth_emu), "--api-key-env", "MY_TL_SECRET", "-p", "which key?", env=env)
    [request] = auth_emu.received[before:]
    assert request.headers["authorization"] == f"Bearer {key}"
    # The session remembers the variable's *name*: a resume reads it again.
    session = cli.sessions()[0]
    assert cli.show(session["id"])["provider"]["key_env"] == "MY_TL_SECRET"
    cli.ok("chat", "-c", "-p", "still you?", env=env)
    assert auth_emu.received[-1].headers["authorization"] == f"Bearer {key}"
    assert_key_not_stored(cli.home, key)


def test_missing_key_on_loopback_is_a_provider_error(cli: Cli, auth_emu: ChatEmulator) -> None:
    result = cli.run(*deepseek(auth_emu), "-p", "no key")
    assert result.returncode == 1, result
    assert "401" in result.stderr and "Traceback" not in result.stderr


# --- Ctrl-C ----------------------------------------------------------------------------------


def test_interrupted_one_shot_keeps_the_session(cli: Cli, emu: ChatEmulator) -> None:
    chunks = emu.chunks_sent
    emu.chunk_delay = 0.2  # about 2 s for the whole answer
    try:
        proc = subprocess.Popen([*ENTRY, *deepseek(emu), "-p", "slow one", "--json"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=cli.environ())
        deadline = time.monotonic() + 30
        # An event, not a sleep: a few chunks of this answer have gone out.
        while emu.chunks_sent < chunks + 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        emu.chunk_delay = 0.0
    assert proc.returncode == 130, (stdout, stderr)
    assert stdout == ""  # no half-made JSON object
    assert "interrupted" in stderr and "Traceback" not in stderr
    [session] = cli.sessions()
    turns = cli.show(session["id"])["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    assert turns[1]["incomplete"] is True
    assert turns[1]["reasoning"][0]["complete"] is False
    [record] = cli.log_records()  # the request did go out
    assert record["outcome"] == "cancelled"


def test_broken_stream_exits_1_and_keeps_the_partial_answer(cli: Cli, emu: ChatEmulator) -> None:
    emu.cut_stream_after(3)
    result = cli.run(*deepseek(emu), "-p", "cut me off")
    assert result.returncode == 1, result
    assert "broke off" in result.stderr and "Traceback" not in result.stderr
    # Piped, the partial reasoning went to stderr; its line is ended before the error message.
    assert result.stdout == ""
    assert result.stderr.startswith("Turn 1:")
    [cut] = [line for line in result.stderr.splitlines() if "broke off" in line]
    assert not cut.startswith("Turn 1:")
    [session] = cli.sessions()
    turns = cli.show(session["id"])["turns"]
    assert [(t["role"], t["incomplete"]) for t in turns] == [("user", False),
                                                             ("assistant", True)]


def test_a_first_turn_that_fails_leaves_no_empty_session(cli: Cli, emu: ChatEmulator) -> None:
    emu.fail_next(400, {"error": {"message": "model not available", "type": "invalid_request"}})
    result = cli.run(*deepseek(emu), "-p", "hello")
    assert result.returncode == 1, result
    assert "model not available" in result.stderr
    assert cli.sessions() == []
