"""The Chat Completions codec object the core talks to (``thoughtline.codecs.base.Codec``).

It binds the pure module functions (``encode``, ``decode``, ``fold``) to the protocol, resolves
routes from the Chat table (``profile``), and reads rejections (``rejections``): an unknown
replayed carrier teaches a drop, a "reasoning required" wording teaches the must-echo pad.
"""

from __future__ import annotations

from typing import Any

from thoughtline import platforms
from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson
from thoughtline.codecs.openai_chat.decode import decode_response
from thoughtline.codecs.openai_chat.encode import OWNED, TURNS, ChatIndex, wire_summary
from thoughtline.codecs.openai_chat.fold import StreamFold
from thoughtline.codecs.openai_chat.profile import resolve_chat
from thoughtline.codecs.openai_chat.wire import API
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route

#: OpenAI and OpenAI-compatible endpoints: the base URL the provider names, a bearer key.
PLATFORM = "openai"


class OpenAIChat(CodecBase):
    """OpenAI-compatible Chat Completions (``POST {base_url}/chat/completions``, SSE streams)."""

    api = API
    owned = OWNED
    turns = TURNS  # each turn encoded once, stored and spliced by the core (``wire.cache``)

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        return resolve_chat(provider, base_url, model)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        return Endpoint(url=platforms.locate(provider, PLATFORM).base + "/chat/completions",
                        framing="sse" if stream else "json")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or platforms.facts(PLATFORM).auth

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        if isinstance(encoded.index, ChatIndex):
            return encoded.index.summary()
        return wire_summary(encoded.body)

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        from thoughtline.codecs.openai_chat.rejections import lesson  # tables load on a 4xx

        # The carriers the request carried, from its turns' counts (no walk of the body).
        return lesson(status, body, encoded, plan, sent=set(self.summary(encoded)["carriers"]))


CODEC = OpenAIChat()
