"""The core seams of issue 9 that no single API's tests pin down.

- the signature scope (property): an opaque Chat value reaches a request exactly when the target
  route's profile accepts where it was made — the same host (or provider id), the same model;
- SigV4 through botocore is applied anew on every attempt (a retried request is re-signed);
- every registered codec satisfies the protocol the core is typed against.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.openai_chat import encode_request
from thoughtline.codecs.openai_chat.profile import resolve_chat
from thoughtline.messages import Message, Origin, Reasoning, Text, user
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport, Target, TransportConfig
from thoughtline.transport.auth import SigV4Auth, SigV4Settings

HOSTS = st.sampled_from(["openrouter.ai", "ai-gateway.vercel.sh", "api.kilo.ai", ""])
MODELS = st.sampled_from(["openai/gpt-5", "anthropic/claude-sonnet-4.5", "OPENAI/GPT-5"])
PROVIDERS = st.sampled_from(["openrouter", "custom", "ai-gateway"])
URLS = {"openrouter.ai": "https://openrouter.ai/api/v1",
        "ai-gateway.vercel.sh": "https://ai-gateway.vercel.sh/v1",
        "api.kilo.ai": "https://api.kilo.ai/api/gateway", "": None}


@settings(max_examples=200, deadline=None)
@given(made_host=HOSTS, made_model=MODELS, made_provider=PROVIDERS, to_host=HOSTS,
       to_model=MODELS, to_provider=PROVIDERS)
def test_an_opaque_item_goes_exactly_where_its_scope_allows(
        made_host: str, made_model: str, made_provider: str, to_host: str, to_model: str,
        to_provider: str) -> None:
    origin = Origin(api="openai-chat", provider=made_provider, host=made_host, model=made_model)
    item = {"type": "reasoning.encrypted", "data": "gAAAA-" + made_host + made_model,
            "format": "unknown", "index": 0}
    turn = Message(role="assistant", origin=origin, parts=(
        Reasoning(kind="encrypted", data=item["data"], origin=origin, native={"openrouter": item}),
        Text(text="ok")))
    route = resolve_chat(to_provider, URLS[to_host], to_model)
    plan = replay.plan(route)
    body = encode_request([user("q"), turn, user("next")], plan, model=to_model)
    sent = body["messages"][1].get("reasoning_details")
    carries = "reasoning_details" in route.profile.carriers
    allowed = carries and route.profile.accepts(origin, plan.target)
    assert (sent is not None) == allowed
    if allowed:
        assert orjson.dumps(sent) == orjson.dumps([item])
    # The rule itself: same model, and the same host where both are known (else provider id).
    target = plan.target
    same_place = (origin.host == target.host if origin.host and target.host
                  else origin.provider == target.provider)
    assert route.profile.accepts(origin, target) == (
        origin.model.lower() == target.model.lower() and same_place)


def test_sigv4_signs_every_attempt_anew(monkeypatch: Any) -> None:
    from botocore import auth as boto_auth

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTSEAMS0000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test/seams/secret/not/real/0000000000")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    signed: list[bytes] = []
    original = boto_auth.SigV4Auth.add_auth

    def counting(self: Any, request: Any) -> None:
        signed.append(bytes(request.body or b""))
        original(self, request)

    monkeypatch.setattr(boto_auth.SigV4Auth, "add_auth", counting)
    with ChatEmulator("plain", require_auth=False) as emulator:
        emulator.fail_next(503)
        target = Target(url=emulator.base_url + "/chat/completions", route="r", provider="p",
                        auth=SigV4Auth(SigV4Settings(service="bedrock", region="us-east-1")),
                        framing="json")
        body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})

        async def send() -> Any:
            transport = HttpTransport(TransportConfig(max_retries=1, backoff_base=0.0))
            try:
                return await transport.post_json(target, body)
            finally:
                await transport.aclose()

        answer = asyncio.run(send())
        statuses = [r.status for r in emulator.received]
        authorizations = [r.headers.get("authorization", "") for r in emulator.received]
    assert answer["choices"] and statuses == [503, 200]
    assert signed == [body, body]  # signed twice, over the exact bytes sent
    assert all(a.startswith("AWS4-HMAC-SHA256 Credential=AKIATESTSEAMS0000000/")
               for a in authorizations)


def test_every_registered_codec_has_the_protocol_surface() -> None:
    wanted = ("resolve", "encode_request", "decode_response", "new_fold", "endpoint",
              "auth_scheme", "summary", "classify")
    for api in registry.apis():
        codec = registry.codec(api)
        assert codec.api == api
        missing = [name for name in wanted if not callable(getattr(codec, name, None))]
        assert missing == [], (api, missing)
        assert codec.turns is not None  # (every API is encoded turn by turn: ``TurnEncoder``)
        route = codec.resolve("custom", "http://127.0.0.1:1/v1", "m")
        assert route.api == api
        assert set(route.to_json()) >= {"route", "api", "carriers", "must_echo", "body_extras",
                                         "native"}
        assert isinstance(route.profile.describe(), list)
    assert httpx  # the transport's client library is what the auth hook plugs into
