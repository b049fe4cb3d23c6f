"""Item 2: provider- and file-controlled text never reaches a terminal as control sequences.

Stored bytes stay exact (JSON export and ``show --json`` keep them); every human rendering shows
them escaped.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Cli

from thoughtline import config
from thoughtline.messages import Message, Origin, Reasoning, Text, user
from thoughtline.requestlog import RequestLog
from thoughtline.store import open_store

OSC_TITLE = "\x1b]0;pwned\x07"  # sets the terminal's title
SGR_RED = "\x1b[31m"
C1_CSI = "\x9b2J"  # 8-bit CSI: clear screen
BIDI = "\u202e"  # right-to-left override
HOSTILE = f"{OSC_TITLE}{SGR_RED}answer{C1_CSI}\r{BIDI}done\x1b[0m"
ACTIVE = ("\x1b", "\x9b", "\x07", "\r", "\u202e")


def assert_inert(text: str) -> None:
    for char in ACTIVE:
        assert char not in text, (char, text)


def seed_hostile(home: Path) -> str:
    prov = config.presets()["deepseek"]
    origin = Origin(api=prov.api, provider=prov.id, host="api.example", model=prov.model)
    store = open_store(config.ensure_home(home) / "state.db", home)
    try:
        record = store.create_session(title=f"t{OSC_TITLE}itle", model_config={
            "provider": prov.to_json(), "verdicts": [], "fingerprints": []})
        answer = Message(role="assistant", origin=origin, parts=(
            Reasoning(kind="text", text=f"think {SGR_RED}red", origin=origin),
            Text(text=HOSTILE)))
        store.append(record.id, [user(f"q{OSC_TITLE}"), answer])
        return record.id
    finally:
        store.close()


def test_safe_escapes_every_terminal_control_and_keeps_text() -> None:
    from thoughtline.termsafe import safe, safe_line

    shown = safe(HOSTILE + "\nline two\ttab")
    assert_inert(shown)
    assert "\\x1b]0;pwned\\x07" in shown and "\\x9b2J" in shown and "\\u202e" in shown
    assert shown.endswith("\nline two\ttab")
    assert safe("plain ü 日本 😀") == "plain ü 日本 😀"
    assert safe("bad \udcff byte") == "bad \\udcff byte"
    assert safe_line("a\nb\tc") == "a\\nb c"


def test_sessions_list_show_and_md_export_are_inert(cli: Cli) -> None:
    sid = seed_hostile(cli.home)
    for args in (("sessions", "list"), ("sessions", "show", sid),
                 ("sessions", "export", sid, "--format", "md")):
        result = cli.invoke(*args)
        assert result.returncode == 0, result.stderr
        assert_inert(result.stdout + result.stderr)
    md = cli.invoke("sessions", "export", sid, "--format", "md").stdout
    assert "\\x1b]0;pwned\\x07" in md and "answer" in md


def test_stored_bytes_stay_exact_in_json_forms(cli: Cli) -> None:
    sid = seed_hostile(cli.home)
    exported = json.loads(cli.invoke("sessions", "export", sid).stdout)
    assert exported["messages"][1]["parts"][1]["text"] == HOSTILE
    assert exported["session"]["title"] == f"t{OSC_TITLE}itle"
    shown = cli.show(sid)
    assert shown["title"] == f"t{OSC_TITLE}itle"


def test_ambiguity_errors_show_titles_inert(cli: Cli) -> None:
    seed_hostile(cli.home)
    seed_hostile(cli.home)
    result = cli.run("sessions", "show", f"t{OSC_TITLE}itle")
    assert result.returncode == 2
    assert "ambiguous" in result.stderr
    assert_inert(result.stderr)


def test_human_log_lines_are_inert(cli: Cli) -> None:
    RequestLog(cli.home / "logs").write({
        "session": "s" * 32, "route": "r", "api": "openai-chat", "provider": f"p{OSC_TITLE}",
        "host": f"h{SGR_RED}", "model": f"m{C1_CSI}", "status": 200, "outcome": "ok"})
    result = cli.invoke("logs")
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout)
    assert "\\x1b]0;pwned" in result.stdout


def test_routes_shows_an_imported_verdict_reason_inert(cli: Cli, tmp_path: Path) -> None:
    prov = config.presets()["deepseek"]
    from thoughtline.codecs.registry import resolve

    route = resolve(prov.api, prov.route_id, prov.base_url, prov.model)
    data = {"format": "thoughtline.session/1", "session": {"title": "v", "model_config": {
        "provider": prov.to_json(), "verdicts": [
            {"provider": route.provider, "host": route.host, "model": route.model,
             "drop": ["reasoning"], "reason": f"bad {OSC_TITLE} reason"}]}},
        "messages": []}
    path = tmp_path / "v.json"
    path.write_text(json.dumps(data))
    sid = cli.ok("sessions", "import", str(path)).stdout.strip()
    result = cli.ok("routes", "--provider", "deepseek", "--session", sid)
    assert "bad \\x1b]0;pwned\\x07 reason" in result.stdout
    assert_inert(result.stdout)
