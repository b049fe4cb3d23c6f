"""Claude Code's LLM-gateway contract (code.claude.com/docs/en/llm-gateway-protocol).

``HEAD /`` answers 200; ``GET /v1/models`` is the Models API page an Anthropic client reads
(``limit``, ``after_id``/``before_id``, ``has_more``, ``first_id``, ``last_id``; parsed by the
official ``anthropic`` SDK) and stays the OpenAI list for OpenAI clients; a client's
``anthropic-beta`` reaches an Anthropic upstream as sent; every answer of a face — whole,
streamed, an upstream's error — names the upstream, its API, the model asked for, the model id
sent upstream and the upstream's request id when it gave one.

The emulators name no request id: a loopback transport stamps one on each upstream response
(Anthropic's header for the Anthropic emulator, OpenAI's for the Chat one), so the test knows
which id each answer must carry.
"""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
from gateway_support import UPSTREAM_KEY_ENV
from messages_support import messages_client

import anthropic
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import GatewayConfig, parse
from thoughtline.store import SQLiteStore
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.transport.http import HttpTransport

TOKEN = "tok-contract"
BETAS = "server-side-fallback-2026-06-01,mid-conversation-tool-changes-2026-07-01"
HINTS = ("x-gateway-upstream", "x-gateway-upstream-kind", "x-gateway-model",
         "x-gateway-upstream-model")
REQUEST_ID = "x-gateway-upstream-request-id"
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


class _Stamping(httpx.AsyncBaseTransport):
    """The loopback transport, giving each upstream response a fresh request id under the
    header its API uses (``stamps``: base URL → header name); ``ids`` lists what was given."""

    def __init__(self, stamps: dict[str, str]) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.stamps = {httpx.URL(base).port: header for base, header in stamps.items()}
        self.ids: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.ids.append(f"req_{uuid.uuid4().hex}")
        response.headers[self.stamps[request.url.port]] = self.ids[-1]
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _toml(claude: AnthropicEmulator, chat: ChatEmulator) -> str:
    """Two upstreams, each with more than one model, so that a page can hold part of them."""
    upstreams = [("claude", "anthropic", claude.base_url,
                  ["claude-opus-4-6", "claude-opus-5-5", "claude-sonnet-5-5"]),
                 ("ds", "deepseek", chat.base_url, ["deepseek-v4-pro", "deepseek-v4-flash"])]
    text = ('[server]\nhost = "127.0.0.1"\nport = 0\n'
            'tokens_env = "TL_GATEWAY_TEST_TOKENS"\n')
    for name, provider, base_url, models in upstreams:
        text += (f'\n[[upstream]]\nname = "{name}"\nprovider = "{provider}"\n'
                 f'base_url = "{base_url}"\napi_key_env = "{UPSTREAM_KEY_ENV}"\n'
                 f'models = {orjson.dumps(models).decode()}\n')
    return text


@contextmanager
def _gateway(tmp: Path, *, stamped: bool = True,
             ) -> Iterator[tuple[str, GatewayConfig, AnthropicEmulator, ChatEmulator, _Stamping]]:
    with AnthropicEmulator() as claude, ChatEmulator("deepseek") as chat:
        stamping = _Stamping({claude.base_url: "request-id", chat.base_url: "x-request-id"})
        transport = HttpTransport(client=httpx.AsyncClient(transport=stamping)) if stamped \
            else None
        config = parse(tomllib.loads(_toml(claude, chat)))
        store = SQLiteStore(tmp / "state.db")
        gateway = Gateway(config, store, environ={"TL_GATEWAY_TEST_TOKENS": TOKEN},
                          transport=transport)
        server = LoopbackServer(create_app(gateway), name="gateway").start()
        try:
            yield server.origin, config, claude, chat, stamping
        finally:
            server.stop()
            store.close()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[str, GatewayConfig, AnthropicEmulator,
                                              ChatEmulator, _Stamping]]:
    with _gateway(tmp_path) as served:
        yield served


def _listed(config: GatewayConfig) -> list[str]:
    """Every model id a client may send, in the order of gateway.toml."""
    return [f"{u.name}/{m}" for u in config.upstreams.values() for m in u.models]


