"""The Responses codec object the core talks to (``thoughtline.codecs.base.Codec``).

It binds the pure modules (``profile``, ``encode``, ``decode``, ``fold``, ``rejections``) to the
protocol: routes from ``routes/openai-responses.toml``, ``POST {base_url}/responses`` with SSE
streams, bearer auth, and the repair of rejected encrypted items (fingerprint exactly the
offending ones, retry once without them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from thoughtline.codecs.base import Encoded, Endpoint, Lesson, RequestSpec
from thoughtline.codecs.openai_responses import rejections
from thoughtline.codecs.openai_responses.decode import decode_response
from thoughtline.codecs.openai_responses.encode import (
    WireCache,
    encode_request,
    origins_of,
    wire_summary,
)
from thoughtline.codecs.openai_responses.fold import StreamFold
from thoughtline.codecs.openai_responses.profile import resolve_responses
from thoughtline.codecs.openai_responses.wire import API
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Message, Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route


class OpenAIResponses:
    """OpenAI Responses (``POST {base_url}/responses``), stateless, SSE streams."""

    api = API

    def resolve(self, provider: str, base_url: str | None, model: str, *,
                echo: str = "auto") -> Route:
        return resolve_responses(provider, base_url, model)

    def new_cache(self) -> WireCache:
        return WireCache()

    def encode_request(self, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
                       cache: WireCache | None = None) -> Encoded:
        settings = spec.settings or plan.settings
        body = encode_request(history, plan, model=spec.model, tools=spec.tools,
                              params=spec.params, settings=settings, stream=spec.stream,
                              cache=cache)
        # the history, to map a rejected body's items back to their origins (classify only)
        return Encoded(body=body, index=tuple(history))

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        return Endpoint(url=provider.base_url.rstrip("/") + "/responses",
                        framing="sse" if stream else "json")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or "bearer"

    def summary(self, encoded: Encoded, cache: WireCache | None = None) -> dict[str, Any]:
        return wire_summary(encoded.body)

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        provider = plan.target.provider if plan.target is not None else "the provider"
        origins = origins_of(encoded.index) if encoded.index else None
        return rejections.classify(status, body, encoded.body, provider=provider,
                                   origins=origins, target=plan.target)


CODEC = OpenAIResponses()
