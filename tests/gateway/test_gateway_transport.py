"""Issue 23, items 1, 2 and 9: the gateway's connections to its upstreams.

A client that gives up before the answer starts cancels the upstream request and leaves no
connection checked out; each upstream has its own pool, timeouts and a short wait for a free
connection (a full pool is a 503 naming the upstream, not a hang), so one hung upstream starves
no other; an upstream's non-JSON 2xx and its 401/403 are 502s, the latter naming the key's
variable. Waits are bounded by timeouts; nothing asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from slow_upstream import SlowUpstream, wait_for
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from thoughtline.gateway import upstreams
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.store import SQLiteStore
from thoughtline.testing.loopback import LoopbackServer

KEY_ENV = "TL_GATEWAY_TEST_UPSTREAM_KEY"


def upstream_toml(name: str, base_url: str, extra: str = "") -> str:
    return (f'[[upstream]]\nname = "{name}"\nprovider = "custom"\nbase_url = "{base_url}"\n'
            f'api_key_env = "{KEY_ENV}"\n{extra}\n')


@contextmanager
def gateway(text: str, tmp: Path) -> Iterator[tuple[Gateway, str]]:
    """A gateway for ``text`` (gateway.toml) on loopback: (the gateway, its chat URL)."""
    store = SQLiteStore(tmp / "state.db")
    app = Gateway(parse(tomllib.loads(text)), store, environ={})
    server = LoopbackServer(create_app(app), name="gateway").start()
    try:
        yield app, server.origin + "/v1/chat/completions"
    finally:
        server.stop()
        store.close()


def ask(url: str, model: str, *, stream: bool = False, timeout: float = 30.0,
        text: str = "hi") -> httpx.Response:
    body = {"model": model, "stream": stream, "messages": [{"role": "user", "content": text}]}
    return httpx.post(url, json=body, timeout=timeout)


def give_up(url: str, model: str, *, stream: bool, after: float, text: str = "hi") -> None:
    """A client whose own timeout ends the request before the answer starts."""
    with pytest.raises(httpx.TimeoutException):
        ask(url, model, stream=stream, timeout=after, text=text)


def in_use(app: Gateway) -> dict[str, int]:
    return {name: state.in_use for name, state in app.engines.pools().items()}


@pytest.mark.parametrize("stream", [False, True])
def test_clients_that_give_up_before_the_answer_leave_no_connection_checked_out(
        tmp_path: Path, stream: bool) -> None:
    with SlowUpstream(delay=60) as slow, gateway(upstream_toml("slow", slow.base_url),
                                                 tmp_path) as (app, url):
        for index in range(5):
            give_up(url, "slow/m", stream=stream, after=0.3, text=f"question {index}")
        # The upstream saw each request given up (its connection closed before an answer) ...
        assert wait_for(lambda: slow.abandoned == 5), (slow.requests, slow.abandoned)
        assert wait_for(lambda: slow.open == 0)
        # ... and the gateway's pool holds none of them.
        assert wait_for(lambda: in_use(app) == {"slow": 0}), app.engines.pools()
        assert slow.answered == 0


def test_each_upstream_has_its_own_pool_and_a_full_one_is_a_503_not_a_hang(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstreams, "POOL_WAIT_SECONDS", 0.2)
    with SlowUpstream(delay=None) as hung, SlowUpstream(delay=0) as fine:
        text = (upstream_toml("hung", hung.base_url, "max_connections = 1")
                + upstream_toml("fine", fine.base_url, "max_connections = 1"))
        with gateway(text, tmp_path) as (app, url):
            first = threading.Thread(target=give_up, args=(url, "hung/m"),
                                     kwargs={"stream": False, "after": 5.0})
            first.start()
            assert wait_for(lambda: hung.requests == 1)
            busy = ask(url, "hung/m")
            healthy = [ask(url, "fine/m") for _ in range(3)]
            first.join(30)
            assert wait_for(lambda: in_use(app) == {"hung": 0, "fine": 0}), app.engines.pools()
    assert busy.status_code == 503
    error = busy.json()["error"]
    assert "upstream 'hung'" in error["message"] and "pool timeout" in error["message"]
    assert error["code"] == "upstream_busy"
    assert [r.status_code for r in healthy] == [200, 200, 200]
    assert hung.requests == 1  # the refused request never reached it


def test_per_upstream_timeouts_come_from_gateway_toml(tmp_path: Path) -> None:
    extra = ("connect_timeout = 2.5\nread_timeout = 40\nfirst_byte_timeout = 0.3\n"
             "max_connections = 7")
    with SlowUpstream(delay=60) as slow:
        config = parse(tomllib.loads(upstream_toml("slow", slow.base_url, extra)))
        settings = upstreams.transport_config(config.upstreams["slow"])
        with gateway(upstream_toml("slow", slow.base_url, extra), tmp_path) as (app, url):
            late = ask(url, "slow/m")
            assert wait_for(lambda: slow.abandoned == 1)
            assert in_use(app) == {"slow": 0}
    assert (settings.connect_timeout, settings.read_timeout, settings.first_byte_timeout,
            settings.max_connections) == (2.5, 40.0, 0.3, 7)
    assert settings.pool_timeout == upstreams.POOL_WAIT_SECONDS
    assert late.status_code == 502
    assert "first-byte timeout" in late.json()["error"]["message"]


def _fixed(status: int, body: bytes, content_type: str) -> LoopbackServer:
    async def answer(request: Request) -> Response:
        return Response(body, status_code=status, media_type=content_type)

    return LoopbackServer(Starlette(routes=[Route("/v1/chat/completions", answer,
                                                  methods=["POST"])])).start()


@pytest.mark.parametrize("stream", [False, True])
def test_a_non_json_2xx_from_the_upstream_is_a_502(tmp_path: Path, stream: bool) -> None:
    upstream = _fixed(200, b"<html>maintenance</html>", "text/html")
    try:
        with gateway(upstream_toml("odd", upstream.origin + "/v1"), tmp_path) as (_, url):
            answer = ask(url, "odd/m", stream=stream)
    finally:
        upstream.stop()
    assert answer.status_code == 502
    assert "upstream 'odd'" in answer.json()["error"]["message"]


@pytest.mark.parametrize(("status", "key"), [(401, "sk-upstream-wrong-4e1a9c"), (403, None)])
def test_an_upstream_refusing_the_gateways_key_is_a_502_naming_its_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, key: str | None) -> None:
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    upstream = _fixed(status, b'{"error": {"message": "Invalid API key"}}', "application/json")
    try:
        with gateway(upstream_toml("ds", upstream.origin + "/v1"), tmp_path) as (_, url):
            answer = ask(url, "ds/m")
    finally:
        upstream.stop()
    assert answer.status_code == 502
    message: Any = answer.json()["error"]["message"]
    assert "upstream 'ds'" in message and KEY_ENV in message and f"HTTP {status}" in message
    assert ("is not set" in message) == (key is None)
    assert key is None or key not in message


def test_a_cancelled_send_closes_its_connection_in_the_transport_itself() -> None:
    # The same guarantee below the gateway, cancelled the way the gateway cancels (an anyio
    # cancel scope, which re-delivers the cancellation at every await): the connection is
    # closed, not left checked out of the pool, and the upstream sees the request given up.
    from thoughtline.transport import HttpTransport, Target

    async def cancel_one(slow: SlowUpstream) -> Any:
        transport = HttpTransport()
        target = Target(url=slow.base_url + "/chat/completions", provider="slow")
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(transport.post_json, target, b'{"model": "m"}')
                while slow.requests == 0:  # the upstream is thinking about it
                    await asyncio.sleep(0.01)
                busy = transport.pool_state()
                group.cancel_scope.cancel()
            return busy, transport.pool_state()
        finally:
            await transport.aclose()

    with SlowUpstream(delay=60) as slow:
        busy, after = asyncio.run(asyncio.wait_for(cancel_one(slow), 20))
        assert wait_for(lambda: slow.abandoned == 1)
    assert busy.in_use == 1 and after.in_use == 0 and after.connections == 0


def test_requests_cancelled_while_waiting_for_the_pool_leave_no_slot_taken() -> None:
    # encode/httpcore#1093: two requests share a pool of one and both are cancelled at once (two
    # gateway clients leaving). The first's connection, cancelled while it opens, is dropped and
    # the pool makes the waiting second a new one; cancelled too, the second never opens it.
    # That never-opened connection held the only slot for good: every later request waited out
    # the pool timeout (a 503 from a healthy upstream, and a soak's connection "in use").
    from thoughtline.errors import ProviderBusy
    from thoughtline.transport import HttpTransport, Target, TransportConfig

    async def scenario(fine: SlowUpstream) -> Any:
        transport = HttpTransport(TransportConfig(max_connections=1, pool_timeout=3.0,
                                                  max_retries=0))
        target = Target(url=fine.base_url + "/chat/completions", provider="fine")
        body = b'{"model": "m"}'
        try:
            both = [asyncio.create_task(transport.post_json(target, body)) for _ in range(2)]
            await asyncio.sleep(0)  # the first is opening its connection, the second waits
            waiting = transport.pool_state()
            for task in both:
                task.cancel()
            await asyncio.gather(*both, return_exceptions=True)
            left = transport.pool_state()
            try:
                answer = await transport.post_json(target, body)
            except ProviderBusy as exc:
                answer = str(exc)
            return waiting, left, answer
        finally:
            await transport.aclose()

    with SlowUpstream(delay=0) as fine:
        waiting, left, answer = asyncio.run(asyncio.wait_for(scenario(fine), 20))
        reached = fine.requests
    assert waiting.waiting == 1  # the scene is set: one request was queued for the slot
    assert left.in_use == 0, left
    assert answer["choices"][0]["message"]["content"] == "slow but sure", answer
    assert reached == 1  # only the last request reached the upstream


def test_a_finished_chat_stream_leaves_its_connection_in_the_pool(monkeypatch: Any) -> None:
    # Issue 27: a Chat stream ends at ``data: [DONE]``; the end of its body is read too, so the
    # connection goes back to the pool and the next streamed request reuses it instead of
    # opening (on a hosted upstream: a TLS handshake) a new one.
    from thoughtline.testing import ChatEmulator
    from thoughtline.transport import HttpTransport, Target
    from thoughtline.transport import http as http_module

    # The emulator writes the body's end separately: a loaded test machine may take longer than
    # the production bound to deliver it (the bound only decides whether the reuse happens).
    monkeypatch.setattr(http_module, "DRAIN_SECONDS", 5.0, raising=False)

    body = (b'{"model": "deepseek-chat", "stream": true, '
            b'"messages": [{"role": "user", "content": "hi"}]}')

    async def two_streams(url: str) -> list[Any]:
        transport = HttpTransport()
        target = Target(url=url + "/chat/completions", provider="deepseek",
                        headers={"authorization": "Bearer k"}, framing="sse")
        states = []
        try:
            for _ in range(2):
                events = [kind async for kind, _ in transport.stream_events(target, body)]
                assert events  # the whole stream was read
                states.append(transport.pool_state())
        finally:
            await transport.aclose()
        return states

    with ChatEmulator("deepseek") as emulator:
        states = asyncio.run(asyncio.wait_for(two_streams(emulator.base_url), 20))
    assert [(s.connections, s.in_use) for s in states] == [(1, 0), (1, 0)]


def test_a_drain_cut_short_never_leaves_the_connection_checked_out(monkeypatch: Any) -> None:
    # The drain after ``[DONE]`` is bounded; reaching the body's end inside the bound closes the
    # response, and when the bound expired during that close (an asyncio timeout cancels through
    # httpcore's anyio shield) the request stayed checked out for good. A bound of 0 expires at
    # the drain's first wait, every time: each stream must still give its connection back.
    from thoughtline.transport import HttpTransport, Target
    from thoughtline.transport import http as http_module

    monkeypatch.setattr(http_module, "DRAIN_SECONDS", 0.0, raising=False)

    async def streams(fine: SlowUpstream) -> list[Any]:
        transport = HttpTransport()
        target = Target(url=fine.base_url + "/chat/completions", provider="fine")
        states = []
        try:
            for _ in range(5):
                kinds = [kind async for kind, _ in transport.stream_events(
                    target, b'{"model": "m", "stream": true}')]
                assert len(kinds) == 2  # both chunks arrived before [DONE]
                states.append(transport.pool_state().in_use)
        finally:
            await transport.aclose()
        return states

    with SlowUpstream(delay=0) as fine:
        in_use_after_each = asyncio.run(asyncio.wait_for(streams(fine), 20))
    assert in_use_after_each == [0] * 5
