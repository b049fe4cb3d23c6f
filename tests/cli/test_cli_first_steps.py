"""What a new user trips on first (issue 46 item 7): an unset key variable, empty piped stdin,
compacting a kept demo session, and the demo's route count in its help, the README and the docs'
getting-started page."""

from __future__ import annotations

import re
from pathlib import Path

from cli_support import ENTRY, Cli, PtyProcess, seed_sessions

from thoughtline.cli.demo import SCENARIOS, in_words

ROOT = Path(__file__).resolve().parents[2]
UNSET = "DEEPSEEK_API_KEY is not set: export it"


def test_an_unset_key_variable_is_named_before_anything_starts(cli: Cli) -> None:
    one_shot = cli.run("chat", "--provider", "deepseek", "-p", "hello")
    assert one_shot.returncode == 2, one_shot
    assert UNSET in one_shot.stderr and "--api-key-env" in one_shot.stderr
    assert "Traceback" not in one_shot.stderr
    other = cli.run("chat", "--provider", "deepseek", "--api-key-env", "MY_DS_KEY", "-p", "hi")
    assert other.returncode == 2 and "MY_DS_KEY is not set" in other.stderr
    # Interactive: refused before the prompt opens, not after the first message is typed.
    tty = PtyProcess([*ENTRY, "chat", "--provider", "deepseek"], cli.environ())
    try:
        assert tty.wait() == 2
        assert UNSET in tty.screen and "(/help)" not in tty.screen
    finally:
        tty.close()
    assert cli.sessions() == []  # nothing stored


def test_resuming_a_session_whose_key_is_unset_names_the_variable(cli: Cli) -> None:
    [session] = seed_sessions(cli.home, 1)
    result = cli.run("chat", "-r", session[:12], "-p", "again")
    assert result.returncode == 2 and UNSET in result.stderr, result
    assert len(cli.show(session)["turns"]) == 2  # untouched


def test_empty_piped_stdin_is_a_usage_error(cli: Cli) -> None:
    for piped in ("", "  \n\n"):
        result = cli.run("chat", "--provider", "demo", input=piped)
        assert result.returncode == 2, result
        assert "standard input was empty" in result.stderr
        assert "session" not in result.stdout  # no header naming a session never stored
    assert cli.sessions() == []
    # With a prompt, empty stdin adds nothing and the prompt is sent.
    sent = cli.ok("chat", "--provider", "demo", "-p", "hello", input="")
    assert "hello" in sent.stdout


def test_sessions_compact_works_on_a_kept_demo_session(demo_copy: Cli) -> None:
    """The demo's emulators stopped when it exited: compact starts a fresh one of the session's
    route to summarize on, as ``chat -r`` does."""
    for label in ("deepseek (must-echo)", "anthropic (signed thinking)"):
        title = f"demo: {label}"
        result = demo_copy.json("sessions", "compact", title, "--keep", "1", "--json")
        assert result["compacted"] is True, result
        assert result["turns_after"] < result["turns_before"]
    again = demo_copy.ok("chat", "-r", "demo: deepseek (must-echo)", "-p", "and now?")
    assert "now?" in again.stdout + again.stderr


def test_demo_help_and_readme_count_the_routes_the_demo_runs(cli: Cli) -> None:
    routes = in_words(len(SCENARIOS))
    help_text = " ".join(cli.ok("demo", "--help").stdout.split())
    assert f"on {routes} emulated routes (Chat Completions, Anthropic, " in help_text
    assert "Gemini Interactions" in help_text  # every API a scenario runs on is named
    chat_routes = sum(s.api == "openai-chat" for s in SCENARIOS)
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())
        said = re.search(r"The demo runs a tool-calling conversation on (\w+) emulated routes — "
                         r"(\w+) Chat Completions routes", text)
        assert said is not None, page.name
        assert said.groups() == (routes, in_words(chat_routes)), page.name
