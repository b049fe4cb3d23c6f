"""A resumed session reads its verified wire forms, not its canonical rows (issue 17), so damage
to a canonical row is found when the history is first decoded — and ``chat -r`` still says it,
once, after the turn that found it. With its forms intact, the turn is unaffected (the forms are
a verified copy of what the messages encode to) and ``sessions show`` reports the damage."""

from __future__ import annotations

import sqlite3

from cli_support import Cli

from thoughtline import Session, open_store
from thoughtline.messages import Message, Text
from thoughtline.store import encode_message
from thoughtline.testing import ChatEmulator

NOTE = "a note kept with a native record"


def _session_with_a_damaged_row(cli: Cli, emu: ChatEmulator) -> str:
    """A DeepSeek session of two CLI turns and then a noted user turn (a native record, stored
    as a payload row) whose payload row is then damaged; returns the session id."""
    sid = cli.json("chat", "--provider", "deepseek", "--base-url", emu.base_url,
                   "-p", "first question", "--json")["session"]
    cli.json("chat", "-r", sid, "-p", "second question", "--json")
    noted = Message(role="user", parts=(Text(text=NOTE),), native={"thoughtline": {"n": 1}})
    with open_store(None, cli.home) as store:
        Session.resume(store, sid).append([noted])  # stored with its wire form, as a turn is
    [payload] = encode_message(noted).payloads
    with sqlite3.connect(cli.home / "state.db") as conn:
        assert conn.execute("UPDATE payloads SET data = ? WHERE digest = ?",
                            (b"{}", payload)).rowcount == 1
    return sid


def test_damage_found_by_a_later_decode_is_said_once(cli: Cli, emu: ChatEmulator) -> None:
    sid = _session_with_a_damaged_row(cli, emu)
    with sqlite3.connect(cli.home / "state.db") as conn:
        conn.execute("DELETE FROM wire_forms")  # a store written before forms: nothing to splice
    mark = len(emu.received)
    result = cli.run("chat", "-r", sid, "-p", "third question")
    assert result.returncode == 0, result.stderr
    [request] = emu.received[mark:]
    assert request.status == 200 and NOTE.encode() in request.raw
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: turn")]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith("warning: turn 4:") and "corrupt" in warnings[0]


def test_intact_forms_carry_the_turn_and_show_reports_the_damage(cli: Cli,
                                                                  emu: ChatEmulator) -> None:
    sid = _session_with_a_damaged_row(cli, emu)
    mark = len(emu.received)
    result = cli.run("chat", "-r", sid, "-p", "third question")
    assert result.returncode == 0, result.stderr
    [request] = emu.received[mark:]
    assert request.status == 200 and NOTE.encode() in request.raw  # from its verified form
    assert "warning" not in result.stderr
    shown = cli.show(sid)
    assert any(p["seq"] == 4 and "corrupt" in p["detail"] for p in shown["problems"])
