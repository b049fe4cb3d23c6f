"""Decode a whole Anthropic Messages response (and the fold's rebuilt one) to a canonical turn.

One wire message is one canonical assistant message, its blocks in their original interleaved
order: ``thinking`` → ``Reasoning(kind="signed")`` (its text may be "", the default shape on newer
models: the preserved-thinking page), ``redacted_thinking`` → ``Reasoning(kind="redacted")`` with
the base64 ``data`` exactly as received, ``text`` → ``Text`` (``citations`` kept natively),
``tool_use`` → ``ToolCall`` whose arguments are the ``input`` object serialized once, compactly
(the stream fold produces the identical text), and every other block (server tools, advisor
results, compaction) → ``Opaque`` replayed verbatim. Thinking without a signature (relays that
return unsigned thinking) is ``Reasoning(kind="text")``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.anthropic import models
from thoughtline.codecs.anthropic.wire import (
    FALLBACK,
    NS,
    REDACTED,
    TEXT,
    THINKING,
    TOOL_USE,
    neutral_finish,
    text_of,
)
from thoughtline.errors import ProtocolError
from thoughtline.events import Done
from thoughtline.messages import Message, Opaque, Origin, Part, Reasoning, Text, ToolCall, Usage


def arguments_text(value: Any) -> str:
    """A ``tool_use.input`` object as the canonical arguments text: compact JSON, key order kept."""
    return shape.json_text(value if value is not None else {}, "tool_use.input")


def block_part(block: Mapping[str, Any], origin: Origin, *, complete: bool = True) -> Part | None:
    """One content block as a canonical part (None for an empty text block)."""
    kind = block.get("type")
    if kind == THINKING:
        signature = text_of(block.get("signature")) or None
        if not complete:
            signature = None  # an interrupted block is never sent signed (extended-thinking)
        return Reasoning(kind="signed" if signature or not complete else "text",
                         text=text_of(block.get(THINKING)), signature=signature,
                         complete=complete, origin=origin)
    if kind == REDACTED:
        return Reasoning(kind="redacted", data=text_of(block.get("data")) or None,
                         complete=complete and bool(block.get("data")), origin=origin)
    if kind == TEXT:
        text = text_of(block.get(TEXT))
        citations = block.get("citations")
        if not text and not citations:
            return None  # the API rejects empty text blocks on replay
        return Text(text=text, native={NS: {"citations": citations}} if citations else {})
    if kind == TOOL_USE:
        return ToolCall(id=text_of(block.get("id")), name=text_of(block.get("name")),
                        arguments=arguments_text(block.get("input")))
    if not isinstance(kind, str):
        raise ProtocolError(f"content block without a type: {block!r:.120}")
    return Opaque(native={NS: dict(block)}, origin=origin)


def answered_by(origin: Origin, model: Any) -> Origin:
    """``origin`` naming the model a response says answered, where that is another model than
    the one asked for (a server-side fallback: beta_fallback_block); an alias or a dated id of the
    same model keeps the request's name, which the scope rules already read."""
    if not isinstance(model, str) or not model or not origin.model or model == origin.model:
        return origin
    asked, said = models.parse(origin.model), models.parse(model)
    same = (asked == said) if asked is not None and said is not None else (
        models.normalize(origin.model) == models.normalize(model))
    return origin if same else replace(origin, model=model)


def _hand_over(block: Mapping[str, Any]) -> str:
    """The model a ``fallback`` block hands the turn to ("" when it names none)."""
    to = block.get("to")
    return text_of(to.get("model")) if isinstance(to, Mapping) else ""


def origins(content: Sequence[Any], asked: Origin, answered: Origin) -> list[Origin]:
    """Each block's origin: the model that made it. Before the first ``fallback`` block that is
    the requested model (it declined), after each one that block's ``to`` (the turn's answering
    model when it names none); a turn without one was made wholly by the answering model."""
    if not any(isinstance(b, Mapping) and b.get("type") == FALLBACK for b in content):
        return [answered] * len(content)
    out = []
    current = asked
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == FALLBACK:
            out.append(current)  # the marker belongs to the route, judged like the turn
            to = _hand_over(block)
            current = replace(asked, model=to) if to else answered
            continue
        out.append(current)
    return out


def message_from_content(content: Sequence[Any], origin: Origin, *,
                         complete: Sequence[bool] | None = None,
                         incomplete: bool = False, model: Any = None) -> Message:
    """The canonical turn for a response's ``content`` list (``complete`` per block, if known;
    ``model``: the response's ``model``, the one that answered)."""
    answered = answered_by(origin, model)
    made = origins(content, origin, answered)
    parts: list[Part] = []
    for position, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise ProtocolError(f"content block is not an object: {block!r:.80}")
        whole = complete[position] if complete is not None else True
        part = block_part(block, made[position], complete=whole)
        if part is not None:
            parts.append(part)
    return Message(role="assistant", parts=tuple(parts), origin=answered, incomplete=incomplete)


def usage_of(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, Mapping) else 0
    uncached = shape.count(raw.get("input_tokens") or None, "usage.input_tokens")
    read = shape.count(raw.get("cache_read_input_tokens") or None,
                       "usage.cache_read_input_tokens")
    written = shape.count(raw.get("cache_creation_input_tokens") or None,
                          "usage.cache_creation_input_tokens")
    # input_tokens leaves out what was read from or written to the prompt cache: the prompt is
    # the sum of the three (docs.anthropic.com prompt-caching).
    return Usage(input_tokens=uncached,
                 output_tokens=shape.count(raw.get("output_tokens") or None,
                                           "usage.output_tokens"),
                 reasoning_tokens=shape.count(
                     thinking or None, "usage.output_tokens_details.thinking_tokens"),
                 cached_tokens=read, prompt_tokens=uncached + read + written)


def reports_of(body: Mapping[str, Any]) -> tuple[object, ...]:
    """``input_transformations`` entries (``thinking_dropped``, ``thinking_mismatch_allowed``),
    verbatim: preserved-thinking page, anthropic-sdk-ruby
    BetaThinkingMismatchAllowedInputTransformation; recorded in the fable51-drops-stale-thinking
    fixtures."""
    found = body.get("input_transformations")
    return tuple(found) if isinstance(found, list) else ()


def decode_response(body: Any, origin: Origin, *, seed: str = "") -> Done:
    """Decode a whole (non-streamed) Messages response."""
    if not isinstance(body, Mapping):
        raise ProtocolError("response body is not a JSON object")
    if body.get("type") == "error" or isinstance(body.get("error"), Mapping):
        raise ProtocolError(f"provider returned an error object: {body.get('error')!r:.300}")
    content = body.get("content")
    if not isinstance(content, list):
        raise ProtocolError("response has no content list: not a Messages response")
    stop = body.get("stop_reason")
    message = message_from_content(content, origin, model=body.get("model"))
    return Done(message=message, usage=usage_of(body.get("usage")),
                finish_reason=stop if isinstance(stop, str) else None,
                finish=neutral_finish(stop), reports=reports_of(body))
