"""Decode a whole Responses response (and the fold's rebuilt output list) to a canonical turn.

Owns the mapping of output items to parts, in order:

- ``reasoning`` → ``Reasoning`` (``kind="encrypted"`` with ``data`` = ``encrypted_content`` when
  the item has one; readable ``reasoning_text`` content → ``text``; ``summary_text`` → ``summary``),
  the item kept verbatim under ``native[NS]`` (its ``id`` included) so replay is byte-identical;
- ``message`` → one ``Text`` per ``output_text``/``refusal`` part; the first carries the item as
  a *shell* (each such part's text replaced by null, key order kept, output-only ``logprobs``
  left out) so ``id``, ``status`` and ``phase`` go back exactly as received, without storing the
  text twice;
- ``function_call`` → ``ToolCall`` (``call_id``, ``name``, ``arguments`` as the exact text), its
  other fields (``id``, ``status`` …) under ``native[NS]``;
- any other item type (web search, file search, MCP, compaction …) → ``Opaque``, verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.openai_responses.tools import call_rest, called_name
from thoughtline.codecs.openai_responses.wire import (
    ENCRYPTED,
    FUNCTION_CALL,
    MESSAGE,
    NS,
    OUTPUT_ONLY_PART_KEYS,
    OUTPUT_TEXT,
    REASONING,
    REASONING_TEXT,
    REFUSAL,
    SUMMARY_TEXT,
    is_map,
    joined,
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
    ReasoningKind,
    Text,
    ToolCall,
    Usage,
)

#: Content part type → the key that holds its text.
TEXT_KEYS = {OUTPUT_TEXT: "text", REFUSAL: "refusal"}
_CALL_FIELDS = frozenset({"call_id", "name", "arguments"})


def usage_of(raw: Any) -> Usage:
    if not is_map(raw):
        return Usage()
    output = raw.get("output_tokens_details")
    cached = raw.get("input_tokens_details")
    return Usage(
        input_tokens=shape.count(raw.get("input_tokens") or None, "usage.input_tokens"),
        output_tokens=shape.count(raw.get("output_tokens") or None, "usage.output_tokens"),
        reasoning_tokens=shape.count(output.get("reasoning_tokens") or None,
                                     "usage.output_tokens_details.reasoning_tokens")
        if is_map(output) else 0,
        cached_tokens=shape.count(cached.get("cached_tokens") or None,
                                  "usage.input_tokens_details.cached_tokens")
        if is_map(cached) else 0,
    )


def reasoning_part(item: Mapping[str, Any], origin: Origin | None, *,
                   complete: bool = True) -> Reasoning:
    encrypted = item.get(ENCRYPTED)
    data = encrypted if isinstance(encrypted, str) and encrypted else None
    text = joined(item.get("content"), REASONING_TEXT)
    summary = joined(item.get("summary"), SUMMARY_TEXT)
    kind: ReasoningKind = (
        "encrypted" if data is not None else ("text" if text is not None else "summary"))
    return Reasoning(kind=kind, text=text, summary=summary, data=data, complete=complete,
                     origin=origin, native={NS: item})


def message_parts(item: Mapping[str, Any]) -> list[Text]:
    """The texts of an assistant ``message`` item; the first carries the item's shell."""
    content = item.get("content")
    content = content if isinstance(content, list) else []
    texts: list[str] = []
    shell_parts: list[Any] = []
    for part in content:
        key = TEXT_KEYS.get(shape.key(part.get("type"), "content[].type")) if is_map(
            part) else None
        if key is None:
            shell_parts.append(part)
            continue
        texts.append(text_of(part.get(key)))
        shell_parts.append({k: (None if k == key else v) for k, v in part.items()
                            if k not in OUTPUT_ONLY_PART_KEYS})
    shell = {k: (shell_parts if k == "content" else v) for k, v in item.items()}
    if not texts:
        return [Text(text="", native={NS: {"item": shell}})]
    out = [Text(text=texts[0], native={NS: {"item": shell}})]
    out.extend(Text(text=t, native={NS: {"part": i}}) for i, t in enumerate(texts[1:], 1))
    return out


