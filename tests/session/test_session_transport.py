"""Transport through a session: retries with backoff, timeouts, errors that say what happened,
and authentication per preset.

Failures are injected in a loopback emulator (``fail_next``, ``chunk_delay``), or come from a
closed port / a listener that never answers. What went over the wire is read from the emulator's
record; the session must be intact after every failure (nothing stored for the failed turn).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from session_support import CASE_BY_ID, provider_for, run, stored_dumps

from thoughtline import (
    Done,
    ProviderError,
    Session,
    ThoughtlineError,
    TurnOptions,
    UsageError,
    config,
    open_store,
)
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport, TransportConfig
from thoughtline.transport import http as http_module

DEEPSEEK = CASE_BY_ID["deepseek"]
FAST = TransportConfig(max_retries=2, backoff_base=0.001, backoff_cap=0.05)
PROBE = httpx.Client(timeout=5.0)  # one client: building one costs more than a loopback request


@pytest.fixture
def emu(pool: Any) -> Iterator[ChatEmulator]:
    """The deepseek emulator of this module; fails if a test leaves an injected failure unused."""
    emulator = pool.get("deepseek", tag="transport")
    emulator.chunk_delay = 0.0
    yield emulator
    emulator.chunk_delay = 0.0
    probe = len(emulator.received)
    PROBE.post(f"{emulator.base_url}/chat/completions", headers={"authorization": "Bearer probe"},
               json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "ok?"}]})
    assert emulator.received[probe].status == 200, "a queued failure was left unused"


async def _turn(home: Path, prov: config.ProviderConfig, transport_config: TransportConfig, *,
                stream: bool = True, client: httpx.AsyncClient | None = None,
                ) -> tuple[Session, Done | ThoughtlineError]:
    """A new session and one turn through a transport configured for the test."""
    store = open_store(None, home)
    transport = HttpTransport(transport_config, client=client)
    try:
        session = Session.create(store, prov, transport=transport)
        try:
            return session, await session.send("How warm is it today?",
                                               TurnOptions(stream=stream))
        except ThoughtlineError as exc:
            return session, exc
    finally:
        await transport.aclose()
        store.close()


def _statuses(emu: ChatEmulator, start: int) -> list[int]:
    return [r.status for r in emu.received[start:]]


def _history(home: Path, session: Session) -> list[bytes]:
    return stored_dumps(home, session.id)


# --- retries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_429_with_retry_after_zero_is_retried_at_once(emu: ChatEmulator, tmp_path: Path,
                                                      stream: bool) -> None:
    for _ in range(2):
        emu.fail_next(429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                      headers={"retry-after": "0"})
    start = len(emu.received)
    # A backoff that ignored Retry-After would sleep for seconds with this base. What the
    # transport slept is recorded (an event), not measured on the wall clock.
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float) -> None:
        slept.append(delay)
        await real_sleep(0)

    slow = TransportConfig(max_retries=2, backoff_base=10.0, backoff_cap=20.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(http_module, "_sleep", recording_sleep)
        session, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), slow,
                                     stream=stream))
    assert isinstance(outcome, Done), outcome
    assert slept == [0.0, 0.0]
    assert _statuses(emu, start) == [429, 429, 200]
    bodies = {r.raw for r in emu.received[start:]}
    assert len(bodies) == 1  # the same request, resent unchanged
    assert session.transport.retries == 2
    assert len(_history(tmp_path, session)) == 2


def test_retry_after_seconds_are_honoured(emu: ChatEmulator, tmp_path: Path) -> None:
    emu.fail_next(503, headers={"retry-after": "0.4"})
    start = len(emu.received)
    began = time.monotonic()
    patient = TransportConfig(max_retries=2, backoff_base=0.001, backoff_cap=5.0)
    _, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), patient))
    assert isinstance(outcome, Done), outcome
    assert time.monotonic() - began >= 0.4  # our own backoff would have waited ~1 ms
    assert _statuses(emu, start) == [503, 200]


def test_unparseable_retry_after_falls_back_to_backoff(emu: ChatEmulator, tmp_path: Path) -> None:
    emu.fail_next(503, headers={"retry-after": "soon"})
    start = len(emu.received)
    _, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), FAST))
    assert isinstance(outcome, Done), outcome
    assert _statuses(emu, start) == [503, 200]


@pytest.mark.parametrize("status", [500, 502, 503])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_server_errors_are_retried_then_the_turn_succeeds(emu: ChatEmulator, tmp_path: Path,
                                                          status: int, stream: bool) -> None:
    emu.fail_next(status)
    emu.fail_next(status)
    start = len(emu.received)
    session, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), FAST, stream=stream))
    assert isinstance(outcome, Done), outcome
    assert _statuses(emu, start) == [status, status, 200]
    assert len(_history(tmp_path, session)) == 2


@pytest.mark.parametrize("max_retries", [0, 1, 3])
def test_retries_are_bounded_and_the_session_is_left_intact(emu: ChatEmulator, tmp_path: Path,
                                                            max_retries: int) -> None:
    for _ in range(max_retries + 1):
        emu.fail_next(503, {"error": {"message": "The engine is overloaded"}})
    start = len(emu.received)
    bounded = TransportConfig(max_retries=max_retries, backoff_base=0.001, backoff_cap=0.05)
    session, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), bounded))
    assert isinstance(outcome, ProviderError)
    assert outcome.status == 503 and outcome.retries == max_retries
    assert "The engine is overloaded" in str(outcome)
    assert _statuses(emu, start) == [503] * (max_retries + 1)
    assert _history(tmp_path, session) == [] and session.history == ()


# --- errors that say what happened --------------------------------------------------------------


def test_a_400_carries_status_route_provider_and_the_providers_message(emu: ChatEmulator,
                                                                       tmp_path: Path) -> None:
    message = "Model Not Exist: deepseek-nope is not a model you can use"
    emu.fail_next(400, {"error": {"message": message, "type": "invalid_request_error",
                                  "param": None, "code": "invalid_request_error"}})
    start = len(emu.received)
    session, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), FAST))
    assert isinstance(outcome, ProviderError)
    assert outcome.status == 400
    assert outcome.provider == "deepseek"
    assert outcome.route and outcome.route == session.route.row
    assert message in str(outcome) and "400" in str(outcome) and "deepseek" in str(outcome)
    assert message in outcome.body
    assert _statuses(emu, start) == [400]  # a client error is not retried
    assert _history(tmp_path, session) == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_connection_refused_names_the_url_and_keeps_the_session(tmp_path: Path,
                                                                stream: bool) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    prov = config.provider("deepseek", base_url=url)
    session, outcome = run(_turn(tmp_path, prov, FAST, stream=stream))
    assert isinstance(outcome, ProviderError)
    assert outcome.status is None
    assert f"{url}/chat/completions" in str(outcome)
    assert session.transport.attempts == FAST.max_retries + 1
    assert _history(tmp_path, session) == [] and session.history == ()


def test_streamed_read_timeout_is_a_clear_error(emu: ChatEmulator, tmp_path: Path) -> None:
    emu.chunk_delay = 2.0
    start = len(emu.received)
    quick = TransportConfig(read_timeout=0.2, max_retries=1, backoff_base=0.001)
    session, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), quick))
    assert isinstance(outcome, ThoughtlineError) and not isinstance(outcome, UsageError)
    # The message names the timer that fired: the 0.2 s read timeout, not the 2 s chunk gap.
    assert "read timeout" in str(outcome) and "0.2 s" in str(outcome)
    assert _statuses(emu, start) == [200]
    assert _history(tmp_path, session) == []


def test_whole_read_timeout_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as listener:  # accepts connections (kernel backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        quick = TransportConfig(read_timeout=0.2, max_retries=1, backoff_base=0.001)
        session, outcome = run(_turn(tmp_path, config.provider("deepseek", base_url=url), quick,
                                     stream=False))
    assert isinstance(outcome, ProviderError)
    assert "read timeout" in str(outcome) and url in str(outcome)
    # Issue 10: a POST that may have reached the model is not retried (it could be billed twice)
    assert session.transport.attempts == 1
    assert "not retried" in str(outcome)
    assert _history(tmp_path, session) == []


# --- authentication -----------------------------------------------------------------------------


def _authorization(emu: ChatEmulator, start: int) -> list[str | None]:
    return [r.headers.get("authorization") for r in emu.received[start:]]


def test_bearer_key_comes_from_the_presets_variable(emu: ChatEmulator, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-from-preset-variable")
    start = len(emu.received)
    _, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), FAST))
    assert isinstance(outcome, Done), outcome
    assert _authorization(emu, start) == ["Bearer sk-test-from-preset-variable"]


def test_api_key_env_names_another_variable(emu: ChatEmulator, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_DEEPSEEK_WORK_KEY", "sk-test-named-variable")
    prov = provider_for(DEEPSEEK, emu, key_env="MY_DEEPSEEK_WORK_KEY")
    assert prov.id == "deepseek" and prov.key_env == "MY_DEEPSEEK_WORK_KEY"
    start = len(emu.received)
    _, outcome = run(_turn(tmp_path, prov, FAST))
    assert isinstance(outcome, Done), outcome
    assert _authorization(emu, start) == ["Bearer sk-test-named-variable"]


def test_missing_key_for_a_hosted_url_is_a_usage_error_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    attempts: list[httpx.Request] = []

    def never(request: httpx.Request) -> httpx.Response:  # offline: nothing may be sent
        attempts.append(request)
        return httpx.Response(599)

    client = httpx.AsyncClient(transport=httpx.MockTransport(never))
    prov = config.provider("deepseek")  # the preset's hosted URL
    session, outcome = run(_turn(tmp_path, prov, FAST, client=client))
    assert isinstance(outcome, UsageError)
    assert "DEEPSEEK_API_KEY" in str(outcome)
    assert attempts == []
    assert _history(tmp_path, session) == []


def test_a_local_endpoint_needs_no_key(pool: Any, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    local = pool.get("local", auth=False)
    prov = config.provider("custom", base_url=local.base_url, model="local-reasoner")
    assert prov.key_env == "OPENAI_API_KEY"
    start = len(local.received)
    _, outcome = run(_turn(tmp_path, prov, FAST))
    assert isinstance(outcome, Done), outcome
    assert _authorization(local, start) == [None]


def test_a_rejected_key_is_a_provider_error_not_a_retry(emu: ChatEmulator, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)  # loopback: sent without a key
    start = len(emu.received)
    session, outcome = run(_turn(tmp_path, provider_for(DEEPSEEK, emu), FAST))
    assert isinstance(outcome, ProviderError) and outcome.status == 401
    assert "bearer token" in str(outcome).lower()
    assert _statuses(emu, start) == [401]
    assert _history(tmp_path, session) == []
