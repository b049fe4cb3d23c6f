"""The Chat Completions codec object the core talks to (``thoughtline.codecs.base.Codec``).

It binds the pure module functions (``encode``, ``decode``, ``fold``) to the protocol, resolves
routes from the Chat table (``profile``), and reads rejections (``rejections``): an unknown
replayed carrier teaches a drop, a "reasoning required" wording teaches the must-echo pad.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline import platforms
from thoughtline.codecs.base import Encoded, Endpoint, Lesson, RequestSpec
from thoughtline.codecs.openai_chat.decode import decode_response
from thoughtline.codecs.openai_chat.encode import (
    OWNED,
    Tally,
    WireCache,
    body_extras,
    encode_request,
    tally_summary,
    wire_summary,
)
from thoughtline.codecs.openai_chat.fold import StreamFold
from thoughtline.codecs.openai_chat.profile import resolve_chat
from thoughtline.codecs.openai_chat.wire import API
from thoughtline.codecs.splice import SplicedForms
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Message, Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route

#: OpenAI and OpenAI-compatible endpoints: the base URL the provider names, a bearer key.
PLATFORM = "openai"


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatIndex:
    """What the log needs about a body, kept while encoding it (no second walk, no parse)."""

    tally: Tally
    body_extras: list[str]


class OpenAIChat(SplicedForms):
    """OpenAI-compatible Chat Completions (``POST {base_url}/chat/completions``, SSE streams)."""

    api = API
    owned = OWNED
    cache = WireCache  # stored wire forms: codecs.splice

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        return resolve_chat(provider, base_url, model)

    def new_cache(self) -> WireCache:
        return WireCache()

    def encode_request(self, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
                       cache: WireCache | None = None) -> Encoded:
        body = encode_request(history, plan, model=spec.model, tools=spec.tools,
                              params=spec.params, stream=spec.stream, cache=cache)
        tally = cache.tally_of(body["messages"]) if cache is not None else None
        index = ChatIndex(tally=tally, body_extras=body_extras(body)) if tally else None
        if cache is not None and cache.spliced(body["messages"]):
            # Spliced from stored wire forms: the bytes are the request; a dict view of them is
            # parsed only if something asks for it (a rejection, a test).
            return Encoded(raw=orjson.dumps(body), index=index)
        if cache is not None:  # the messages earlier requests carried go in as their bytes
            parts = cache.prefix.parts
            return Encoded(body=body, index=index, dump=lambda: orjson.dumps(
                {**body, "messages": parts(body["messages"])}))
        return Encoded(body=body, index=index)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        return Endpoint(url=platforms.locate(provider, PLATFORM).base + "/chat/completions",
                        framing="sse" if stream else "json")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or platforms.facts(PLATFORM).auth

    def summary(self, encoded: Encoded, cache: WireCache | None = None) -> dict[str, Any]:
        if isinstance(encoded.index, ChatIndex):
            return tally_summary(encoded.index.tally, encoded.index.body_extras)
        return wire_summary(encoded.body, cache)

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        from thoughtline.codecs.openai_chat.rejections import lesson  # tables load on a 4xx

        return lesson(status, body, encoded, plan)


CODEC = OpenAIChat()
