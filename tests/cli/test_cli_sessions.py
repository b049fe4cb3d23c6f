"""``thoughtline sessions list|show|export|import|rm`` on the demo's stored sessions.

The demo leaves sessions with every kind of carrier: readable reasoning, signed parts with their
signature and native payloads (OpenRouter), tool-call and message-level native records (Gemini,
Copilot), and a learned verdict (the strict relay). Each test works on a private copy.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_support import ENTRY, Cli, PtyProcess, clean_env

from thoughtline.cli.demo import SCENARIOS

SIGNED = "demo: openrouter claude (signed)"
GEMINI = "demo: gemini compat (signatures)"
RELAY = "demo: unlisted strict relay"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def find(cli: Cli, title: str) -> dict[str, Any]:
    [record] = [s for s in cli.sessions() if s["title"] == title]
    return record


def test_list_is_a_table_of_every_session(demo_copy: Cli) -> None:
    records = demo_copy.sessions()
    assert len(records) == len(SCENARIOS)
    assert [r["updated_at"] for r in records] == sorted((r["updated_at"] for r in records),
                                                        reverse=True)
    for record in records:
        assert set(record) >= {"id", "title", "provider", "model", "turns", "updated_at"}
        assert record["turns"] == 12
    lines = demo_copy.ok("sessions", "list").stdout.splitlines()
    assert lines[0].split() == ["id", "title", "provider/model", "turns", "updated"]
    assert len(lines) == 1 + len(SCENARIOS)
    for record, line in zip(records, lines[1:], strict=True):  # same order as --json
        assert line.startswith(record["id"][:12])
        assert record["title"] in line
        assert f"{record['provider']}/{record['model']}" in line
        assert re.search(r"\s12\s+\d{4}-\d\d-\d\d \d\d:\d\d$", line), line
    limited = demo_copy.json("sessions", "list", "--json", "-n", "3")
    assert [r["id"] for r in limited] == [r["id"] for r in records[:3]]


def test_list_on_an_empty_home(cli: Cli) -> None:
    assert cli.sessions() == []
    assert "no sessions yet" in cli.ok("sessions", "list").stdout


def test_show_lists_every_carrier_with_kind_origin_size_and_digest(demo_copy: Cli) -> None:
    data = demo_copy.show(SIGNED)
    assert data["title"] == SIGNED and data["provider"]["id"] == "openrouter"
    turns = data["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant", "tool", "assistant"] * 3
    assert all(DIGEST.match(t["id"]) for t in turns)
    parts = [r for t in turns for r in t["reasoning"]]
    assert len(parts) == 12  # a readable and a signed part on each of the six answers
    assert {r["kind"] for r in parts} == {"text", "signed"}
    for r in parts:
        assert r["origin"] == "openai-chat:openrouter/anthropic/claude-sonnet-4.5"
        assert DIGEST.match(r["digest"])
        assert r["bytes"] > 0 and r["complete"] is True
        payload_bytes = sum(p["bytes"] for p in r["payloads"])
        assert r["bytes"] >= payload_bytes
        if r["kind"] == "signed":
            assert {p["field"] for p in r["payloads"]} >= {"signature"}
            assert all(DIGEST.match(p["digest"]) for p in r["payloads"])
    assert len({r["digest"] for r in parts}) == len(parts)
    assert data["verdicts"] == [] and data["fingerprints"] == [] and data["problems"] == []

    text = demo_copy.ok("sessions", "show", SIGNED).stdout
    for turn in turns:
        assert f"[{turn['seq']:>3}] {turn['role']}" in text
    for r in parts:
        [line] = [ln for ln in text.splitlines() if r["digest"][7:19] in ln]
        assert f"reasoning {r['kind']}" in line
        assert f" {r['bytes']} B " in line
        assert r["origin"] in line
        for p in r["payloads"]:
            assert f"{p['field']}={p['digest'][7:19]}" in line
    assert "learned verdicts: none" in text
    assert "rejected-signature fingerprints: 0" in text


def test_show_lists_native_payloads_outside_reasoning_parts(demo_copy: Cli) -> None:
    data = demo_copy.show(GEMINI)
    payloads = [(t["seq"], p) for t in data["turns"] for p in t["payloads"]]
    assert payloads, "Gemini thought signatures are stored as native records"
    text = demo_copy.ok("sessions", "show", GEMINI).stdout
    for _seq, p in payloads:
        assert DIGEST.match(p["digest"])
        assert f"digest={p['digest'][7:19]}" in text


def test_show_lists_the_learned_verdicts(demo_copy: Cli) -> None:
    data = demo_copy.show(RELAY)
    [verdict] = data["verdicts"]
    assert verdict["provider"] == "custom" and verdict["model"] == "relay-reasoner"
    assert "reasoning_content" in verdict["drop"]
    text = demo_copy.ok("sessions", "show", RELAY).stdout
    assert "learned verdicts:\n" in text
    [line] = [ln for ln in text.splitlines() if ln.startswith("  custom @")]
    assert "relay-reasoner" in line and "drop" in line and "reasoning_content" in line


def test_show_unknown_session_is_a_usage_error(demo_copy: Cli) -> None:
    result = demo_copy.run("sessions", "show", "nope-nope")
    assert result.returncode == 2 and "nope-nope" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("title", [SIGNED, GEMINI, RELAY])
def test_json_export_reimports_to_an_identical_session(demo_copy: Cli, tmp_path: Path,
                                                       title: str) -> None:
    original = demo_copy.show(title)
    exported = tmp_path / "export.json"
    demo_copy.ok("sessions", "export", title, "--format", "json", "-o", str(exported))
    new_id = demo_copy.ok("sessions", "import", str(exported)).stdout.strip()
    copy = demo_copy.show(new_id)
    assert new_id != original["id"] and copy["id"] == new_id
    # Turn ids are content digests of whole messages: equal ids, nothing lost or changed.
    assert [t["id"] for t in copy["turns"]] == [t["id"] for t in original["turns"]]
    for key in ("turns", "title", "provider", "verdicts", "fingerprints", "problems"):
        assert copy[key] == original[key], key


def test_import_keeps_fingerprints_and_show_lists_them(demo_copy: Cli, tmp_path: Path) -> None:
    data = json.loads(demo_copy.ok("sessions", "export", SIGNED).stdout)
    fingerprint = "sha256:" + "ab" * 32
    data["session"]["model_config"]["fingerprints"] = [fingerprint]
    path = tmp_path / "with-fingerprint.json"
    path.write_text(json.dumps(data))
    new_id = demo_copy.ok("sessions", "import", str(path)).stdout.strip()
    assert demo_copy.show(new_id)["fingerprints"] == [fingerprint]
    text = demo_copy.ok("sessions", "show", new_id).stdout
    assert "rejected-signature fingerprints: 1" in text and fingerprint in text


def test_import_rejects_a_foreign_file(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"format": "something-else", "messages": []}))
    result = cli.run("sessions", "import", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert cli.sessions() == []


def test_jsonl_and_markdown_exports_contain_every_turn(demo_copy: Cli) -> None:
    whole = json.loads(demo_copy.ok("sessions", "export", GEMINI).stdout)
    lines = demo_copy.ok("sessions", "export", GEMINI, "--format", "jsonl").stdout.splitlines()
    header, *messages = (json.loads(line) for line in lines)
    assert header == {"format": whole["format"], "session": whole["session"]}
    assert messages == whole["messages"]
    assert len(messages) == 12

    md = demo_copy.ok("sessions", "export", GEMINI, "--format", "md").stdout
    assert md.startswith(f"# {GEMINI}\n")
    assert md.count("\n## user") == 3 and md.count("\n## tool") == 3
    assert md.count("\n## assistant") == 6
    assert md.count("<summary>reasoning</summary>") == 6
    for message in messages:
        for part in message["parts"]:
            for key in ("text", "content", "name", "arguments"):
                if isinstance(part.get(key), str) and part[key]:
                    assert part[key] in md, (key, part[key])


def test_rm_asks_first(demo_copy: Cli) -> None:
    target = find(demo_copy, SIGNED)
    refused = demo_copy.run("sessions", "rm", target["id"])  # stdin is not a terminal
    assert refused.returncode == 2
    assert "--yes" in refused.stderr and "Traceback" not in refused.stderr
    assert target["id"] in {s["id"] for s in demo_copy.sessions()}

    env = clean_env(demo_copy.home)
    tty = PtyProcess([*ENTRY, "sessions", "rm", target["id"][:10]], env)
    try:
        tty.expect("Remove session")
        tty.expect("?")
        tty.line("n")
        assert tty.wait() == 0  # declining is an answer, not an error
        assert "kept" in tty.screen
    finally:
        tty.close()
    assert target["id"] in {s["id"] for s in demo_copy.sessions()}

    tty = PtyProcess([*ENTRY, "sessions", "rm", target["id"][:10]], env)
    try:
        tty.expect("Remove session")
        tty.expect("?")
        tty.line("y")
        assert tty.wait() == 0
        assert f"removed {target['id']}" in tty.screen
    finally:
        tty.close()
    assert target["id"] not in {s["id"] for s in demo_copy.sessions()}


def test_rm_yes_removes_without_asking(demo_copy: Cli) -> None:
    target = find(demo_copy, RELAY)
    result = demo_copy.ok("sessions", "rm", "--yes", RELAY)
    assert f"removed {target['id']}" in result.stdout
    remaining = demo_copy.sessions()
    assert len(remaining) == len(SCENARIOS) - 1 and target["id"] not in {s["id"] for s in remaining}
    gone = demo_copy.run("sessions", "show", target["id"])
    assert gone.returncode == 2
    assert demo_copy.run("sessions", "rm", "-y", target["id"]).returncode == 2
