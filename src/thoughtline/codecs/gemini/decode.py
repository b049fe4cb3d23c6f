"""Decode a whole ``generateContent`` response (and the fold's chunks) to a canonical turn.

Owns the response envelope: ``candidates[0].content.parts``, ``finishReason``, ``usageMetadata``,
``promptFeedback``, error objects. Parts themselves go through the shared ``PartsBuilder``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.gemini.parts import PartsBuilder
from thoughtline.codecs.gemini.wire import text_of
from thoughtline.errors import ProtocolError
from thoughtline.events import Done
from thoughtline.messages import FinishReason, Message, Origin, Usage

# https://ai.google.dev/api/generate-content#FinishReason
_FINISH: dict[str, FinishReason] = {
    "STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter",
    "RECITATION": "content_filter", "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter", "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter", "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "LANGUAGE": "other", "OTHER": "other", "MALFORMED_FUNCTION_CALL": "other",
    "UNEXPECTED_TOOL_CALL": "other", "TOO_MANY_TOOL_CALLS": "other",
}


def neutral_finish(reason: str | None, *, calls: bool) -> FinishReason | None:
    """Gemini says ``STOP`` after function calls too; a turn that called tools ended for them."""
    if not reason:
        return None
    if reason == "STOP" and calls:
        return "tool_calls"
    return _FINISH.get(reason, "other")


def usage_of(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()

    def count(name: str) -> int:
        return shape.count(raw.get(name), f"usageMetadata.{name}")

    thoughts = count("thoughtsTokenCount")
    # candidatesTokenCount leaves the thinking out; neutral output counts include it.
    return Usage(input_tokens=count("promptTokenCount"),
                 output_tokens=count("candidatesTokenCount") + thoughts,
                 reasoning_tokens=thoughts, cached_tokens=count("cachedContentTokenCount"))


def check_error(body: Mapping[str, Any]) -> None:
    error = body.get("error")
    if isinstance(error, Mapping):
        raise ProtocolError(f"provider returned an error object: {dict(error)!r:.300}")


def first_candidate(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    candidates = body.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], Mapping):
        return candidates[0]
    return None


def candidate_parts(candidate: Mapping[str, Any] | None) -> list[Any]:
    if candidate is None:
        return []
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return parts if isinstance(parts, list) else []


def blocked_reason(body: Mapping[str, Any]) -> str | None:
    feedback = body.get("promptFeedback")
    if isinstance(feedback, Mapping) and text_of(feedback.get("blockReason")):
        return feedback["blockReason"]
    return None


def decode_response(body: Any, origin: Origin, *, seed: str = "") -> Done:
    """Decode a whole (non-streamed) ``generateContent`` response."""
    if not isinstance(body, Mapping):
        raise ProtocolError("response body is not a JSON object")
    check_error(body)
    candidate = first_candidate(body)
    if candidate is None and blocked_reason(body) is None:
        raise ProtocolError("response has no candidates[0]: not a generateContent response")
    rid = text_of(body.get("responseId"))
    builder = PartsBuilder(origin, scope=f"{seed}:{rid}" if seed else rid)
    for part in candidate_parts(candidate):
        builder.add(part)
    message = Message(role="assistant", parts=tuple(builder.parts()), origin=origin)
    usage = usage_of(body.get("usageMetadata"))
    if candidate is None:  # the prompt itself was blocked: no candidate at all
        return Done(message=message, usage=usage, finish_reason=blocked_reason(body),
                    finish="content_filter")
    reason = text_of(candidate.get("finishReason"))
    return Done(message=message, usage=usage, finish_reason=reason or None,
                finish=neutral_finish(reason, calls=bool(builder.calls)))
