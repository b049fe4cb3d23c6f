"""The Chat Completions codec object the core talks to (``thoughtline.codecs.base.Codec``).

It binds the pure module functions (``encode``, ``decode``, ``fold``) to the protocol, resolves
routes from the Chat table, and reads rejections through the fallback classifier: an unknown
replayed carrier teaches a drop, a "reasoning required" wording teaches the must-echo pad.
"""

from __future__ import annotations

from typing import Any

from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson
from thoughtline.codecs.openai_chat.decode import decode_response
from thoughtline.codecs.openai_chat.encode import OWNED, TURNS, ChatIndex, wire_summary
from thoughtline.codecs.openai_chat.fold import StreamFold
from thoughtline.codecs.openai_chat.wire import API
from thoughtline.config import ProviderConfig
from thoughtline.errors import UsageError
from thoughtline.events import Done
from thoughtline.messages import Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.chat import ECHO_CARRIER, resolve_chat
from thoughtline.routes.resolve import Route
from thoughtline.verdicts import Verdict


class OpenAIChat(CodecBase):
    """OpenAI-compatible Chat Completions (``POST {base_url}/chat/completions``, SSE streams)."""

    api = API
    owned = OWNED
    turns = TURNS  # each turn encoded once, stored and spliced by the core (``wirecache``)

    def resolve(self, provider: str, base_url: str | None, model: str, *,
                echo: str = "auto") -> Route:
        return resolve_chat(provider, base_url, model, echo=echo)  # type: ignore[arg-type]

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        if not provider.base_url:
            raise UsageError(f"provider {provider.id!r} has no base URL: pass --base-url or set "
                             f"base_url under [providers.{provider.id}] in config.toml")
        return Endpoint(url=provider.base_url.rstrip("/") + "/chat/completions",
                        framing="sse" if stream else "json")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or "bearer"

    def summary(self, encoded: Encoded, cache: Any = None) -> dict[str, Any]:
        if isinstance(encoded.index, ChatIndex):
            return encoded.index.summary()
        return wire_summary(encoded.body)

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        from thoughtline import fallback  # its wording tables load only when a request fails

        profile = plan.profile
        target = plan.target
        # The carriers the request carried, from its turns' counts (no walk of the body).
        sent = set(self.summary(encoded)["carriers"])
        c = fallback.classify(status, body, sent=sent, must_echo=profile.pad,
                              top_level=encoded.body.keys())
        if target is None:
            return None
        key = {"provider": target.provider, "host": target.host, "model": target.model}
        if c.action == "drop" and (c.drop & profile.carriers):
            verdict = Verdict(**key, drop=frozenset(c.drop & profile.carriers), reason=c.reason)
        elif (c.action == "pad" and not profile.pad and ECHO_CARRIER in profile.carriers
              and profile.echo != "never"):
            verdict = Verdict(**key, pad=True, reason=c.reason)
        else:
            return None
        return Lesson(notice=fallback.describe(c, model=target.model), verdict=verdict,
                      wording=c.wording)


CODEC = OpenAIChat()
