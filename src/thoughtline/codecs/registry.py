"""Which codec speaks which API: one line per API. Adding an API is one package plus one line.

Codecs load on first use (importing a codec never happens at start-up). ``register`` adds a codec
at run time: tests use it to plug in an API the registry does not list.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from thoughtline.codecs.base import Codec
from thoughtline.errors import UsageError

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
