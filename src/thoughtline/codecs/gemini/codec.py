"""The Gemini codec object the core talks to (``thoughtline.codecs.base.Codec``).

Binds the pure modules to the protocol: routes from ``routes/gemini.toml``, the AI Studio and
Vertex endpoint shapes, the authentication each expects, the request turn by turn (``turns``: the
core's wire cache stores and splices each turn's bytes) and the reading of a rejection.
"""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urlsplit

from thoughtline import platforms
from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson
from thoughtline.codecs.common import path_segment
from thoughtline.codecs.gemini import rejections
from thoughtline.codecs.gemini.decode import decode_response
from thoughtline.codecs.gemini.encode import OWNED
from thoughtline.codecs.gemini.fold import StreamFold
from thoughtline.codecs.gemini.profile import GeminiProfile
from thoughtline.codecs.gemini.turns import TURNS, Sent, summary
from thoughtline.codecs.gemini.wire import API
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route, api_table, hostname_of, path_of

_MODELS_PATH = "/publishers/google/models"


@cache
def _profile(row_id: str) -> GeminiProfile:
    table = api_table(API)
    row = next(r for r in table.rows if r.id == row_id)
    return GeminiProfile.from_row(row.profile, table.sections.get("services", {}))


def platform_of(provider: ProviderConfig) -> str:
    """Vertex when the base URL is a Vertex host, else the Gemini API (AI Studio)."""
    return "vertex" if platforms.on_platform(provider.base_url, "vertex") else "ai-studio"


def request_url(provider: ProviderConfig, model: str, *, stream: bool) -> str:
    """``…/models/{model}:generateContent`` (AI Studio), or the Vertex publisher-model path
    (a base without ``/projects/`` is scoped by the platform layer)."""
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    model = path_segment(model)
    place = platforms.locate(provider, platform_of(provider))
    base = place.base
    path = urlsplit(base).path.rstrip("/")
    if path.lower().endswith(_MODELS_PATH):
        return f"{base}/{model}:{method}"
    if place.platform.name == "vertex" and "/projects/" not in path:
        return f"{place.scoped()}{_MODELS_PATH}/{model}:{method}"
    return f"{base}/models/{model}:{method}"


class Gemini(CodecBase):
    """Gemini ``generateContent`` / ``streamGenerateContent?alt=sse`` (AI Studio and Vertex)."""

    api = API
    owned = OWNED
    turns = TURNS

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
        return Endpoint(url=request_url(provider, model, stream=stream),
                        framing="sse" if stream else "json")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or platforms.facts(platform_of(provider)).auth

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        return summary(_sent(encoded))

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        return rejections.lesson(status, body, _sent(encoded), plan)


def _sent(encoded: Encoded) -> Sent:
    """What the request carried, read from its turns as sent (``turns.Sent``)."""
    index = encoded.index
    return index if isinstance(index, Sent) else Sent((), (), (), sign_every=False, extras=())


CODEC = Gemini()