def _expected(config: GatewayConfig, asked: str) -> dict[str, str]:
    upstream, model = config.upstream_for(asked)
    return dict(zip(HINTS, (upstream.name, upstream.provider.api, asked, model), strict=True))


def _hints(headers: Any) -> dict[str, str]:
    return {name: headers[name] for name in HINTS if name in headers}


# --- HEAD / and GET /v1/models --------------------------------------------------------------------


def test_head_root_answers_200_with_no_body_and_no_token(running: Any) -> None:
    origin = running[0]
    reply = httpx.head(origin + "/")
    assert reply.status_code == 200
    assert reply.content == b""


def test_models_in_the_anthropic_shape_page_by_limit_and_cursor(running: Any) -> None:
    origin, config = running[0], running[1]
    ids = _listed(config)
    client = messages_client(origin, TOKEN)
    first = client.models.list(limit=2)
    assert [m.id for m in first.data] == ids[:2]
    assert (first.has_more, first.first_id, first.last_id) == (True, ids[0], ids[1])
    assert all(m.type == "model" and m.display_name == m.id for m in first.data)
    assert all(m.created_at == datetime(1970, 1, 1, tzinfo=UTC) for m in first.data)
    # The SDK follows ``has_more`` with ``after_id=last_id`` to the end.
    assert [m.id for m in client.models.list(limit=2)] == ids
    everything = client.models.list(limit=1000)  # what Claude Code asks for
    assert [m.id for m in everything.data] == ids and everything.has_more is False
    assert [m.id for m in client.models.list().data] == ids  # the default page holds 20
    before = client.models.list(before_id=ids[3], limit=2)
    assert [m.id for m in before.data] == ids[1:3] and before.has_more is True
    raw = httpx.get(origin + "/v1/models?limit=1", headers={
        "x-api-key": TOKEN, "anthropic-version": "2023-06-01"}).json()
    assert raw == {"data": [{"type": "model", "id": ids[0], "display_name": ids[0],
                             "created_at": "1970-01-01T00:00:00Z", "lifecycle": "active"}],
                   "has_more": True, "first_id": ids[0], "last_id": ids[0]}


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=ten",
                                   "after_id=claude/unknown"])
def test_a_bad_models_query_is_an_anthropic_400(running: Any, query: str) -> None:
    origin = running[0]
    reply = httpx.get(f"{origin}/v1/models?{query}", headers={
        "x-api-key": TOKEN, "anthropic-version": "2023-06-01"})
    assert reply.status_code == 400
    assert reply.json()["type"] == "error"
    assert reply.json()["error"]["type"] == "invalid_request_error"


def test_models_without_a_token_are_refused_in_each_clients_shape(running: Any) -> None:
    origin = running[0]
    with pytest.raises(anthropic.AuthenticationError) as refused:
        messages_client(origin, "wrong").models.list(limit=1000)
    assert refused.value.body["type"] == "error"
    assert refused.value.body["error"]["type"] == "authentication_error"
    with pytest.raises(openai.AuthenticationError) as told:
        openai.OpenAI(base_url=origin + "/v1", api_key="wrong", max_retries=0).models.list()
    assert told.value.code == "invalid_api_key"


def test_models_stay_in_the_openai_shape_for_openai_clients(running: Any) -> None:
    origin, config = running[0], running[1]
    listed = openai.OpenAI(base_url=origin + "/v1", api_key=TOKEN, max_retries=0).models.list()
    owners = {f"{u.name}/{m}": u.provider.id for u in config.upstreams.values()
              for m in u.models}
    assert [(m.id, m.object, m.owned_by) for m in listed.data] == [
        (i, "model", owners[i]) for i in _listed(config)]


# --- anthropic-beta -------------------------------------------------------------------------------


def _with_beta(origin: str, model: str) -> None:
    reply = httpx.post(origin + "/v1/messages?beta=true", headers={
        "x-api-key": TOKEN, "anthropic-version": "2023-06-01", "anthropic-beta": BETAS},
        content=orjson.dumps({"model": model, "max_tokens": 1024, "messages": ASK}), timeout=60)
    assert reply.status_code == 200, reply.text


def test_the_clients_anthropic_beta_reaches_the_upstream_byte_identical(running: Any) -> None:
    origin, _, claude = running[0], running[1], running[2]
    _with_beta(origin, "claude/claude-opus-4-6")  # a model the gateway adds no beta for
    assert claude.received[-1].headers["anthropic-beta"] == BETAS


