"""Item 7: providers that hang or refuse. Timeouts are configurable per provider; a POST that may
have reached the model is never retried; a slow answer and a Retry-After wait are said, not
silent. Assertions are on counts and on what was said, never on elapsed time."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli

from thoughtline import config
from thoughtline.errors import ConfigError, ProviderError
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport, TransportConfig
from thoughtline.transport import http as http_module
from thoughtline.transport.http import Target


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A server that accepts connections (kernel backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1/chat/completions"


def post(transport: HttpTransport, url: str, *, stream: bool = False) -> BaseException:
    async def go() -> None:
        target = Target(url=url, provider="deepseek", route="default")
        try:
            if stream:
                async for _ in transport.stream_events(target, b"{}"):
                    pass
            else:
                await transport.post_json(target, b"{}")
        finally:
            await transport.aclose()

    try:
        asyncio.run(go())
    except BaseException as exc:  # the outcome is what is tested
        return exc
    raise AssertionError("the request succeeded")


def test_a_read_timeout_is_not_retried(silent_url: str) -> None:
    transport = HttpTransport(TransportConfig(read_timeout=0.2, max_retries=2,
                                              backoff_base=0.001))
    error = post(transport, silent_url)
    assert isinstance(error, ProviderError)
    assert transport.attempts == 1 and transport.retries == 0
    assert "read timeout" in str(error) and "may have reached the model" in str(error)


def test_a_refused_connection_is_still_retried() -> None:
    transport = HttpTransport(TransportConfig(max_retries=2, backoff_base=0.001))
    error = post(transport, closed_url())
    assert isinstance(error, ProviderError)
    assert transport.attempts == 3  # never reached anyone: safe to try again


def test_the_first_byte_timeout_bounds_a_silent_stream(silent_url: str) -> None:
    transport = HttpTransport(TransportConfig(read_timeout=60, first_byte_timeout=0.3,
                                              max_retries=2))
    error = post(transport, silent_url, stream=True)
    assert isinstance(error, ProviderError)
    assert "first-byte timeout" in str(error) and "0.3 s" in str(error)
    assert transport.attempts == 1


def test_a_slow_answer_is_said_once_per_attempt(silent_url: str) -> None:
    said: list[str] = []
    transport = HttpTransport(TransportConfig(first_byte_timeout=0.5, waiting_after=0.05,
                                              max_retries=0), on_wait=said.append)
    post(transport, silent_url, stream=True)
    assert said == ["waiting for deepseek… (Ctrl-C to stop)"]


def test_retry_after_is_a_countdown(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float) -> None:
        slept.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(http_module, "_sleep", recording_sleep)
    said: list[str] = []
    with ChatEmulator("deepseek", require_auth=False) as emu:
        emu.fail_next(429, headers={"retry-after": "3"})
        transport = HttpTransport(TransportConfig(max_retries=1), on_wait=said.append)
        body = b'{"model": "deepseek-reasoner", "messages": [{"role": "user", "content": "x"}]}'

        async def go() -> None:
            try:
                await transport.post_json(Target(url=f"{emu.base_url}/chat/completions",
                                                 provider="deepseek"), body)
            finally:
                await transport.aclose()

        asyncio.run(go())
    assert slept == [1.0, 1.0, 1.0]
    assert [s.split("retrying in ")[1].split(" ")[0] for s in said] == ["3", "2", "1"]
    assert all("Retry-After" in s and "Ctrl-C" in s for s in said)


def test_timeouts_come_from_config_toml(tmp_path: Path) -> None:
    tmp_path.joinpath("config.toml").write_text(
        '[providers.slowpoke]\npreset = "deepseek"\nconnect_timeout = 2\n'
        'read_timeout = 45.5\nfirst_byte_timeout = 20\n')
    prov = config.provider("slowpoke", config.load_config(tmp_path))
    assert prov.timeouts() == {"connect_timeout": 2.0, "read_timeout": 45.5,
                               "first_byte_timeout": 20.0}
    assert config.ProviderConfig.from_json(prov.to_json()) == prov  # kept across a resume
    from thoughtline import Session, open_store

    store = open_store(tmp_path / "state.db", tmp_path)
    try:
        transport = Session.create(store, prov).transport
        assert (transport.config.connect_timeout, transport.config.read_timeout,
                transport.config.first_byte_timeout) == (2.0, 45.5, 20.0)
    finally:
        store.close()
    tmp_path.joinpath("config.toml").write_text(
        '[providers.bad]\npreset = "deepseek"\nread_timeout = "soon"\n')
    with pytest.raises(ConfigError, match="read_timeout must be a number of seconds"):
        config.load_config(tmp_path)


def test_the_cli_says_it_is_waiting(cli: Cli, silent_url: str) -> None:
    base = silent_url.removesuffix("/chat/completions")
    config.ensure_home(cli.home).joinpath("config.toml").write_text(
        f'[providers.hung]\npreset = "deepseek"\nbase_url = "{base}"\n'
        "first_byte_timeout = 4\n")
    result = cli.run("chat", "--provider", "hung", "-p", "hello?")
    assert result.returncode == 1, result.stderr
    assert "waiting for hung… (Ctrl-C to stop)" in result.stderr
    assert "first-byte timeout" in result.stderr
    [record] = cli.log_records()
    assert record["outcome"] == "error"
