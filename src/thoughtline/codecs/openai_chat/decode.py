"""Decode a whole Chat Completions response (and the fold's rebuilt message) to a canonical turn.

Every carrier is read here: flat ``reasoning_content`` / ``reasoning``, ``reasoning_details`` items
(kept verbatim), Mistral thinking chunks, Gemini-compat ``extra_content.google`` (message and tool
calls), Copilot ``reasoning_text`` / ``reasoning_opaque`` / ``function.thought_signature``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, TypeGuard

from thoughtline.codecs import shape
from thoughtline.codecs.openai_chat.wire import (
    NS_COPILOT,
    NS_GOOGLE,
    NS_GOOGLE_LEGACY,
    NS_MERGE,
    NS_MISTRAL,
    NS_OPENROUTER,
    RC,
    RD,
    RD_KINDS,
    R,
)
from thoughtline.codecs.openai_chat.wire import text_of as _str
from thoughtline.errors import ProtocolError
from thoughtline.events import Done
from thoughtline.messages import (
    FinishReason,
    Message,
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
    details = raw.get("completion_tokens_details") or {}
    prompt_details = raw.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=shape.count(raw.get("prompt_tokens") or None, "usage.prompt_tokens"),
        output_tokens=shape.count(raw.get("completion_tokens") or None,
                                  "usage.completion_tokens"),
        reasoning_tokens=shape.count(details.get("reasoning_tokens") or None,
                                     "usage.completion_tokens_details.reasoning_tokens")
        if isinstance(details, Mapping) else 0,
        cached_tokens=shape.count(prompt_details.get("cached_tokens") or None,
                                  "usage.prompt_tokens_details.cached_tokens")
        if isinstance(prompt_details, Mapping) else 0,
    )


def _details_part(item: Any, origin: Origin) -> Reasoning:
    if not isinstance(item, Mapping):
        raise ProtocolError(f"reasoning_details item is not an object: {item!r:.80}")
    item_type = _str(item.get("type"))
    signature = _str(item.get("signature")) or None
    kind = RD_KINDS.get(item_type, "encrypted" if item.get("data") else "text")
    if kind == "text" and signature:
        kind = "signed"
    return Reasoning(
        kind=kind, text=_str(item.get("text")) or None, summary=_str(item.get("summary")) or None,
        signature=signature, data=_str(item.get("data")) or None, origin=origin,
        native={NS_OPENROUTER: dict(item)},
    )


def _content_parts(content: Any, origin: Origin) -> list[Part]:
    if isinstance(content, str):
        return [Text(text=content)] if content else []
    if not isinstance(content, list):
        return []
    parts: list[Part] = []
    for chunk in content:
        if not isinstance(chunk, Mapping):
            continue
        if chunk.get("type") == "text" and _str(chunk.get("text")):
            parts.append(Text(text=chunk["text"]))
        elif chunk.get("type") == "thinking":
            # Mistral Magistral: thinking arrives as content chunks of text chunks.
            parts.append(Reasoning(kind="text", text=thinking_text(chunk.get("thinking")),
                                   origin=origin, native={NS_MISTRAL: dict(chunk)}))
    return parts


def thinking_text(inner: Any) -> str:
    if isinstance(inner, list):
        return "".join(_str(c.get("text")) for c in inner if isinstance(c, Mapping))
    return _str(inner)


def is_text_chunk(chunk: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(chunk, dict) and chunk.get("type") == "text" and isinstance(
        chunk.get("text"), str)


def _tool_call(raw: Any, position: int, response_id: str) -> ToolCall:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("function"), Mapping):
        raise ProtocolError(f"tool call without a function object: {raw!r:.120}")
    function = raw["function"]
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = "" if arguments is None else json_text(arguments)
    native: dict[str, Any] = {}
    extra = raw.get("extra_content")
    if isinstance(extra, Mapping) and isinstance(extra.get("google"), Mapping):
        native[NS_GOOGLE] = dict(extra["google"])
    if _str(function.get("thought_signature")):
        native[NS_COPILOT] = {"thought_signature": function["thought_signature"]}
    call_id = _str(raw.get("id")) or _synthetic_call_id(response_id, position)
    return ToolCall(id=call_id, name=_str(function.get("name")), arguments=arguments,
                    native=native)


def _synthetic_call_id(response_id: str, position: int) -> str:
    # Gemini's compatible endpoint returns "" ids; results must still reference the call.
    seed = f"{response_id}:{position}".encode()
    return "call_tl_" + hashlib.sha256(seed).hexdigest()[:20]


def json_text(value: Any) -> str:
    return shape.json_text(value, "function.arguments")


def message_from_wire(wire: Mapping[str, Any], origin: Origin, *, response_id: str = "",
                      incomplete: bool = False, seed: str = "") -> Message:
    """Decode one assistant ``message`` object (or the fold's rebuilt one) to a canonical turn."""
    parts: list[Part] = []
    flat = next((t for t in (_str(wire.get(RC)), _str(wire.get(R))) if t.strip()), "")
    if flat:
        parts.append(Reasoning(kind="text", text=flat, origin=origin, complete=not incomplete))
    details = wire.get(RD)
    if isinstance(details, list):
        parts.extend(_details_part(item, origin) for item in details)
    native: dict[str, Any] = {}
    copilot = {k: wire[k] for k in ("reasoning_text", "reasoning_opaque") if _str(wire.get(k))}
    if copilot:
        native[NS_COPILOT] = copilot
        if not flat and _str(copilot.get("reasoning_text")).strip():
            parts.append(Reasoning(kind="text", text=copilot["reasoning_text"], origin=origin))
    # Merge Gateway: the reasoning in message.thinking, signed by message.thinking_signature
    # (docs.merge.dev/merge-gateway/capabilities/reasoning; hermes-agent#101392).
    merge = {k: wire[k] for k in ("thinking", "thinking_signature") if _str(wire.get(k))}
    if merge:
        native[NS_MERGE] = merge
        if not flat and not copilot and _str(merge.get("thinking")).strip():
            parts.append(Reasoning(kind="text", text=merge["thinking"], origin=origin))
    extra = wire.get("extra_content")
    if isinstance(extra, Mapping) and isinstance(extra.get("google"), Mapping):
        native[NS_GOOGLE] = dict(extra["google"])
    if _str(wire.get("thought_signature")):
        native[NS_GOOGLE_LEGACY] = {"thought_signature": wire["thought_signature"]}
    parts.extend(_content_parts(wire.get("content"), origin))
    calls = wire.get("tool_calls")
    if isinstance(calls, list):
        scope = f"{seed}:{response_id}" if seed else response_id
        parts.extend(_tool_call(c, i, scope) for i, c in enumerate(calls))
    if incomplete:
        parts = [_mark_incomplete(p) for p in parts]
    return Message(role="assistant", parts=tuple(parts), origin=origin, incomplete=incomplete,
                   native=native)


def _mark_incomplete(part: Part) -> Part:
    if isinstance(part, Reasoning) and part.complete:
        return Reasoning(kind=part.kind, text=part.text, summary=part.summary,
                         signature=part.signature, data=part.data, complete=False,
                         origin=part.origin, native=part.native)
    return part


_FINISH: dict[str, FinishReason] = {
    "stop": "stop", "tool_calls": "tool_calls", "function_call": "tool_calls",
    "length": "length", "content_filter": "content_filter", "end_turn": "stop",
    "tool_use": "tool_calls", "max_tokens": "length",
}


def neutral_finish(reason: Any) -> FinishReason | None:
    """The neutral finish reason for a Chat ``finish_reason`` (None when there is none)."""
    if not isinstance(reason, str) or not reason:
        return None
    return _FINISH.get(reason, "other")


def _first_choice(body: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        if isinstance(body.get("error"), Mapping):
            raise ProtocolError(f"provider returned an error object: {body['error']!r:.300}")
        raise ProtocolError("response has no choices[0]: not a Chat Completions response")
    return choices[0]


def decode_response(body: Mapping[str, Any], origin: Origin, *, seed: str = "") -> Done:
    """Decode a whole (non-streamed) Chat Completions response."""
    if not isinstance(body, Mapping):
        raise ProtocolError("response body is not a JSON object")
    choice = _first_choice(body)
    wire = choice.get("message")
    if not isinstance(wire, Mapping):
        raise ProtocolError("choices[0].message is missing or not an object")
    message = message_from_wire(wire, origin, response_id=_str(body.get("id")), seed=seed)
    finish = choice.get("finish_reason")
    return Done(message=message, usage=usage_of(body.get("usage")), finish_reason=finish,
                finish=neutral_finish(finish))
