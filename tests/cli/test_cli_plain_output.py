"""NO_COLOR and non-terminal output are plain text; a terminal gets dimmed reasoning.

The positive control (colour on a terminal without NO_COLOR) shows the checks can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import ANSI, DIM, ENTRY, SGR, Cli, PtyProcess

from thoughtline.testing import ChatEmulator
from thoughtline.testing.script import plan_turn


@pytest.fixture(scope="module")
def home_cli(module_home: Path, emu: ChatEmulator) -> Cli:
    cli = Cli(module_home)
    cli.ok("chat", "--provider", "deepseek", "--base-url", emu.base_url, "-p", "colour me")
    return cli


def on_terminal(cli: Cli, *args: str, no_color: bool) -> str:
    env = cli.environ({"NO_COLOR": "1"} if no_color else None)
    tty = PtyProcess([*ENTRY, *args], env)
    try:
        assert tty.wait() == 0, tty.screen
        return tty.raw.decode()
    finally:
        tty.close()


def test_piped_output_has_no_escape_codes(home_cli: Cli, emu: ChatEmulator) -> None:
    session = home_cli.sessions()[0]["id"]
    mark = len(emu.received)
    chat = home_cli.ok("chat", "-c", "-p", "piped, so plain")
    said = plan_turn(emu.received[mark].body)
    # shown (on stderr: piped one-shot output is the answer only), just not dimmed
    assert said.reasoning in chat.stderr and said.reasoning not in chat.stdout
    outputs = [chat.stdout, chat.stderr]
    for args in (("sessions", "list"), ("sessions", "show", session), ("logs",),
                 ("routes", "--provider", "deepseek"), ("--help",)):
        result = home_cli.ok(*args)
        outputs += [result.stdout, result.stderr]
    for text in outputs:
        assert not ANSI.search(text), text


def test_no_color_on_a_terminal_is_plain(home_cli: Cli) -> None:
    session = home_cli.sessions()[0]["id"]
    for args in (("chat", "-c", "-p", "no colour please"), ("sessions", "show", session)):
        out = on_terminal(home_cli, *args, no_color=True)
        assert not SGR.search(out), (args, out)
        assert "\x1b" not in out, (args, out)


def test_a_terminal_without_no_color_gets_dimmed_reasoning(home_cli: Cli,
                                                           emu: ChatEmulator) -> None:
    mark = len(emu.received)
    out = on_terminal(home_cli, "chat", "-c", "-p", "colour allowed", no_color=False)
    said = plan_turn(emu.received[mark].body)
    assert DIM.search(out[: out.index("Turn ")]), out  # the reasoning starts dimmed
    assert said.content.split(" ")[-1] in out
    table = on_terminal(home_cli, "sessions", "list", no_color=False)
    assert SGR.search(table)
