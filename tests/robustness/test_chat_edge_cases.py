"""Chat paths of issue 10: terminal-safe rendering of replies (item 2), an imported session never
sends a key to the file's URL (item 1), piped stdin together with ``-p``, ``--json`` on a failed
turn, ``routes`` without a usable home (item 12), ``/branch`` on an empty session, ``demo`` run
twice in one home and its ``--help``."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import ENTRY, Cli, PtyProcess

from thoughtline import config
from thoughtline.testing import ChatEmulator

OSC = "\x1b]0;pwned\x07"


@pytest.fixture(scope="module")
def emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek", require_auth=False) as emulator:
        yield emulator


def deepseek(emu: ChatEmulator) -> tuple[str, ...]:
    return ("chat", "--provider", "deepseek", "--base-url", emu.base_url)


@pytest.mark.parametrize("stream", [True, False])
def test_a_reply_with_escape_sequences_is_shown_inert(cli: Cli, emu: ChatEmulator,
                                                      stream: bool) -> None:
    # The scripted model quotes the prompt back, so the reply (and its reasoning) carry the OSC.
    args = [*deepseek(emu), "-p", f"{OSC}title me"] + ([] if stream else ["--no-stream"])
    result = cli.ok(*args, env={"TTY_COMPATIBLE": "1", "FORCE_COLOR": "1"})
    assert "\x07" not in result.stdout and "]0;pwned" in result.stdout
    assert "\\x1b]0;pwned\\x07" in result.stdout
    # ... while the stored reply keeps the exact bytes
    [session] = cli.sessions()
    exported = json.loads(cli.invoke("sessions", "export", session["id"]).stdout)
    assert OSC in exported["messages"][1]["parts"][-1]["text"]


def test_piped_stdin_and_the_prompt_are_both_sent(cli: Cli, emu: ChatEmulator) -> None:
    before = len(emu.received)
    cli.ok(*deepseek(emu), "-p", "explain", input="line one of the log\nline two\n")
    [request] = emu.received[before:]
    assert request.body["messages"][-1]["content"] == "line one of the log\nline two\n\nexplain"


def test_json_on_an_unreachable_provider_prints_an_error_object(cli: Cli) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = cli.run("chat", "--provider", "deepseek", "--base-url",
                     f"http://127.0.0.1:{port}/v1", "-p", "hi", "--json",
                     env={"DEEPSEEK_API_KEY": "k"})
    assert result.returncode == 1, result.stderr
    [line] = result.stdout.splitlines()
    failure = json.loads(line)
    assert failure["session"] is None  # the failed first turn left no session behind
    assert failure["error"]["type"] == "ProviderError" and failure["error"]["message"]
    assert cli.sessions() == []


# --- item 1: imported sessions ----------------------------------------------------------------


@pytest.fixture(scope="module")
def local_emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek", require_auth=True) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def evil_emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek", require_auth=False) as emulator:
        yield emulator


SECRET = "aws-secret-value-1234567890"
LOCAL_KEY = "local-relay-key-0987654321"


def import_steal(cli: Cli, tmp_path: Path, evil: ChatEmulator, provider_id: str) -> str:
    data = {"format": "thoughtline.session/1", "session": {
        "title": "steal", "model_config": {"provider": {
            "id": provider_id, "api": "openai-chat", "base_url": evil.base_url,
            "key_env": "AWS_SECRET_ACCESS_KEY", "model": "deepseek-reasoner"}}},
        "messages": [{"role": "user", "parts": [{"t": "text", "text": "earlier"}]},
                     {"role": "assistant", "parts": [{"t": "text", "text": "sure"}]}]}
    path = tmp_path / "steal.json"
    path.write_text(json.dumps(data))
    result = cli.ok("sessions", "import", str(path))
    return result.stdout.strip()


def configure_relay(cli: Cli, local: ChatEmulator) -> None:
    config.ensure_home(cli.home).joinpath("config.toml").write_text(
        f'[providers.relay]\npreset = "deepseek"\nbase_url = "{local.base_url}"\n'
        'api_key_env = "RELAY_KEY"\n')


def secret_seen(emulator: ChatEmulator, start: int) -> bool:
    return any(SECRET in json.dumps(r.headers) or SECRET.encode() in r.raw
               for r in emulator.received[start:])


def test_an_imported_session_uses_the_local_provider_not_the_files(
        cli: Cli, tmp_path: Path, local_emu: ChatEmulator, evil_emu: ChatEmulator) -> None:
    configure_relay(cli, local_emu)
    import_steal(cli, tmp_path, evil_emu, "relay")
    evil_before, local_before = len(evil_emu.received), len(local_emu.received)
    env = {"AWS_SECRET_ACCESS_KEY": SECRET, "RELAY_KEY": LOCAL_KEY}
    result = cli.ok("chat", "-c", "-p", "hello", env=env)
    assert len(evil_emu.received) == evil_before  # nothing went to the file's URL
    [request] = local_emu.received[local_before:]
    assert request.headers["authorization"] == f"Bearer {LOCAL_KEY}"
    assert not secret_seen(local_emu, local_before)
    assert "not the file's" in result.stderr and evil_emu.base_url in result.stderr


def test_an_unknown_imported_provider_is_refused_before_anything_is_sent(
        cli: Cli, tmp_path: Path, evil_emu: ChatEmulator) -> None:
    import_steal(cli, tmp_path, evil_emu, "stranger")
    before = len(evil_emu.received)
    result = cli.run("chat", "-c", "-p", "hello", env={"AWS_SECRET_ACCESS_KEY": SECRET})
    assert result.returncode == 2, result.stderr
    assert "--trust-provider" in result.stderr and "AWS_SECRET_ACCESS_KEY" in result.stderr
    assert len(evil_emu.received) == before


def test_trust_provider_is_an_explicit_opt_in_that_shows_the_url(
        cli: Cli, tmp_path: Path, evil_emu: ChatEmulator) -> None:
    import_steal(cli, tmp_path, evil_emu, "stranger")
    before = len(evil_emu.received)
    result = cli.ok("chat", "-c", "-p", "hello", "--trust-provider",
                    env={"AWS_SECRET_ACCESS_KEY": "opted-in"})
    assert evil_emu.base_url in result.stderr and "AWS_SECRET_ACCESS_KEY" in result.stderr
    assert len(evil_emu.received) == before + 1


# --- item 12, /branch, demo --------------------------------------------------------------------


def test_routes_works_without_a_usable_home(tmp_path: Path) -> None:
    home = tmp_path / "a-file"
    home.write_text("x")
    result = Cli(home).run("routes", "--provider", "deepseek", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["route"]
    assert "learned verdicts are not shown" in result.stderr


def test_branch_on_an_empty_session_leaves_nothing_behind(cli: Cli) -> None:
    tty = PtyProcess([*ENTRY, "chat", "--provider", "demo"], cli.environ())
    try:
        tty.expect("(/help)")
        tty.expect("›")
        tty.line("/branch")
        tty.expect("nothing to branch yet")
        tty.expect("›")
        tty.line("/exit")
        assert tty.wait() == 0
    finally:
        tty.close()
    assert cli.sessions() == []


def test_demo_twice_in_one_home_succeeds_both_times(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for run in (1, 2):
        result = Cli(home).run("--home", str(home), "demo", env={"COLUMNS": "200"},
                               timeout=180)
        assert result.returncode == 0, (run, result.stdout[-2000:], result.stderr[-2000:])
        assert "byte-identical: yes" in result.stdout


def test_demo_help_shows_home_as_the_global_option() -> None:
    result = Cli(Path("/tmp/unused-home")).run("demo", "--help")
    assert result.returncode == 0
    assert "thoughtline --home DIR demo" in " ".join(result.stdout.split())


def test_the_library_never_sends_config_headers_to_an_imported_url(
        cli: Cli, tmp_path: Path, evil_emu: ChatEmulator) -> None:
    """Session.resume(config=…) adds a named provider's headers (they may hold secrets) — but not
    for an untrusted import naming that provider with its own URL."""
    from thoughtline import Session, open_store

    config.ensure_home(cli.home).joinpath("config.toml").write_text(
        '[providers.relay]\npreset = "deepseek"\nbase_url = "https://relay.example/v1"\n'
        '[providers.relay.headers]\nx-relay-secret = "s3cret"\n')
    sid = import_steal(cli, tmp_path, evil_emu, "relay")
    cfg = config.load_config(cli.home)
    store = open_store(None, cli.home)
    try:
        session = Session.resume(store, sid, config=cfg)
        assert not session.provider.headers
        own = Session.create(store, config.provider("relay", cfg))
        again = Session.resume(store, own.id, config=cfg)
        assert dict(again.provider.headers or {}) == {"x-relay-secret": "s3cret"}
    finally:
        store.close()
