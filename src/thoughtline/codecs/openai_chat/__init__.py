"""OpenAI-compatible Chat Completions: encode a request for a route, decode and fold responses.

Owns every Chat Completions wire name: ``reasoning_content``, ``reasoning``, ``reasoning_details``,
Gemini-compat ``extra_content.google``, Copilot ``reasoning_text`` / ``reasoning_opaque`` /
``function.thought_signature``. Pure: no I/O, no clock, no globals.

- ``wire``: the names, namespaces and constants;
- ``decode``: a whole response (or the fold's rebuilt message) → canonical Message;
- ``fold``: a chunk stream → the whole message → ``decode``, so stream and whole agree;
- ``encode``: history + replay plan → request body, with the per-turn wire cache.
"""

from thoughtline.codecs.flat import WireCache
from thoughtline.codecs.openai_chat.codec import CODEC, OpenAIChat
from thoughtline.codecs.openai_chat.decode import decode_response, message_from_wire
from thoughtline.codecs.openai_chat.encode import (
    auth_headers,
    encode_message,
    encode_request,
    encode_tools,
    endpoint,
    wire_summary,
)
from thoughtline.codecs.openai_chat.fold import StreamFold, fold
from thoughtline.codecs.openai_chat.wire import (
    API,
    CARRIERS,
    GEMINI_DUMMY_SIGNATURE,
    NS_COPILOT,
    NS_GOOGLE,
    NS_GOOGLE_LEGACY,
    NS_MERGE,
    NS_MISTRAL,
    NS_OPENROUTER,
    PAD,
    RC,
    RD,
    R,
)

__all__ = [
    "API",
    "CARRIERS",
    "CODEC",
    "GEMINI_DUMMY_SIGNATURE",
    "NS_COPILOT",
    "NS_GOOGLE",
    "NS_GOOGLE_LEGACY",
    "NS_MERGE",
    "NS_MISTRAL",
    "NS_OPENROUTER",
    "PAD",
    "RC",
    "RD",
    "OpenAIChat",
    "R",
    "StreamFold",
    "WireCache",
    "auth_headers",
    "decode_response",
    "encode_message",
    "encode_request",
    "encode_tools",
    "endpoint",
    "fold",
    "message_from_wire",
    "wire_summary",
]