def test_the_gateways_own_betas_follow_the_clients_unchanged_list(running: Any) -> None:
    origin, _, claude = running[0], running[1], running[2]
    _with_beta(origin, "claude/claude-opus-5-5")  # a binding model: the gateway adds its beta
    sent = claude.received[-1].headers["anthropic-beta"]
    assert sent.startswith(BETAS + ",")
    assert not set(sent.removeprefix(BETAS + ",").split(",")) & set(BETAS.split(","))


# --- the hint headers -----------------------------------------------------------------------------


@pytest.mark.parametrize("asked", ["claude/claude-opus-4-6", "ds/deepseek-v4-pro"])
def test_a_whole_messages_answer_names_its_upstream(running: Any, asked: str) -> None:
    origin, config, claude, chat, stamping = running
    raw = messages_client(origin, TOKEN).messages.with_raw_response.create(
        model=asked, max_tokens=1024, messages=ASK)
    assert raw.parse().type == "message"
    assert _hints(raw.headers) == _expected(config, asked)
    upstream = claude if asked.startswith("claude/") else chat
    assert orjson.loads(upstream.received[-1].raw)["model"] == raw.headers[HINTS[3]]
    assert raw.headers[REQUEST_ID] == stamping.ids[-1]


@pytest.mark.parametrize("asked", ["claude/claude-opus-5-5", "ds/deepseek-v4-flash"])
def test_a_streamed_messages_answer_names_its_upstream_before_its_first_byte(
        running: Any, asked: str) -> None:
    origin, config, _, _, stamping = running
    with httpx.stream("POST", origin + "/v1/messages", headers={
            "x-api-key": TOKEN, "anthropic-version": "2023-06-01"}, timeout=60,
            content=orjson.dumps({"model": asked, "max_tokens": 1024, "messages": ASK,
                                  "stream": True})) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        headers, request_id = reply.headers, stamping.ids[-1]  # nothing of the body read yet
        body = reply.read()
    assert b"message_stop" in body
    assert _hints(headers) == _expected(config, asked)
    assert headers[REQUEST_ID] == request_id


@pytest.mark.parametrize("stream", [False, True])
def test_chat_and_responses_answers_name_their_upstream(running: Any, stream: bool) -> None:
    origin, config, _, _, stamping = running
    client = openai.OpenAI(base_url=origin + "/v1", api_key=TOKEN, max_retries=0)
    asked = "ds/deepseek-v4-pro"
    chat = client.chat.completions.with_raw_response.create(model=asked, messages=ASK,
                                                            stream=stream)
    chat.parse()
    assert _hints(chat.headers) == _expected(config, asked)
    assert chat.headers[REQUEST_ID] == stamping.ids[-1]
    asked = "claude/claude-opus-4-6"
    responses = client.responses.with_raw_response.create(model=asked, input="Hi",
                                                          stream=stream)
    responses.parse()
    assert _hints(responses.headers) == _expected(config, asked)
    assert responses.headers[REQUEST_ID] == stamping.ids[-1]


def test_an_upstream_error_names_its_upstream_and_request_id(tmp_path: Path) -> None:
    with _gateway(tmp_path, stamped=False) as (origin, config, _, chat, _):
        asked = "ds/deepseek-v4-pro"
        chat.fail_next(400, {"error": {"message": "bad request", "type": "invalid_request"}},
                       headers={"x-request-id": "req_refused_1"})
        refused = httpx.post(origin + "/v1/chat/completions", timeout=60, headers={
            "authorization": f"Bearer {TOKEN}"}, json={"model": asked, "messages": ASK})
        answered = httpx.post(origin + "/v1/chat/completions", timeout=60, headers={
            "authorization": f"Bearer {TOKEN}"}, json={"model": asked, "messages": ASK})
    assert refused.status_code == 400
    assert _hints(refused.headers) == _expected(config, asked)
    assert refused.headers[REQUEST_ID] == "req_refused_1"
    # An upstream that names no request id: the other hints, and no empty request id.
    assert answered.status_code == 200
    assert _hints(answered.headers) == _expected(config, asked)
    assert REQUEST_ID not in answered.headers