def native_problem(value: Mapping[str, Any]) -> tuple[str, str] | None:
    """What is wrong with a stored ``native[NS]`` record (from an imported file) that encoding it
    back would trip on: ``(path below the record, why)``, or None. Records are what this module
    writes: a whole item, a text's message ``item`` shell, a ``part`` index, a ``response`` id."""
    if "item" in value:
        shell = value["item"]
        if not is_map(shell):
            return ".item", "must be a JSON object (the message item the text came in)"
        content = shell.get("content")
        if content is not None and not isinstance(content, list):
            return ".item.content", "must be a list of content parts"
        for index, part in enumerate(content or ()):
            if is_map(part) and not isinstance(part.get("type", ""), str):
                return f".item.content[{index}].type", "must be a string"
    if not isinstance(value.get("type", ""), str):
        return ".type", "must be a string"
    return None


def call_part(item: Mapping[str, Any], *, fallback_id: str) -> ToolCall:
    arguments = item.get("arguments")
    if not isinstance(arguments, str):
        arguments = shape.json_text(arguments, "function_call.arguments") \
            if arguments is not None else ""
    call_id = text_of(item.get("call_id")) or text_of(item.get("id")) or fallback_id
    return ToolCall(id=call_id, name=called_name(item), arguments=arguments,
                    native={NS: call_rest(item, _CALL_FIELDS)})


def parts_of(output: Any, origin: Origin | None, *, seed: str = "",
             complete: tuple[bool, ...] = ()) -> list[Part]:
    """The canonical parts of an ``output`` list, in order. ``complete[i]`` False marks item i
    as cut short (a stream that ended before its ``output_item.done``)."""
    if not isinstance(output, list):
        raise ProtocolError(f"response output is not a list: {output!r:.80}")
    parts: list[Part] = []
    for index, item in enumerate(output):
        if not is_map(item):
            raise ProtocolError(f"response output item is not an object: {item!r:.80}")
        done = complete[index] if index < len(complete) else True
        kind = item.get("type")
        if kind == REASONING:
            parts.append(reasoning_part(item, origin, complete=done))
        elif kind == MESSAGE:
            parts.extend(message_parts(item))
        elif kind == FUNCTION_CALL:
            parts.append(call_part(item, fallback_id=f"call_{seed or 'tl'}_{index}"))
        else:
            parts.append(Opaque(native={NS: item}, origin=origin))
    return parts


def neutral_finish(status: str, reason: str, parts: list[Part]) -> FinishReason:
    if status == "incomplete":
        return {"max_output_tokens": "length", "content_filter": "content_filter"}.get(
            reason, "other")  # type: ignore[return-value]
    if status in ("failed", "cancelled"):
        return "other"
    if any(isinstance(p, ToolCall) for p in parts):
        return "tool_calls"
    if any(isinstance(p, Text) and _is_refusal(p) for p in parts):
        return "refusal"
    return "stop"


def _is_refusal(text: Text) -> bool:
    shell = text.native.get(NS, {}).get("item")
    return bool(shell) and any(is_map(c) and c.get("type") == REFUSAL
                               for c in shell.get("content") or ())


def message_of(response: Mapping[str, Any], origin: Origin, *, seed: str = "",
               complete: tuple[bool, ...] = (), incomplete: bool = False) -> Done:
    """The turn a response object describes (the fold calls this with its rebuilt output)."""
    parts = parts_of(response.get("output") or [], origin, seed=seed, complete=complete)
    status = text_of(response.get("status")) or ("incomplete" if incomplete else "completed")
    details = response.get("incomplete_details")
    reason = text_of(details.get("reason")) if is_map(details) else ""
    response_id = text_of(response.get("id"))
    message = Message(role="assistant", parts=tuple(parts), origin=origin, incomplete=incomplete,
                      native={NS: {"response": response_id}} if response_id else {})
    return Done(message=message, usage=usage_of(response.get("usage")),
                finish_reason=reason or status,
                finish=None if incomplete else neutral_finish(status, reason, parts))


def failed(response: Mapping[str, Any]) -> None:
    """Raise when a response says the provider failed it (``status: failed`` with an ``error``):
    there is no turn to store, whatever output came before."""
    error = response.get("error")
    if is_map(error) and (response.get("status") == "failed" or not response.get("output")):
        raise ProtocolError(f"provider failed the response: {error.get('message') or error!r:.300}")


def decode_response(body: Any, origin: Origin, *, seed: str = "") -> Done:
    """A whole (non-streamed) response."""
    if not is_map(body):
        raise ProtocolError("the response is not a JSON object")
    failed(body)
    if body.get("object") not in (None, "response") and "output" not in body:
        raise ProtocolError(f"not a Responses object: {body!r:.120}")
    return message_of(body, origin, seed=seed)
