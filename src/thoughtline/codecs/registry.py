"""Which codec speaks which API: one line per API. Adding an API is one module plus one line."""

from __future__ import annotations

import importlib
from types import ModuleType

from thoughtline.errors import UsageError

_CODECS = {
    "openai-chat": "thoughtline.codecs.openai_chat",
}


def codec(api: str) -> ModuleType:
    """The codec module for ``api`` (encode_request, decode_response, StreamFold, ...)."""
    try:
        return importlib.import_module(_CODECS[api])
    except KeyError:
        raise UsageError(f"no codec for API {api!r} yet (known: {', '.join(sorted(_CODECS))})"
                         ) from None


def apis() -> list[str]:
    return sorted(_CODECS)
