"""Anthropic Messages: signed thinking on the Anthropic API, Vertex, Foundry, Bedrock's Messages
API and Anthropic-compatible vendors.

Owns every Anthropic wire name (``thinking``, ``redacted_thinking``, ``signature_delta``,
``input_json_delta``, ``input_transformations``, ``block_binding`` …). Pure: no I/O, no clock.

- ``wire``: names and constants; ``models``: Claude ids and per-model facts;
- ``decode``: a whole response → canonical Message; ``fold``: SSE events → the same Message;
- ``profile``: the typed route profile and the signature scope;
- ``params``: thinking parameters and usage errors; ``walk``: one turn on the wire, the rules
  it depends on besides itself, the walk over a history; ``encode``: history + plan → body +
  index;
- ``binding``: per-turn prefix digests (which stored blocks an edit has unbound);
- ``forms``: each turn's stored wire form, and the splice of a resumed history from them;
- ``rejections``: 400 wordings → one-retry lessons; ``codec``: the protocol object ``CODEC``
  (with the optional hooks ``stamp`` and ``reported`` the turn engine calls after a success).

What is sent in place of reasoning that cannot go signed: nothing (``encode``).
"""

from thoughtline.codecs.anthropic.codec import CODEC, Anthropic
from thoughtline.codecs.anthropic.decode import decode_response, message_from_content
from thoughtline.codecs.anthropic.encode import Index, WireCache, encode_request, part_fingerprint
from thoughtline.codecs.anthropic.fold import StreamFold, fold
from thoughtline.codecs.anthropic.profile import AnthropicProfile

__all__ = [
    "CODEC",
    "Anthropic",
    "AnthropicProfile",
    "Index",
    "StreamFold",
    "WireCache",
    "decode_response",
    "encode_request",
    "fold",
    "message_from_content",
    "part_fingerprint",
]
