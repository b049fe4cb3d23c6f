"""A gateway whose PostgreSQL server goes away answers 503 and stores nothing half-written;
when the server is back the same gateway carries on, replay intact.

The server is "taken down" through a loopback proxy (``tests/store/pg_proxy.py``): the shared
test server itself is never stopped.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import openai
import pytest
from gateway_support import StrippingAgent, gateway_toml
from pg_proxy import PgProxy

from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.requestlog import RequestLog
from thoughtline.store.pool import PoolSettings
from thoughtline.store.postgres import PostgresStore
from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer


def test_a_store_outage_is_a_503_then_the_conversation_continues(pg_store_url: str,
                                                                  tmp_path: Path) -> None:
    with ChatEmulator("deepseek") as emu, PgProxy(pg_store_url) as proxy:
        config = parse(tomllib.loads(gateway_toml(emu)))
        store = PostgresStore(proxy.url(), settings=PoolSettings(timeout=2, connect_timeout=1))
        gateway = Gateway(config, store, environ={}, request_log=RequestLog(tmp_path / "logs"))
        server = LoopbackServer(create_app(gateway), name="gateway").start()
        try:
            client = openai.OpenAI(base_url=server.origin + "/v1", api_key="none",
                                   max_retries=0)
            agent = StrippingAgent(client)
            agent.ask("What's the weather in Lima?")
            assert agent.step(stream=False).get("tool_calls")
            before = [m.message for m in store.load_history(agent.session).messages]

            proxy.down()
            with pytest.raises(openai.APIStatusError) as caught:
                client.chat.completions.create(model="ds/deepseek-v4-pro",
                                               messages=agent.messages)
            assert caught.value.status_code == 503
            assert "store" in str(caught.value.body)
            proxy.up()

            assert not agent.step(stream=True).get("tool_calls")  # replay intact: accepted
            after = [m.message for m in store.load_history(agent.session).messages]
        finally:
            server.stop()
            store.close()
    assert after[:len(before)] == before
    assert [m.role for m in after] == ["user", "assistant", "tool", "assistant"]
    assert [r.status for r in emu.received] == [200, 200]  # the outage never reached upstream
