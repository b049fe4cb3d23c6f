"""Anthropic Messages: signed thinking on the Anthropic API, Vertex, Foundry, Bedrock's Messages
API and Anthropic-compatible vendors.

Owns every Anthropic wire name (``thinking``, ``redacted_thinking``, ``signature_delta``,
``input_json_delta``, ``input_transformations``, ``block_binding`` …). Pure: no I/O, no clock.

- ``wire``: names and constants; ``models``: Claude ids and per-model facts;
- ``decode``: a whole response → canonical Message; ``fold``: SSE events → the same Message;
- ``profile``: the typed route profile and the signature scope;
- ``params``: thinking parameters and usage errors; ``walk``: the replay rules, one turn on the
  wire and what it depends on besides itself; ``turns``: the ``TurnEncoder`` (each turn's
  context, bytes and after facts, the walk state), so the core's wire cache stores and splices
  turns; ``encode``: the body around the turns' bytes and the index of the request as sent;
- ``binding``: per-turn prefix digests (which stored blocks an edit has unbound);
- ``rejections``: 400 wordings → one-retry lessons; ``codec``: the protocol object ``CODEC``
  (with the optional hooks ``stamp`` and ``reported`` the turn engine calls after a success).

What is sent in place of reasoning that cannot go signed: nothing (``encode``).
"""

from thoughtline.codecs.anthropic.codec import CODEC, Anthropic
from thoughtline.codecs.anthropic.decode import decode_response, message_from_content
from thoughtline.codecs.anthropic.encode import Index
from thoughtline.codecs.anthropic.fold import StreamFold, fold
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.walk import part_fingerprint

__all__ = [
    "CODEC",
    "Anthropic",
    "AnthropicProfile",
    "Index",
    "StreamFold",
    "decode_response",
    "fold",
    "message_from_content",
    "part_fingerprint",
]
