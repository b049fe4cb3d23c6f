"""A gateway whose PostgreSQL server is down says so within its short store wait: ``/readyz``
and requests get a 503 (a request's access-log line has outcome ``error``), and everything the
server writes to the access log meanwhile — the store pool's reconnect warnings included — is a
JSON line. The wait itself is shown reaching the pool and each connection attempt (the seconds
are measured by hand, never asserted: timings are not for tests here).

The server is "taken down" through a loopback proxy (``tests/store/pg_proxy.py``); the shared
test server itself is never stopped.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from gateway_support import UPSTREAM_KEY, UPSTREAM_KEY_ENV, gateway_toml, start_serve
from pg_proxy import PgProxy

from thoughtline.errors import StoreUnavailable
from thoughtline.gateway.storage import STORE_WAIT_S, open_gateway_store
from thoughtline.store import pool
from thoughtline.testing import ChatEmulator

TOKEN = "tenant-token-store-down-5e1a"
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/test"  # nothing listens on port 1
POLLS = 40  # bounds the wait for the pool's first reconnect warning (0.1 s each)


def test_a_store_that_goes_down_is_a_503_logged_as_error_in_json_lines(
        pg_store_url: str, tmp_path: Path) -> None:
    with ChatEmulator("deepseek") as emu, PgProxy(pg_store_url) as proxy:
        config = tmp_path / "gateway.toml"
        config.write_text(gateway_toml(emu, extra_server=f'store = "{proxy.url()}"\n'))
        env = {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN}
        serve = start_serve(config, tmp_path / "home", env)
        try:
            origin = serve.base_url.removesuffix("/v1")
            assert httpx.get(origin + "/readyz").status_code == 200
            proxy.down()
            ready = httpx.get(origin + "/readyz", timeout=30)
            asked = httpx.post(serve.base_url + "/chat/completions", timeout=30,
                               headers={"authorization": f"Bearer {TOKEN}"},
                               json={"model": "ds/deepseek-v4-pro",
                                     "messages": [{"role": "user", "content": "Hi"}]})
            for _ in range(POLLS):
                if any("psycopg" in line for line in serve.stderr):
                    break
                time.sleep(0.1)
        finally:
            code = serve.terminate()
    assert code == 0
    assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
    assert asked.status_code == 503 and "store" in asked.text
    lines = [orjson.loads(line) for line in serve.stderr]  # every line is JSON
    (request,) = [line for line in lines if line.get("path") == "/v1/chat/completions"]
    assert request["status"] == 503 and request["outcome"] == "error"
    assert any(line.get("event") == "not_ready" for line in lines)
    assert any(str(line.get("logger", "")).startswith("psycopg") for line in lines)
    assert emu.received == []  # the outage never reached upstream


def test_the_gateway_store_waits_its_short_wait_for_the_pool_and_each_connection(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pools: list[dict[str, Any]] = []
    connects: list[Any] = []

    class Recorded(pool.ConnectionPool):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pools.append(kwargs)
            super().__init__(*args, **kwargs)

    def connect(*args: Any, **kwargs: Any) -> Any:
        connects.append(kwargs.get("connect_timeout"))
        return real_connect(*args, **kwargs)

    real_connect = psycopg.connect
    monkeypatch.setattr(pool, "ConnectionPool", Recorded)
    monkeypatch.setattr(pool.psycopg, "connect", connect)
    with pytest.raises(StoreUnavailable, match=r"cannot reach the store at .*127\.0\.0\.1:1"):
        open_gateway_store(UNREACHABLE, tmp_path)
    assert STORE_WAIT_S <= 2
    (opened,) = pools
    assert opened["timeout"] == STORE_WAIT_S
    assert opened["kwargs"]["connect_timeout"] == 2  # libpq's minimum, whole seconds
    assert connects and all(timeout == 2 for timeout in connects)
