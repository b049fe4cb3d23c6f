"""Decode a whole Converse response (and the fold's rebuilt content) to a canonical turn.

Claude thinking is stored in the shape the Anthropic codec shares (messages.py): a signed block is
``Reasoning(kind="signed", text, signature)`` (``text`` may be "": Opus 4.7 adaptive thinking
arrives signature-only, BerriAI/litellm#36507), a redacted one ``Reasoning(kind="redacted",
data=<the Anthropic data string>)``. On Converse ``redactedContent`` is base64 of that string (the
recorded ``RXU4…`` decodes to ``Eu8…``; fixtures SOURCES.md, observation 5), so it is decoded once
here and re-encoded by ``encode``; when the recorded bytes are not canonical base64 the block is
also kept verbatim. Other models' ``redactedContent`` (GPT-5.6 ``rsn_…``, Kimi K3) is
``Reasoning(kind="encrypted", data=<the wire string>)``. Tool ``input`` objects become compact JSON
text, the same text a stream's joined fragments normalize to.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import orjson

from thoughtline.codecs import shape
from thoughtline.codecs.bedrock.profile import claude_key
from thoughtline.codecs.bedrock.wire import (
    NS,
    REASONING,
    REASONING_TEXT,
    REDACTED,
    SIGNATURE,
    STOP_REASONS,
    TEXT,
    TOOL_USE,
    text_of,
)
from thoughtline.errors import ProtocolError
from thoughtline.events import Done
from thoughtline.messages import (
    FinishReason,
    Message,
    Opaque,
    Origin,
    Part,
    Reasoning,
    Text,
    ToolCall,
    Usage,
)


def usage_of(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    uncached = shape.count(raw.get("inputTokens") or None, "usage.inputTokens")
    read = shape.count(raw.get("cacheReadInputTokens") or None, "usage.cacheReadInputTokens")
    written = shape.count(raw.get("cacheWriteInputTokens") or None,
                          "usage.cacheWriteInputTokens")
    # Like Anthropic's, inputTokens leaves the cache reads and writes out (Bedrock's prompt
    # caching reports them apart): the prompt is inputTokens + both cache counts.
    return Usage(input_tokens=uncached,
                 output_tokens=shape.count(raw.get("outputTokens") or None,
                                           "usage.outputTokens"),
                 cached_tokens=read, prompt_tokens=uncached + read + written)


def neutral_finish(stop_reason: str | None) -> FinishReason | None:
    if stop_reason is None:
        return None
    return STOP_REASONS.get(stop_reason, "other")


def compact_json(value: Any) -> str:
    """Tool ``input`` as compact JSON text (a string is taken as the text received)."""
    if isinstance(value, str):
        try:
            return orjson.dumps(orjson.loads(value)).decode()
        except orjson.JSONDecodeError:
            return value  # a stream cut inside the arguments: keep what arrived
    return shape.json_text(value if value is not None else {}, "toolUse.input")


def _anthropic_data(wire: str) -> str | None:
    """The Anthropic ``data`` string inside a Claude ``redactedContent``, when it re-encodes to
    exactly the bytes received."""
    try:
        data = base64.b64decode(wire.encode("ascii"), validate=True).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        return None
    return data if base64.b64encode(data.encode("ascii")).decode("ascii") == wire else None


def _reasoning(block: Mapping[str, Any], origin: Origin, claude: bool) -> Reasoning:
    redacted = block.get(REDACTED)
    if isinstance(redacted, str):
        data = _anthropic_data(redacted) if claude else None
        if data is not None:
            return Reasoning(kind="redacted", data=data, origin=origin)
        return Reasoning(kind="encrypted", data=redacted, origin=origin,
                         native={NS: {REDACTED: redacted}} if claude else {})
    item = block.get(REASONING_TEXT)
    if not isinstance(item, Mapping):
        raise ProtocolError(f"reasoningContent holds neither reasoningText nor redactedContent: "
                            f"{block!r:.120}")
    text, signature = text_of(item.get(TEXT)), text_of(item.get(SIGNATURE))
    if signature:
        return Reasoning(kind="signed", text=text, signature=signature, origin=origin)
    # Claude always signs; an unsigned Claude block was cut off and is never replayed as signed.
    return Reasoning(kind="text", text=text, complete=not claude, origin=origin)


def parts_from_content(content: Any, origin: Origin, *, seed: str = "") -> list[Part]:
    """The canonical parts of an assistant ``content`` array, in order. A tool call that came
    without a ``toolUseId`` gets one made from ``seed`` (unique per request)."""
    if not isinstance(content, list):
        raise ProtocolError(f"Converse message content is not a list: {content!r:.80}")
    claude = bool(claude_key(origin.model))
    parts: list[Part] = []
    for block in content:
        if not isinstance(block, Mapping):
            raise ProtocolError(f"Converse content block is not an object: {block!r:.80}")
        if TEXT in block:
            if text_of(block[TEXT]):
                parts.append(Text(text=block[TEXT]))
        elif REASONING in block and isinstance(block[REASONING], Mapping):
            parts.append(_reasoning(block[REASONING], origin, claude))
        elif TOOL_USE in block and isinstance(block[TOOL_USE], Mapping):
            use = block[TOOL_USE]
            call_id = text_of(use.get("toolUseId")) or f"tooluse_{seed[:16]}_{len(parts)}"
            parts.append(ToolCall(id=call_id, name=text_of(use.get("name")),
                                  arguments=compact_json(use.get("input"))))
        else:
            parts.append(Opaque(native={NS: dict(block)}, origin=origin))
    return parts


def decode_response(body: Any, origin: Origin, *, seed: str = "") -> Done:
    """A whole ``Converse`` response → ``Done``."""
    if not isinstance(body, Mapping):
        raise ProtocolError("Converse response is not a JSON object")
    output = body.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    if not isinstance(message, Mapping):
        raise ProtocolError(f"Converse response has no output.message: {body!r:.200}")
    stop = body.get("stopReason")
    stop = stop if isinstance(stop, str) else None
    parts = parts_from_content(message.get("content"), origin, seed=seed)
    turn = Message(role="assistant", parts=tuple(parts), origin=origin)
    return Done(message=turn, usage=usage_of(body.get("usage")), finish_reason=stop,
                finish=neutral_finish(stop))
