"""The top-level command: help, version, usage errors, and the lazy fast path (docs/cli.md)."""

from __future__ import annotations

import subprocess
import sys

from cli_support import Cli

COMMANDS = ("chat", "sessions", "logs", "routes", "demo")
CHAT_OPTIONS = ("--provider", "--base-url", "--model", "--api-key-env", "--resume", "-r",
                "--continue", "-c", "--prompt", "-p", "--json", "--no-stream",
                "--show-reasoning", "--hide-reasoning", "--title")


def test_help_lists_every_command(cli: Cli) -> None:
    result = cli.ok("--help")
    listed = result.stdout.split("Commands:")[1]
    for name in COMMANDS:
        assert f"\n  {name} " in listed, name
    assert "--home" in result.stdout
    assert cli.ok("-h").stdout == result.stdout


def test_version(cli: Cli) -> None:
    from importlib.metadata import version

    assert version("thoughtline") in cli.ok("--version").stdout


def test_chat_help_documents_the_contract(cli: Cli) -> None:
    out = cli.ok("chat", "--help").stdout
    for option in CHAT_OPTIONS:
        assert option in out, option


def test_sessions_help_lists_subcommands(cli: Cli) -> None:
    out = cli.ok("sessions", "--help").stdout
    for name in ("list", "show", "export", "import", "rm"):
        assert f"  {name} " in out, name
    out = cli.ok("logs", "--help").stdout
    for option in ("--follow", "-f", "--session", "--json"):
        assert option in out, option


def test_unknown_command_and_bad_option_are_usage_errors(cli: Cli) -> None:
    for args in (("frobnicate",), ("chat", "--no-such-flag"), ("sessions", "export", "x",
                                                                "--format", "pdf")):
        result = cli.run(*args)
        assert result.returncode == 2, (args, result)
        assert "Traceback" not in result.stderr
        assert result.stderr.strip()


def test_help_does_not_import_the_heavy_modules() -> None:
    """``--help`` is answered from the command table: no httpx, rich, prompt_toolkit, starlette."""
    probe = ("import sys\n"
             "from thoughtline.cli.main import cli\n"
             "try:\n"
             "    cli.main(['--help'], standalone_mode=False)\n"
             "finally:\n"
             "    heavy = ('httpx', 'rich', 'prompt_toolkit', 'starlette', 'uvicorn', 'sqlite3')\n"
             "    print('LOADED', sorted(m for m in heavy if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=60, check=True)
    assert "LOADED []" in result.stdout, result.stdout
