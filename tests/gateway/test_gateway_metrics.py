"""``GET /metrics`` and ``GET /readyz``: what an operator scrapes, read with prometheus_client's
own parser; never a token, a key or message text; behind the tokens unless metrics_public."""

from __future__ import annotations

import sys
import tomllib
import uuid
from pathlib import Path

import httpx
import openai
import psycopg
import pytest
from gateway_support import (
    MODEL,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    StrippingAgent,
    gateway_toml,
    running_gateway,
)
from messages_support import MessagesAgent, messages_client
from prometheus_client.parser import text_string_to_metric_families
from responses_face_support import ResponsesAgent, responses_client

sys.path.insert(0, str(Path(__file__).parents[1] / "store"))
from pg_proxy import PgProxy  # the store tests' proxy: a server outage as the store sees it
from store_backends import PG_URL, pg_url

from thoughtline.errors import ConfigError
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.store import SQLiteStore
from thoughtline.store.pool import PoolSettings
from thoughtline.store.postgres import PostgresStore
from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer

TOKEN = "tl-tenant-token-7f3a9c"
QUESTION = "What is the weather in Zanzibar-metrics-probe?"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def _value(samples: dict, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items()
               if n == name and all(dict(ls).get(k) == x for k, x in labels.items()))


def test_metrics_count_requests_rehydration_and_carriers_without_any_secret(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path, tokens=[TOKEN]) as gw:
        agent = StrippingAgent(gw.client(TOKEN))
        agent.ask(QUESTION)
        for stream in (False, True, False):
            agent.step(stream=stream)
        with httpx.Client(base_url=gw.server.origin) as http:
            http.post("/v1/chat/completions", json={"model": "ds/x"})  # no token: 401
            assert http.get("/metrics").status_code == 401  # behind the tokens by default
            scraped = http.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    assert scraped.status_code == 200
    text = scraped.text
    samples = _samples(text)
    requests = "thoughtline_gateway_requests_total"
    assert _value(samples, requests, face="chat", upstream="ds", status="200",
                  outcome="ok") == 3
    assert _value(samples, requests, status="401", outcome="refused") == 1
    # The agent strips reasoning: the second and third requests each resent turns found again.
    assert _value(samples, "thoughtline_gateway_rehydration_total", outcome="id") == 2
    assert _value(samples, "thoughtline_gateway_rehydration_total", outcome="content") == 1
    assert _value(samples, "thoughtline_gateway_carriers_sent_total", api="openai-chat") >= 2
    assert _value(samples, "thoughtline_gateway_request_duration_seconds_count",
                  face="chat") == 4  # the refused one too
    assert _value(samples, "thoughtline_gateway_upstream_first_byte_seconds_count",
                  upstream="ds") == 3
    assert _value(samples, "thoughtline_gateway_overhead_seconds_count", face="chat") == 3
    assert _value(samples, "thoughtline_gateway_in_flight_requests", face="chat") == 0
    assert ("thoughtline_gateway_upstream_connections",
            (("state", "connections"), ("upstream", "ds"))) in samples
    for secret in (TOKEN, UPSTREAM_KEY, "Zanzibar", "weather", "Sunny"):
        assert secret not in text


def test_a_learned_rejection_is_counted_by_its_wording_row(tmp_path: Path) -> None:
    with ChatEmulator("strict-custom") as emu:
        config = parse(tomllib.loads(
            '[server]\nmetrics_public = true\n'
            f'[[upstream]]\nname = "cu"\nprovider = "custom"\nbase_url = "{emu.base_url}"\n'
            f'api_key_env = "{UPSTREAM_KEY_ENV}"\n'))
        store = SQLiteStore(tmp_path / "state.db")
        server = LoopbackServer(create_app(Gateway(config, store, environ={}))).start()
        try:
            client = openai.OpenAI(base_url=server.origin + "/v1", api_key="x", max_retries=0)
            messages = [{"role": "user", "content": "Hello"}]
            for follow_up in ("Why?", "Thanks."):
                answer = client.chat.completions.create(model="cu/m", messages=messages)
                messages += [{"role": "assistant", "content": answer.choices[0].message.content},
                             {"role": "user", "content": follow_up}]
            text = httpx.get(server.origin + "/metrics").text  # public: no token needed
        finally:
            server.stop()
            store.close()
    samples = _samples(text)
    learned = [dict(ls) for (n, ls), v in samples.items()
               if n == "thoughtline_gateway_rejections_learned_total" and v == 1]
    assert len(learned) == 1 and learned[0]["upstream"] == "cu" and learned[0]["wording"]
    assert _value(samples, "thoughtline_gateway_rejections_repaired_total",
                  wording=learned[0]["wording"]) == 1


