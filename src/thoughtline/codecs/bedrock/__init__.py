"""AWS Bedrock Converse: encode a request per model policy, decode and fold responses.

Owns every Converse wire name (``reasoningContent``, ``reasoningText``, ``redactedContent``,
``toolUse``, ``toolResult``, ``additionalModelRequestFields`` …). Pure: no I/O, no clock, no
globals (the endpoint, the AWS region and the signing scheme come from ``thoughtline.platforms``).

- ``wire``: names and constants; ``profile``: model ids → families → typed route profiles;
- ``policy``: which reasoning of a stored turn each model receives (as neutral decisions);
- ``decode``: a whole response → canonical Message (Claude thinking in the shared shape);
- ``fold``: ConverseStream events → the whole content → ``decode``, so stream and whole agree;
- ``encode``: one turn's Converse blocks, and the body around the turns;
- ``turns``: the request turn by turn (``TurnEncoder``): same-role turns merged, opaque blocks
  located for ``rejections``;
- ``rejections``: the documented ValidationException wordings → what to learn;
- ``codec``: the ``Codec`` object (``CODEC``).
"""

from thoughtline.codecs.bedrock.codec import CODEC, Bedrock
from thoughtline.codecs.bedrock.decode import decode_response, parts_from_content
from thoughtline.codecs.bedrock.fold import StreamFold
from thoughtline.codecs.bedrock.profile import (
    BedrockProfile,
    claude_key,
    model_id,
    profile_for,
    resolve,
)
from thoughtline.codecs.bedrock.wire import API, NS

__all__ = [
    "API",
    "CODEC",
    "NS",
    "Bedrock",
    "BedrockProfile",
    "StreamFold",
    "claude_key",
    "decode_response",
    "model_id",
    "parts_from_content",
    "profile_for",
    "resolve",
]
