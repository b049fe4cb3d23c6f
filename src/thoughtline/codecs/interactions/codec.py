"""The Interactions codec object the core talks to (``thoughtline.codecs.base.Codec``).

Binds the pure modules to the protocol: routes from ``routes/gemini-interactions.toml``, the AI
Studio and Vertex endpoints (``…/v1beta/interactions``; Vertex
``…/v1beta1/projects/{p}/locations/{l}/interactions``: google-genai 3.6.1
``tests/interactions/test_auth.py``), the authentication each expects, the request log summary,
the ``stamp`` hook (each stored answer remembers its interaction id and the conversation digest,
``chain``) and the reading of a rejection. Its turns are stored and spliced by the core's wire
cache (``encode.TURNS``).
"""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urlsplit

from thoughtline import platforms
from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson
from thoughtline.codecs.interactions import chain, rejections
from thoughtline.codecs.interactions.decode import decode_response
from thoughtline.codecs.interactions.encode import OWNED, TURNS, Sent, summary
from thoughtline.codecs.interactions.fold import StreamFold
from thoughtline.codecs.interactions.profile import InteractionsProfile
from thoughtline.codecs.interactions.wire import API
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route, api_table, hostname_of, path_of


@cache
def _profile(row_id: str) -> InteractionsProfile:
    table = api_table(API)
    row = next(r for r in table.rows if r.id == row_id)
    return InteractionsProfile.from_row(row.profile, table.sections.get("services", {}))


def platform_of(provider: ProviderConfig) -> str:
    """Vertex when the base URL is a Vertex host, else the Gemini API (AI Studio)."""
    return "vertex" if platforms.on_platform(provider.base_url, "vertex") else "ai-studio"


def request_url(provider: ProviderConfig) -> str:
    """``{base}/interactions``; a Vertex base without ``/projects/`` is scoped by the platform
    layer (``…/v1beta1/projects/{p}/locations/{l}/interactions``)."""
    place = platforms.locate(provider, platform_of(provider))
    base = place.base
    if urlsplit(base).path.rstrip("/").endswith("/interactions"):
        return base
    if place.platform.name == "vertex":
        return f"{place.scoped(version='v1beta1')}/interactions"
    return f"{base}/interactions"


def _sent(encoded: Encoded) -> Sent:
    return encoded.index if isinstance(encoded.index, Sent) else Sent()


class Interactions(CodecBase):
    """The Gemini Interactions API (AI Studio and Vertex), whole and streamed (SSE)."""

    api = API
    owned = OWNED
    turns = TURNS  # each turn's steps stored and spliced by the core (``wire.cache``)

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        row = api_table(API).match(provider, base_url)
        return Route(row=row.id, api=API, provider=provider.strip().lower(),
                     host=hostname_of(base_url), model=model, profile=_profile(row.id),
                     path=path_of(base_url), explain=row.explain)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        return Endpoint(url=request_url(provider), framing="sse" if stream else "json")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or platforms.facts(platform_of(provider)).auth

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        return summary(_sent(encoded))

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        return rejections.lesson(status, body, _sent(encoded), plan)

    def stamp(self, done: Done, encoded: Encoded) -> Done:
        """Hook: the answer with the conversation digest when the server kept it, and with no
        interaction id when it did not (``store: false``)."""
        sent = _sent(encoded)
        if not sent.store:
            return chain.unstamped(done)
        return chain.stamped(done, chain.extended(sent.digest, done.message))


CODEC = Interactions()
