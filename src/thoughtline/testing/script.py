"""The scripted, deterministic conversation every chat emulator personality plays.

Owns *what* the emulated model says: reasoning text, answer text, and the one tool call of a tool
loop, all derived from the request so the same request always gets the same answer. Does not own how
a provider puts that on the wire (``replies``) or what it rejects (``rejections``).

Script: tools offered and the last message is a user message → reasoning + one call to the first
tool, its arguments following the tool's schema (``toolargs``); the last message is a tool result
→ reasoning + a final answer quoting it; otherwise → reasoning + text. System messages after the
last message (turn-scoped instructions) are passed over.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from thoughtline.testing.toolargs import arguments

CallIdStyle = Literal["openai", "mistral"]

_SNIPPET = 40


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedCall:
    """One tool call the script makes; ``arguments`` is the JSON text sent on the wire."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPlan:
    """Everything the emulated model produces for one request."""

    reasoning: str
    content: str
    tool_call: PlannedCall | None
    finish_reason: Literal["stop", "tool_calls"]
    request_digest: str


def message_text(message: Mapping[str, Any]) -> str:
    """The readable text of a message's ``content`` (a string or a list of text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def call_text(name: object, arguments: object) -> str:
    """A tool call as text: the name and the arguments, parsed and re-serialized canonically.

    What a Gemini function-call thought signature is bound to (Gemini parses arguments, so
    re-serializing them is not an edit).
    """
    try:
        parsed = orjson.loads(arguments) if isinstance(arguments, str | bytes) else arguments
        canonical = orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode()
    except (orjson.JSONDecodeError, TypeError):
        canonical = str(arguments)
    return f"{name}\n{canonical}"


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET else flat[:_SNIPPET].rstrip() + "…"


def _first_tool(tools: Sequence[Any]) -> tuple[str, Any]:
    """(name, parameters schema) of the first function tool offered."""
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return function["name"], function.get("parameters")
    return "tool", None


def _called_tool_name(messages: Sequence[Any], call_id: object) -> str:
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id") == call_id:
                function = call.get("function")
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    return function["name"]
    return "tool"


def _call_id(digest: str, style: CallIdStyle) -> str:
    # Mistral issues 9-character alphanumeric ids; everyone else here uses OpenAI's call_ form.
    return digest[:9] if style == "mistral" else f"call_{digest[:12]}"


def plan_turn(body: Mapping[str, Any], *, call_id_style: CallIdStyle = "openai") -> TurnPlan:
    """Plan the reply to a (validated) Chat Completions request body."""
    messages = body.get("messages") or []
    digest = hashlib.sha256(orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)).hexdigest()
    # A turn-scoped system message after the user's (Claude Code sends one) instructs the model;
    # what it answers is still the last message of the conversation before it.
    spoken = [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")]
    last = spoken[-1] if spoken and isinstance(spoken[-1], dict) else {}
    role = last.get("role") if isinstance(last.get("role"), str) else "user"
    turn = 1 + sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    text = _snippet(message_text(last))
    opening = f"Turn {turn}: the last message is a {role} message (digest {digest[:8]})."
    tools = body.get("tools")
    if role == "tool":
        name = _called_tool_name(messages, last.get("tool_call_id"))
        return TurnPlan(
            reasoning=f"{opening} The {name} tool returned “{text}”. That is enough to answer now.",
            content=f"The {name} tool reports: {text}",
            tool_call=None,
            finish_reason="stop",
            request_digest=digest,
        )
    if role == "user" and isinstance(tools, list) and tools:
        name, schema = _first_tool(tools)
        call = PlannedCall(
            id=_call_id(digest, call_id_style),
            name=name,
            arguments=json.dumps(arguments(schema, text, fallback={"query": text}),
                                 ensure_ascii=False),
        )
        return TurnPlan(
            reasoning=f"{opening} The user asks “{text}”. I should call the {name} tool first.",
            content="",
            tool_call=call,
            finish_reason="tool_calls",
            request_digest=digest,
        )
    return TurnPlan(
        reasoning=f"{opening} The user says “{text}”. I can answer that directly.",
        content=f"Scripted answer {turn} to: {text}",
        tool_call=None,
        finish_reason="stop",
        request_digest=digest,
    )
