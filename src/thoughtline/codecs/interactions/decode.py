"""Decode a whole ``Interaction`` (google-genai 3.6.1 ``InteractionTypedDict``) to a canonical turn.

The answer is the model's steps: ``thought`` (``signature`` always present, ``summary``
optional: ai.google.dev/gemini-api/docs/interactions/thinking), ``model_output`` (``content`` text
items) and ``function_call`` (``id``, ``name``, ``arguments`` object). Input steps the interaction
may echo (``user_input``, ``function_result``) are not the answer and are skipped, as are step types
this codec does not speak (server tools). The interaction ``id`` goes under ``native`` for the
stateful chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.interactions.chain import ID_KEY
from thoughtline.codecs.interactions.wire import CALL, NS, OUTPUT, THOUGHT, text_of, texts
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

# InteractionStatus values (google-genai 3.6.1 ``interaction.py``) that end an answer.
_FINISH: dict[str, FinishReason] = {
    "completed": "stop", "requires_action": "tool_calls", "incomplete": "length",
    "budget_exceeded": "length", "cancelled": "other", "failed": "other",
}


def finish_of(status: str, *, calls: bool) -> FinishReason | None:
    reason = _FINISH.get(status)
    if reason == "stop" and calls:
        return "tool_calls"
    return reason


def usage_of(raw: Any) -> Usage:
    """``Usage`` (``total_input_tokens`` …); thought tokens are counted into the output, as for
    ``generateContent`` (unverified for this API: no recorded usage block)."""
    if not isinstance(raw, Mapping):
        return Usage()

    def count(name: str) -> int:
        return shape.count(raw.get(name), f"usage.{name}")

    thoughts = count("total_thought_tokens")
    return Usage(input_tokens=count("total_input_tokens"),
                 output_tokens=count("total_output_tokens") + thoughts,
                 reasoning_tokens=thoughts, cached_tokens=count("total_cached_tokens"))


def check_error(body: Mapping[str, Any]) -> None:
    error = body.get("error")
    if isinstance(error, Mapping):
        raise ProtocolError(f"provider returned an error object: {dict(error)!r:.300}")
    if body.get("status") == "failed":  # ``errors``: a list of {code, message}
        raise ProtocolError(f"the provider says the interaction failed: "
                            f"{body.get('errors')!r:.300}")


def thought(step: Mapping[str, Any], origin: Origin, *, complete: bool = True) -> Part | None:
    signature = text_of(step.get("signature"))
    summary = texts(step.get("summary")) or None
    if signature:
        return Reasoning(kind="signed", signature=signature, summary=summary, origin=origin,
                         complete=complete)
    if summary:
        return Reasoning(kind="summary", summary=summary, origin=origin, complete=False)
    return None


def call(step: Mapping[str, Any], at: str, arguments: str | None = None, *,
         fallback_id: str = "") -> ToolCall:
    """A ``function_call`` step; an id the server left out is made up (unique per request)."""
    ident, name = text_of(step.get("id")) or fallback_id, text_of(step.get("name"))
    if not name:
        raise ProtocolError(f"`{at}.name` is missing: a function call needs a name")
    if arguments is None:
        raw = step.get("arguments", {})
        arguments = shape.json_text(raw if raw is not None else {}, f"{at}.arguments")
    return ToolCall(id=ident, name=name, arguments=arguments)


def parts_of(steps: Any, origin: Origin, seed: str = "") -> list[Part]:
    if steps is None:
        return []
    if not isinstance(steps, list):
        raise ProtocolError(f"`steps` must be a list, not {shape.described(steps)}")
    parts: list[Part] = []
    for i, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise ProtocolError(f"`steps[{i}]` is not an object: {shape.described(step)}")
        kind = step.get("type")
        if kind == THOUGHT:
            found = thought(step, origin)
            if found is not None:
                parts.append(found)
        elif kind == OUTPUT:
            text = texts(step.get("content"))
            if text:
                parts.append(Text(text=text))
        elif kind == CALL:
            parts.append(call(step, f"steps[{i}]", fallback_id=f"call_{seed[:12]}_{i}"))
    return parts


def answer(parts: list[Part], origin: Origin, ident: str, *, complete: bool = True) -> Message:
    native = {NS: {ID_KEY: ident}} if ident else {}
    return Message(role="assistant", parts=tuple(parts), origin=origin, native=native,
                   incomplete=not complete)


def decode_response(body: Any, origin: Origin, *, seed: str = "") -> Done:
    """Decode a whole (non-streamed) ``Interaction``."""
    if not isinstance(body, Mapping):
        raise ProtocolError("response body is not a JSON object")
    check_error(body)
    if "steps" not in body and "status" not in body:
        raise ProtocolError("response has neither `steps` nor `status`: not an Interaction")
    parts = parts_of(body.get("steps"), origin, seed)
    status = text_of(body.get("status"))
    calls = any(isinstance(p, ToolCall) for p in parts)
    return Done(message=answer(parts, origin, text_of(body.get("id"))),
                usage=usage_of(body.get("usage")), finish_reason=status or None,
                finish=finish_of(status, calls=calls))