def test_metrics_public_is_a_boolean_in_gateway_toml(deepseek: ChatEmulator) -> None:
    raw = tomllib.loads(gateway_toml(deepseek, extra_server="metrics_public = true"))
    assert parse(raw).metrics_public is True
    assert parse(tomllib.loads(gateway_toml(deepseek))).metrics_public is False
    raw["server"]["metrics_public"] = "yes"
    with pytest.raises(ConfigError, match="metrics_public must be true or false"):
        parse(raw)


def test_readyz_is_503_while_the_store_is_unreachable_and_200_when_it_returns(
        deepseek: ChatEmulator) -> None:
    """A PostgreSQL store behind a proxy taken down and up: what a database outage looks like."""
    schema = f"tl_readyz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            with PgProxy(pg_url(schema)) as proxy:
                config = parse(tomllib.loads(gateway_toml(deepseek)))
                store = PostgresStore(proxy.url(), settings=PoolSettings(timeout=1,
                                                                         connect_timeout=1))
                server = LoopbackServer(create_app(Gateway(config, store, environ={}))).start()
                try:
                    with httpx.Client(base_url=server.origin, timeout=30) as http:
                        up = http.get("/readyz")
                        proxy.down()
                        down = http.get("/readyz")
                        alive = http.get("/healthz")
                        proxy.up()
                        back = http.get("/readyz")
                        scraped = http.get("/metrics", headers={"authorization": "Bearer x"})
                finally:
                    server.stop()
                    store.close()
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
    assert (up.status_code, down.status_code, back.status_code) == (200, 503, 200)
    assert alive.status_code == 200  # liveness does not depend on the store
    assert down.json() == {"status": "unavailable", "reason": "the store does not answer"}
    assert "127.0.0.1" not in down.text  # where the store lives is the access log's, not a prober's
    errors = _value(_samples(scraped.text), "thoughtline_gateway_store_errors_total")
    assert errors >= 1


def test_minted_values_are_counted_as_minted_and_another_tenants_as_foreign(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    alice_token, bob_token = "tok-metrics-alice", "tok-metrics-bob"
    with running_gateway(deepseek, tmp_path, tokens=[alice_token, bob_token]) as gw:
        origin = gw.server.origin
        alice = MessagesAgent(messages_client(origin, alice_token), model=MODEL)
        alice.ask(QUESTION)
        alice.step(stream=False)
        alice.step(stream=False)  # resends the first answer with the value the gateway minted
        bob = MessagesAgent(messages_client(origin, bob_token), model=MODEL,
                            messages=[dict(m) for m in alice.messages])
        bob.step(stream=False)  # Alice's minted values in Bob's request name nothing
        text = httpx.get(origin + "/metrics",
                         headers={"authorization": f"Bearer {alice_token}"}).text
    samples = _samples(text)
    assert _value(samples, "thoughtline_gateway_rehydration_total", outcome="minted") == 1
    assert _value(samples, "thoughtline_gateway_rehydration_total",
                  outcome="forged_or_foreign") >= 1
    assert _value(samples, "thoughtline_gateway_requests_total", face="messages",
                  outcome="ok") == 3
    for secret in (alice_token, bob_token, "Zanzibar"):
        assert secret not in text


def test_a_compaction_through_the_gateway_counts_its_summarizer_request(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        agent = ResponsesAgent(responses_client(gw.server.origin), model=MODEL)
        for city in ("Oslo", "Lima", "Pune", "Kyiv"):
            agent.ask(f"Weather in {city}?")
            agent.step(stream=False)
            agent.step(stream=False)
        with httpx.Client(base_url=gw.server.origin) as http:
            before = _samples(http.get("/metrics").text)
            args = {**agent._args(), "input": [*agent.input, {"type": "compaction_trigger"}]}
            output = agent.client.responses.create(**args).output
            after = _samples(http.get("/metrics").text)
    assert [item.type for item in output] == ["compaction"]
    name = "thoughtline_gateway_compaction_requests_total"
    assert _value(before, name) == 0  # ordinary turns are not compactions
    assert _value(after, name, api="openai-chat") == 1  # the one summary request
