"""``thoughtline serve --workers 2``: two processes on one port sharing one SQLite store (WAL),
with the guarantees of one: a turn answered by one worker is rehydrated by the other, /metrics
of either worker counts the requests of both, and a stop leaves no metrics directory behind."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx
import openai
import orjson
from gateway_support import (
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    StrippingAgent,
    gateway_toml,
    start_serve,
)
from prometheus_client.parser import text_string_to_metric_families

from thoughtline.testing import ChatEmulator

TOKEN = "tenant-token-workers-4c1d"
MAX_STEPS = 40  # bounds the wait for both workers to have answered


def _requests(lines: list[str]) -> list[dict]:
    records = [orjson.loads(line) for line in list(lines) if line.startswith("{")]
    return [r for r in records if r.get("path") == "/v1/chat/completions"]


def test_two_workers_share_the_port_and_the_store(deepseek: ChatEmulator,
                                                  tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(gateway_toml(deepseek))
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN, "TMPDIR": str(temp)}
    serve = start_serve(config, tmp_path / "home", env, "--workers", "2")
    try:
        assert "(2 workers)" in "".join(serve.stdout)
        assert len(list(temp.iterdir())) == 1  # the metrics directory the parent owns
        agent = StrippingAgent(openai.OpenAI(base_url=serve.base_url, api_key=TOKEN))
        agent.ask("What's the weather in Oslo?")
        steps = 0
        while steps < MAX_STEPS:
            # A new client (a new connection) per request: either worker may accept it.
            agent.client = openai.OpenAI(base_url=serve.base_url, api_key=TOKEN, max_retries=0)
            answer = agent.step(stream=steps % 2 == 1)
            steps += 1
            if not answer.get("tool_calls"):
                agent.ask("And tomorrow?")
            served = _requests(serve.stderr)
            if len(served) == steps and _crossed(served):
                break
        scraped = httpx.get(serve.base_url.removesuffix("/v1") + "/metrics",
                            headers={"authorization": f"Bearer {TOKEN}"})
    finally:
        code = serve.terminate()
    served = _requests(serve.stderr)
    assert code == 0
    assert len({r["worker"] for r in served}) == 2, "one worker answered every request"
    assert _crossed(served)  # a turn one worker answered was found again by the other
    assert all(r["status"] == 200 and r["unmatched"] == 0 for r in served)
    assert [r["rehydrated"] for r in served[1:]] == sorted(r["rehydrated"] for r in served[1:])
    total = sum(s.value for f in text_string_to_metric_families(scraped.text)
                for s in f.samples if s.name == "thoughtline_gateway_requests_total")
    assert total == len(served)  # either worker's /metrics counts both workers' requests
    assert list(temp.iterdir()) == []  # the metrics directory is gone


def _crossed(served: list[dict]) -> bool:
    return any(later["worker"] != earlier["worker"] and later["rehydrated"] > 0
               for earlier, later in itertools.pairwise(served))
