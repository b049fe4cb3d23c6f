"""Which codec speaks which API: one line per API. Adding an API is one package plus one line.

Codecs load on first use (importing a codec never happens at start-up). ``register`` adds a codec
at run time: tests use it to plug in an API the registry does not list. ``resolve`` answers a
route for any API: its codec reads its route data (``routes/<api>.toml``), and the user's
must-echo option is set on the profile once, here.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from thoughtline.codecs.base import Codec, Echo
from thoughtline.errors import UsageError

if TYPE_CHECKING:
    from thoughtline.config import ProviderConfig
    from thoughtline.routes.resolve import Route

#: API id -> "module:attribute" of its codec object.
_CODECS: dict[str, str] = {
    "openai-chat": "thoughtline.codecs.openai_chat.codec:CODEC",
    "gemini": "thoughtline.codecs.gemini.codec:CODEC",
    "bedrock": "thoughtline.codecs.bedrock.codec:CODEC",
    "openai-responses": "thoughtline.codecs.openai_responses.codec:CODEC",
    "anthropic": "thoughtline.codecs.anthropic.codec:CODEC",
    "gemini-interactions": "thoughtline.codecs.interactions.codec:CODEC",
}
_LOADED: dict[str, Codec] = {}


def codec(api: str) -> Codec:
    """The codec object for ``api``."""
    found = _LOADED.get(api)
    if found is not None:
        return found
    try:
        module, _, attribute = _CODECS[api].partition(":")
    except KeyError:
        raise UsageError(f"no codec for API {api!r} yet (known: {', '.join(apis())})") from None
    found = getattr(importlib.import_module(module), attribute)
    _LOADED[api] = found
    return found


def resolve(api: str, provider: str, base_url: str | None = None, model: str = "", *,
            echo: Echo = "auto") -> Route:
    """The route for (provider id, base URL, model) on ``api``, under the must-echo option."""
    return resolve_on(codec(api), provider, base_url, model, echo=echo)


def resolve_on(codec_object: Codec, provider: str, base_url: str | None, model: str, *,
               echo: Echo = "auto") -> Route:
    """``codec_object``'s route, with ``echo`` set on its profile (``Profile.with_echo``):
    ``auto`` is the route data's own rule, so the codec's answer stands as it is."""
    route = codec_object.resolve(provider, base_url, model)
    if echo == "auto":
        return route
    return replace(route, profile=route.profile.with_echo(echo))


def route_for(codec_object: Codec, provider: ProviderConfig) -> Route:
    """The route a configured provider's requests take (its ``echo`` was checked by config)."""
    return resolve_on(codec_object, provider.route_id, provider.base_url, provider.model,
                      echo=cast(Echo, provider.echo))


def native_problem(namespace: str, value: Mapping[str, Any]) -> tuple[str, str] | None:
    """What any codec finds wrong with a stored ``native`` record (``codecs.base.ChecksNative``):
    ``(path below the record, why)``, or None. Loads every codec: for checking imports."""
    for api in apis():
        problem = codec(api).native_problem(namespace, value)
        if problem is not None:
            return problem
    return None


def register(api: str, codec_object: Codec) -> None:
    """Make ``codec_object`` the codec of ``api`` (for plug-ins and tests)."""
    _LOADED[api] = codec_object


def unregister(api: str) -> None:
    _LOADED.pop(api, None)


def apis() -> list[str]:
    return sorted({*_CODECS, *_LOADED})
