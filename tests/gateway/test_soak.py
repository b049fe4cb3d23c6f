"""Issue 23's soak, bounded: rounds of 20 concurrent clients against a slow upstream (some give up
before it answers, some wait), a hung upstream with a small pool (clients give up, or get a 503
when its pool is full) and a healthy one. Afterwards no pool holds a checked-out connection, every
request that reached an upstream was either answered or seen cancelled there, and each healthy
upstream still answers. Waits are bounded; nothing asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from slow_upstream import SlowUpstream, wait_for
from test_gateway_transport import ask, gateway, upstream_toml

from thoughtline.gateway import upstreams

ROUNDS = 3
CLIENTS = 20
#: (upstream, client timeout in seconds, stream) for the 20 clients of a round.
PLAN = ([("slow", 0.3, i % 2 == 0) for i in range(6)]       # give up before the answer
        + [("slow", 20.0, i % 2 == 0) for i in range(4)]    # wait for it
        + [("hung", 1.0, i % 2 == 0) for i in range(4)]     # give up, or find the pool full
        + [("fine", 20.0, i % 2 == 0) for i in range(6)])


async def _client(http: httpx.AsyncClient, url: str, index: int, round_: int,
                  ) -> tuple[str, str]:
    name, timeout, stream = PLAN[index]
    body = {"model": f"{name}/m", "stream": stream,
            "messages": [{"role": "user", "content": f"round {round_} client {index}"}]}
    try:
        response = await http.post(url, json=body, timeout=timeout)
    except httpx.TimeoutException:
        return name, "gave up"
    return name, str(response.status_code)


async def _round(url: str, round_: int) -> list[tuple[str, str]]:
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits) as http:
        return await asyncio.gather(*(_client(http, url, i, round_) for i in range(CLIENTS)))


def test_soak_leaves_no_connection_checked_out_and_healthy_upstreams_answering(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(PLAN) == CLIENTS
    monkeypatch.setattr(upstreams, "POOL_WAIT_SECONDS", 0.3)
    with SlowUpstream(delay=1.0) as slow, SlowUpstream(delay=None) as hung, \
            SlowUpstream(delay=0) as fine:
        text = (upstream_toml("slow", slow.base_url, "max_connections = 20")
                + upstream_toml("hung", hung.base_url, "max_connections = 2")
                + upstream_toml("fine", fine.base_url, "max_connections = 4"))
        with gateway(text, tmp_path) as (app, url):
            outcomes = [o for r in range(ROUNDS) for o in asyncio.run(_round(url, r))]
            settled = wait_for(lambda: all(s.in_use == 0 and s.waiting == 0
                                           for s in app.engines.pools().values()))
            pools = app.engines.pools()
            after = {name: ask(url, f"{name}/m", timeout=20).status_code
                     for name in ("slow", "fine")}
        assert wait_for(lambda: slow.answered + slow.abandoned == slow.requests)
        assert wait_for(lambda: hung.abandoned == hung.requests and hung.open == 0)
    assert settled, pools
    by = {name: [o for n, o in outcomes if n == name] for name in ("slow", "hung", "fine")}
    assert by["fine"] == ["200"] * 6 * ROUNDS
    assert by["slow"].count("200") == 4 * ROUNDS
    assert set(by["slow"]) <= {"200", "gave up"}
    assert set(by["hung"]) <= {"gave up", "503"} and "503" in by["hung"]
    assert hung.requests <= 2 * ROUNDS  # its pool of 2 bounded what reached it
    assert slow.abandoned > 0 and hung.requests > 0
    assert after == {"slow": 200, "fine": 200}
