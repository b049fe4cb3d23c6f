"""The HTTP contract: tokens and tenants, the body limit, bad JSON, unknown models and sessions,
upstream failures as OpenAI errors with the upstream's status, models and health."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import orjson
import pytest
from gateway_support import (
    MODEL,
    SESSION_HEADER,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    StrippingAgent,
    running_gateway,
)

from thoughtline.errors import UsageError
from thoughtline.gateway.config import GatewayConfig, check_exposure
from thoughtline.testing import ChatEmulator

ALICE, BOB = "token-alice-1c9e", "token-bob-77ab"
HELLO = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}


def _post(base_url: str, body: bytes, token: str | None = ALICE, **headers: str) -> httpx.Response:
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(base_url + "/chat/completions", content=body,
                      headers={"content-type": "application/json", **headers}, timeout=30)


def _error(response: httpx.Response) -> dict[str, object]:
    body = response.json()
    assert set(body) == {"error"}
    assert {"message", "type", "param", "code"} <= set(body["error"])
    return body["error"]


def test_missing_or_wrong_token_gets_401_in_the_openai_format(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path, tokens=[ALICE, BOB]) as gw:
        for token in (None, "not-a-token", "token-alice"):
            response = _post(gw.base_url, orjson.dumps(HELLO), token=token)
            assert response.status_code == 401
            assert _error(response)["code"] == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            gw.client("wrong").chat.completions.create(**HELLO)
        with pytest.raises(openai.AuthenticationError):
            gw.client("wrong").models.list()
        assert gw.client(BOB).chat.completions.create(**HELLO).choices[0].message.content
    assert len(deepseek.received) == 1  # nothing unauthenticated went upstream


def test_tenants_never_share_reasoning_even_for_identical_histories(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path, tokens=[ALICE, BOB]) as gw:
        alice = StrippingAgent(gw.client(ALICE))
        alice.ask("What's the weather in Lima?")
        alice.step(stream=False)
        # Bob sends exactly Alice's (stripped) history: same call ids, same content.
        bob = StrippingAgent(gw.client(BOB), messages=[dict(m) for m in alice.messages])
        bob.step(stream=False)
        alice.step(stream=False)
        assert bob.session != alice.session
        # Bob naming Alice's session is refused as unknown, not served.
        bob.headers = {SESSION_HEADER: alice.session}
        with pytest.raises(openai.NotFoundError):
            bob.step(stream=False)
    shown = orjson.dumps(alice.reasoning[0])
    to_bob, to_alice = deepseek.received[1].raw, deepseek.received[2].raw
    assert shown not in to_bob
    assert b'"reasoning_content":" "' in to_bob  # the must-echo pad, not Alice's thoughts
    assert shown in to_alice


def test_the_session_header_scopes_matching_to_that_session(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        first = StrippingAgent(gw.client())
        first.ask("What's the weather in Quito?")
        first.step(stream=False)
        other = StrippingAgent(gw.client())
        other.ask("Something else entirely")
        other.step(stream=False)
        # The same history, scoped to the other conversation: its turn is not found there.
        first.headers = {SESSION_HEADER: other.session}
        first.step(stream=False)
        assert first.session == other.session
        first.headers = {SESSION_HEADER: "no-such-session"}
        with pytest.raises(openai.NotFoundError, match="names no session"):
            first.step(stream=False)
    assert b'"reasoning_content":" "' in deepseek.received[2].raw


def test_bodies_over_the_limit_get_413(deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path, max_body=2048) as gw:
        big = orjson.dumps({**HELLO, "messages": [{"role": "user", "content": "x" * 4096}]})
        response = _post(gw.base_url, big)
        assert response.status_code == 413
        assert "2048" in str(_error(response)["message"])

        def chunks():  # no content-length: the limit holds for a chunked body too
            yield big[:1000]
            yield big[1000:]

        chunked = httpx.post(gw.base_url + "/chat/completions", content=chunks(), timeout=30)
        assert chunked.status_code == 413
        with pytest.raises(openai.APIStatusError) as caught:
            gw.client().chat.completions.create(model=MODEL, messages=[
                {"role": "user", "content": "y" * 4096}])
        assert caught.value.status_code == 413
        assert _post(gw.base_url, orjson.dumps(HELLO)).status_code == 200
    assert len(deepseek.received) == 1


@pytest.mark.parametrize(("body", "wording"), [
    (b'{"model": "ds/deepseek-v4-pro", "messages": [', "not valid JSON"),
    (b"not json at all", "not valid JSON"),
    (b'[1, 2]', "must be a JSON object"),
    (b'{"model": "ds/deepseek-v4-pro"}', "`messages`"),
    (b'{"messages": [{"role": "user", "content": "hi"}]}', "`model`"),
    (b'{"model": "ds/x", "messages": [{"role": "wizard", "content": "hi"}]}', "role"),
])
def test_malformed_requests_get_400_with_a_clear_message(
        deepseek: ChatEmulator, tmp_path: Path, body: bytes, wording: str) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        response = _post(gw.base_url, body, token=None)
        assert response.status_code == 400
        assert wording in str(_error(response)["message"])
    assert deepseek.received == []


def test_an_unknown_upstream_model_gets_404_naming_the_upstreams(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw, pytest.raises(openai.NotFoundError,
                                                                  match="ds/<model>"):
        gw.client().chat.completions.create(model="nope/some-model", messages=HELLO["messages"])


def test_a_model_the_upstream_does_not_list_gets_404_and_is_never_sent(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    # Issue 23 item 3: the upstream lists models, so a client's own id never reaches it.
    with running_gateway(deepseek, tmp_path) as gw:
        for model in ("ds/../../v1/files", "ds/deepseek-v4-pro?x=1", "ds/other-model"):
            with pytest.raises(openai.NotFoundError, match="allow_any_model"):
                gw.client().chat.completions.create(model=model, messages=HELLO["messages"])
    assert deepseek.received == []


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_failures_keep_their_status_and_never_show_the_key(
        deepseek: ChatEmulator, tmp_path: Path, stream: bool) -> None:
    # An upstream refusing the gateway's key is the gateway's problem (502), not the client's
    # token (403 would read as one): issue 23 item 9.
    leaky = {"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}",
                       "type": "invalid_request_error", "code": "invalid_api_key"}}
    deepseek.fail_next(403, leaky)
    deepseek.fail_next(404, {"error": {"message": "Model Not Exist", "type": "invalid_request"}})
    with running_gateway(deepseek, tmp_path) as gw:
        client = gw.client()
        with pytest.raises(openai.InternalServerError) as denied:
            client.chat.completions.create(**HELLO, stream=stream)
        with pytest.raises(openai.NotFoundError, match="Model Not Exist"):
            client.chat.completions.create(**HELLO, stream=stream)
    assert denied.value.status_code == 502
    text = denied.value.response.text
    assert UPSTREAM_KEY not in text and "***" in text
    assert "HTTP 403" in text and "upstream 'ds'" in text and UPSTREAM_KEY_ENV in text


def test_the_upstream_gets_its_own_key_never_the_client_token(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path, tokens=[ALICE]) as gw:
        gw.client(ALICE).chat.completions.create(**HELLO)
    headers = deepseek.received[0].headers
    assert headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert ALICE not in orjson.dumps(headers).decode()


def test_models_and_health(deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path, tokens=[ALICE]) as gw:
        models = gw.client(ALICE).models.list()
        assert [m.id for m in models.data] == ["ds/deepseek-v4-pro"]
        health = httpx.get(gw.server.origin + "/healthz", timeout=10)
        assert health.status_code == 200 and health.json() == {"status": "ok"}


def test_a_public_bind_without_tokens_is_refused() -> None:
    open_config = GatewayConfig(host="0.0.0.0")
    with pytest.raises(UsageError, match="not a loopback address"):
        check_exposure(open_config, environ={})
    check_exposure(open_config, environ={open_config.tokens_env: "t1,t2"})
    check_exposure(GatewayConfig(host="127.0.0.1"), environ={})
    check_exposure(GatewayConfig(host="::1"), environ={})


def test_usage_chunk_only_when_asked_and_reasoning_in_the_deltas(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        client = gw.client()
        plain = list(client.chat.completions.create(**HELLO, stream=True))
        counted = list(client.chat.completions.create(
            **HELLO, stream=True, stream_options={"include_usage": True}))
        whole = client.chat.completions.create(**HELLO)
    assert all(c.usage is None for c in plain)
    assert counted[-1].choices == [] and counted[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in counted[:-1])
    thought = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
                      for c in plain if c.choices)
    assert thought and thought == whole.choices[0].message.model_extra["reasoning_content"]
    assert whole.usage.completion_tokens_details.reasoning_tokens > 0
