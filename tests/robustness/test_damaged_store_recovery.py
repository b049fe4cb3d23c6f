"""Item 10: a corrupted stored message no longer blocks ``sessions show``/``export``: they report
the damaged turn and print the rest; ``sessions branch SESSION --at N`` continues from the last
good turn, and the corruption error names that command."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_support import Cli, seed_sessions

from thoughtline import config
from thoughtline.errors import CorruptPayload
from thoughtline.store import encode_message, open_store


def damage_second_turn(cli: Cli) -> tuple[str, str]:
    [sid] = seed_sessions(cli.home, 1)
    store = open_store(None, config.ensure_home(cli.home))
    try:
        target = store.load_history(sid).messages[1]
    finally:
        store.close()
    key = encode_message(target.message).id
    with sqlite3.connect(cli.home / "state.db") as conn:
        conn.execute("UPDATE messages SET skeleton = ? WHERE digest = ?", (b"{garbage", key))
    return sid, key


def test_show_reports_the_damaged_turn_and_prints_the_rest(cli: Cli) -> None:
    sid, _ = damage_second_turn(cli)
    data = cli.show(sid)
    assert [t["seq"] for t in data["turns"]] == [0]
    assert data["damaged_turns"] == [1]
    assert any(p["seq"] == 1 for p in data["problems"])
    human = cli.invoke("sessions", "show", sid)
    assert human.returncode == 0, human.stderr
    assert "question 0" in human.stdout and "DAMAGED" in human.stdout
    assert f"thoughtline sessions branch {sid} --at 1" in human.stderr


def test_export_keeps_the_good_turns_and_warns(cli: Cli) -> None:
    sid, _ = damage_second_turn(cli)
    result = cli.invoke("sessions", "export", sid)
    assert result.returncode == 0, result.stderr
    exported = json.loads(result.stdout)
    assert [m["role"] for m in exported["messages"]] == ["user"]
    assert "damaged" in result.stderr and "--at 1" in result.stderr


def test_the_error_names_the_branch_command_and_the_command_works(cli: Cli) -> None:
    sid, _ = damage_second_turn(cli)
    store = open_store(None, config.ensure_home(cli.home))
    try:
        with pytest.raises(CorruptPayload) as caught:
            store.load_history(sid)
    finally:
        store.close()
    advice = f"thoughtline sessions branch {sid} --at 1"
    assert advice in str(caught.value)
    result = cli.invoke(*advice.split()[1:], "--title", "rescued")
    assert result.returncode == 0, result.stderr
    new_id = result.stdout.strip()
    assert f"thoughtline chat -r {new_id}" in result.stderr
    branch = cli.show(new_id)
    assert branch["title"] == "rescued" and branch["parent"] == sid
    assert [t["preview"] for t in branch["turns"]] == ["question 0"]
    assert branch["damaged_turns"] == []


def test_branch_validates_n(cli: Cli) -> None:
    [sid] = seed_sessions(cli.home, 1)
    result = cli.run("sessions", "branch", sid, "--at", "5")
    assert result.returncode == 2 and "has 2 turns" in result.stderr  # as --at counts
    assert "Traceback" not in result.stderr
    whole = cli.invoke("sessions", "branch", sid)
    assert whole.returncode == 0
    assert cli.show(whole.stdout.strip())["title"] == "seeded 0 (branch)"
