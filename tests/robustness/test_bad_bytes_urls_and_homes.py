"""Items 6, 8 and 12: bad bytes, bad URLs and unusable homes are clear errors, not tracebacks.

Non-UTF-8 stdin, argv and ``config.toml``; an empty ``state.db``; ``--base-url`` checked before
anything is sent (exit 2); a home that cannot be created or written.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_support import ENTRY, Cli

from thoughtline import config
from thoughtline.errors import ConfigError, UsageError


def run_bytes(cli: Cli, args: list[bytes], stdin: bytes | None = None
              ) -> subprocess.CompletedProcess[bytes]:
    env = {k.encode(): v.encode() for k, v in cli.environ().items()}
    return subprocess.run([*(a.encode() for a in ENTRY), *args], input=stdin,
                          capture_output=True, env=env, timeout=60, check=False,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def test_non_utf8_stdin_is_a_usage_error(cli: Cli) -> None:
    result = run_bytes(cli, [b"chat", b"--provider", b"demo"], stdin=b"caf\xe9 au lait\n")
    assert result.returncode == 2, result.stderr
    assert b"Traceback" not in result.stderr
    assert b"standard input is not UTF-8" in result.stderr


@pytest.mark.parametrize("args", [
    [b"chat", b"--provider", b"demo", b"-p", b"caf\xe9"],
    [b"chat", b"--provider", b"demo", b"--title", b"\xff", b"-p", b"hi"],
    [b"sessions", b"show", b"caf\xe9"],
    [b"routes", b"--model", b"\xfe"],
])
def test_non_utf8_argv_is_a_usage_error(cli: Cli, args: list[bytes]) -> None:
    result = run_bytes(cli, args)
    assert result.returncode == 2, result.stderr
    assert b"Traceback" not in result.stderr
    assert b"is not valid UTF-8" in result.stderr


def test_non_utf8_config_toml(tmp_path: Path) -> None:
    tmp_path.joinpath("config.toml").write_bytes(b'[defaults]\nprovider = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        config.load_config(tmp_path)


def test_non_utf8_config_toml_from_the_cli(cli: Cli) -> None:
    config.ensure_home(cli.home).joinpath("config.toml").write_bytes(b"x = '\xff'\n")
    result = cli.run("chat", "-p", "hi")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "not UTF-8" in result.stderr


def test_an_empty_state_db_is_reported(cli: Cli) -> None:
    config.ensure_home(cli.home).joinpath("state.db").write_bytes(b"")
    result = cli.run("sessions", "list")
    assert result.returncode == 0, result.stderr
    assert "empty (0-byte)" in result.stderr and "backup" in result.stderr
    again = cli.run("sessions", "list")
    assert "empty (0-byte)" not in again.stderr  # it is a real (empty) store now


@pytest.mark.parametrize("url", ["garbage", "http://[::1/v1", "http://127.0.0.1:99999/v1",
                                 "ftp://example.com/v1", "http:///v1"])
def test_bad_base_urls_are_usage_errors_before_anything_is_sent(cli: Cli, url: str) -> None:
    with pytest.raises(UsageError, match="invalid --base-url"):
        config.provider("deepseek", base_url=url)
    result = cli.run("chat", "--provider", "deepseek", "--base-url", url, "-p", "hi",
                     env={"DEEPSEEK_API_KEY": "k"})
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "invalid --base-url" in result.stderr
    assert not (cli.home / "logs").exists()  # nothing was sent


def test_good_base_urls_pass() -> None:
    for url in ("https://api.example.com/v1", "http://127.0.0.1:8080", "http://[::1]:80/v1"):
        assert config.check_base_url(url) == url


@pytest.mark.parametrize("kind", ["file", "proc"])
def test_an_unusable_home_is_a_clear_message(tmp_path: Path, kind: str) -> None:
    from thoughtline.errors import HomeError

    if kind == "file":
        home = tmp_path / "not-a-dir"
        home.write_text("x")
    else:
        home = Path("/proc/thoughtline-test/home")  # not creatable, not even by root
    with pytest.raises(HomeError):
        config.ensure_home(home)
    cli = Cli(home)
    for args in (("sessions", "list"), ("logs",), ("--home", str(home), "sessions", "list")):
        result = cli.run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr
        assert str(home) in result.stderr
        # click checks --home itself ("is a file"); everything else gets thoughtline's message
        assert "thoughtline home" in result.stderr or "is a file" in result.stderr
    assert cli.run("--help").returncode == 0
    assert cli.run("demo", "--help").returncode == 0


def test_a_read_only_home_is_reported(tmp_path: Path) -> None:
    from thoughtline.errors import HomeError

    if os.geteuid() == 0:  # root writes anywhere: the check is the access() call, test it
        home = tmp_path / "ro"
        home.mkdir()
        real = os.access
        try:
            os.access = lambda path, mode: False if Path(path) == home else real(path, mode)
            with pytest.raises(HomeError, match="not writable"):
                config.ensure_home(home)
        finally:
            os.access = real
        return
    home = tmp_path / "ro"
    home.mkdir(mode=0o500)
    with pytest.raises(HomeError, match="not writable"):
        config.ensure_home(home)
