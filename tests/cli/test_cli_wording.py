"""Issue 31 item 8: ``sessions branch`` speaks in turns, ``chat -c -r ID`` is a usage error, and
importing a ``--format jsonl`` export says that only ``--format json`` exports re-import.

Every run is the installed command in a subprocess, on sessions seeded through the store API.
"""

from __future__ import annotations

from pathlib import Path

from cli_support import Cli, seed_sessions


def test_branch_past_the_end_counts_turns(cli: Cli) -> None:
    [sid] = seed_sessions(cli.home, 1)  # one question and its answer: 2 turns
    result = cli.run("sessions", "branch", sid, "--at", "99")
    assert result.returncode == 2, result
    assert "at turn 99" in result.stderr and "it has 2 turns" in result.stderr
    assert "message" not in result.stderr
    assert "Traceback" not in result.stderr
    assert len(cli.sessions()) == 1  # nothing made


def test_branch_of_one_turn_is_singular(cli: Cli) -> None:
    [sid] = seed_sessions(cli.home, 1)
    result = cli.ok("sessions", "branch", sid, "--at", "1")
    assert f"branched 1 turn of {sid} into a new session" in result.stderr
    made = result.stdout.strip()
    assert cli.show(made)["turns"][0]["role"] == "user"
    assert len(cli.show(made)["turns"]) == 1
    several = cli.ok("sessions", "branch", sid)
    assert f"branched 2 turns of {sid}" in several.stderr


def test_continue_with_a_named_resume_is_a_usage_error(cli: Cli) -> None:
    [sid, _] = seed_sessions(cli.home, 2)
    result = cli.run("chat", "-c", "-r", sid, "-p", "which one?")
    assert result.returncode == 2, result
    message = " ".join(result.stderr.split())
    assert "-c/--continue" in message and f"-r/--resume {sid}" in message
    assert "Traceback" not in result.stderr
    assert [s["turns"] for s in cli.sessions()] == [2, 2]  # nothing was sent or stored


def test_importing_a_jsonl_export_says_only_json_reimports(cli: Cli, tmp_path: Path) -> None:
    [sid] = seed_sessions(cli.home, 1)
    exported = tmp_path / "x.jsonl"
    cli.ok("sessions", "export", sid, "--format", "jsonl", "-o", str(exported))
    assert len(exported.read_text().splitlines()) == 3  # header + two messages
    result = cli.run("sessions", "import", str(exported))
    assert result.returncode == 2, result
    message = " ".join(result.stderr.split())
    assert "--format jsonl" in message and "only 'export --format json' files" in message
    assert "Extra data" not in message and "Traceback" not in message
    assert "nothing was imported" in message
    assert len(cli.sessions()) == 1
    # ... and the JSON export of the same session does re-import.
    as_json = tmp_path / "x.json"
    cli.ok("sessions", "export", sid, "--format", "json", "-o", str(as_json))
    cli.ok("sessions", "import", str(as_json))
    assert len(cli.sessions()) == 2
