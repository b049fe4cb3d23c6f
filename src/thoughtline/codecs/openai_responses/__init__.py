"""OpenAI Responses API (and Responses-compatible services: xAI, DeepSeek, OpenRouter, Bedrock
Mantle): stateless replay of encrypted reasoning items, verbatim and in place.

Owns every Responses wire name: output and input items (``reasoning`` with ``id``, ``summary``,
``encrypted_content``; ``message`` with ``phase``; ``function_call``; ``function_call_output``),
``store``/``include``/``reasoning.*`` request fields, the SSE event types, and the error wordings
of rejected items. Pure: no I/O, no clock, no globals.

- ``wire``: names, the ``native`` namespace, constants;
- ``profile``: the typed route profile and its resolution from ``routes/openai-responses.toml``;
- ``decode``: a whole response (or the fold's rebuilt output) → canonical Message;
- ``fold``: an event stream → the same output list → ``decode``;
- ``encode``: history + replay plan → request body, with the per-turn wire cache;
- ``rejections``: a 4xx body → the fingerprints of exactly the offending items;
- ``codec``: the ``Codec`` object (``CODEC``) the registry hands out.
"""

from thoughtline.codecs.flat import WireCache
from thoughtline.codecs.openai_responses.codec import CODEC, OpenAIResponses
from thoughtline.codecs.openai_responses.decode import decode_response
from thoughtline.codecs.openai_responses.encode import (
    encode_message,
    encode_request,
    id_fingerprint,
    item_fingerprint,
    wire_summary,
)
from thoughtline.codecs.openai_responses.fold import StreamFold, fold
from thoughtline.codecs.openai_responses.profile import (
    ResponsesProfile,
    model_family,
    resolve_responses,
)
from thoughtline.codecs.openai_responses.rejections import WORDINGS, classify
from thoughtline.codecs.openai_responses.wire import API, NS

__all__ = [
    "API",
    "CODEC",
    "NS",
    "WORDINGS",
    "OpenAIResponses",
    "ResponsesProfile",
    "StreamFold",
    "WireCache",
    "classify",
    "decode_response",
    "encode_message",
    "encode_request",
    "fold",
    "id_fingerprint",
    "item_fingerprint",
    "model_family",
    "resolve_responses",
    "wire_summary",
]
