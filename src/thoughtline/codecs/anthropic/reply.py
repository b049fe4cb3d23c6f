"""The Messages API answer a gateway gives Anthropic clients: whole, streamed, or an error.

Owns rendering a canonical turn as a Messages ``message`` object and as the exact SSE sequence
(``message_start``, ``ping``, ``content_block_start`` / ``content_block_delta`` (``thinking_delta``,
``signature_delta``, ``text_delta``, ``input_json_delta``) / ``content_block_stop``,
``message_delta`` with ``stop_reason`` and usage, ``message_stop``), the ``error`` object and
event, and the ``count_tokens`` answer.

Reasoning the client must send back: a block that came from an Anthropic upstream goes out as
it came (``thinking`` with its real signature, ``redacted_thinking`` with its data); any other
reasoning becomes ``thinking`` blocks signed with the value the gateway minted for the turn (a
turn whose reasoning is all opaque — Gemini signatures, encrypted items — gets one empty-text
block), so the client echoes a reference the gateway can swap the stored turn back in for.
Pure; the minted value is given, never computed here.

Facts: platform.claude.com/docs/en/api/messages (objects), …/build-with-claude/streaming (events).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from thoughtline.codecs.anthropic.wire import API, NS, REDACTED, TEXT, THINKING, TOOL_USE
from thoughtline.events import (
    Done,
    Event,
    PartDone,
    ReasoningDelta,
    TextDelta,
)
from thoughtline.messages import FinishReason, Message, Opaque, Reasoning, Text, ToolCall, Usage

_STOP: Mapping[FinishReason, str] = {
    "stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
    "content_filter": "refusal", "refusal": "refusal", "pause": "pause_turn", "other": "end_turn",
}

#: HTTP status → Messages error type (platform.claude.com/docs/en/api/errors).
_ERRORS: Mapping[int, str] = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}


def own_reasoning(part: Reasoning) -> bool:
    """True for a block an Anthropic route made and signed: it goes to the client verbatim."""
    origin = part.origin
    return (origin is not None and origin.api == API and part.complete
            and ((part.kind == "signed" and bool(part.signature))
                 or (part.kind == "redacted" and bool(part.data))))


def _reasoning_block(part: Reasoning, minted: str) -> dict[str, Any] | None:
    if own_reasoning(part):
        if part.kind == "redacted":
            return {"type": REDACTED, "data": part.data}
        return {"type": THINKING, THINKING: part.text or "", "signature": part.signature}
    text = part.text or part.summary or ""
    if not text:
        return None
    return {"type": THINKING, THINKING: text, "signature": minted}


def _hidden(message: Message) -> bool:
    """True when the turn holds reasoning the client cannot be shown (kept in the store)."""
    for part in message.parts:
        if isinstance(part, Reasoning) and not own_reasoning(part) and not (
                part.text or part.summary):
            return True
        if isinstance(part, Opaque) and part.namespace != NS:
            return True
        if isinstance(part, ToolCall | Text) and any(k != NS for k in part.native):
            return True
    return False


def _tool_input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def content_json(message: Message, minted: str) -> list[dict[str, Any]]:
    """The turn's content blocks as the client will send them back."""
    blocks: list[dict[str, Any]] = []
    shown = False
    for part in message.parts:
        block: dict[str, Any] | None = None
        if isinstance(part, Reasoning):
            block = _reasoning_block(part, minted)
            shown = shown or (block is not None and block.get("signature") == minted)
        elif isinstance(part, Text) and part.text:
            block = {"type": TEXT, TEXT: part.text}
            citations = part.native.get(NS, {}).get("citations")
            if citations:
                block["citations"] = citations
        elif isinstance(part, ToolCall):
            block = {"type": TOOL_USE, "id": part.id, "name": part.name,
                     "input": _tool_input(part.arguments)}
        elif isinstance(part, Opaque) and part.namespace == NS:
            block = dict(part.native[NS])
        if block is not None:
            blocks.append(block)
    if minted and not shown and _hidden(message):
        blocks.insert(0, {"type": THINKING, THINKING: "", "signature": minted})
    return blocks


def stop_reason(done: Done) -> str:
    """The Messages ``stop_reason`` (tool calls win: the client must act)."""
    if done.message.tool_calls:
        return "tool_use"
    origin = done.message.origin
    if origin is not None and origin.api == API and done.finish_reason:
        return done.finish_reason
    return _STOP.get(done.finish or "stop", "end_turn")


def usage_json(usage: Usage, message: Message) -> dict[str, Any]:
    """Messages usage: ``input_tokens`` excludes cache reads (an Anthropic turn's are as given)."""
    origin = message.origin
    own = origin is not None and origin.api == API
    fresh = usage.input_tokens if own else max(usage.input_tokens - usage.cached_tokens, 0)
    return {"input_tokens": fresh, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage.cached_tokens,
            "output_tokens": usage.output_tokens}


def message_json(done: Done, *, response_id: str, model: str, minted: str = "") -> dict[str, Any]:
    """The whole ``message`` object for a finished turn."""
    return {"id": response_id, "type": "message", "role": "assistant", "model": model,
            "content": content_json(done.message, minted), "stop_reason": stop_reason(done),
            "stop_sequence": None, "usage": usage_json(done.usage, done.message)}


def count_tokens_json(tokens: int) -> dict[str, Any]:
    return {"input_tokens": tokens}


def error_type(status: int) -> str:
    """The Messages error ``type`` for an HTTP status."""
    found = _ERRORS.get(status)
    if found is not None:
        return found
    return "invalid_request_error" if 400 <= status < 500 else "api_error"


def error_json(message: str, *, status: int = 400, kind: str | None = None) -> dict[str, Any]:
    """The Messages error object."""
    return {"type": "error", "error": {"type": kind or error_type(status), "message": message}}


def _event(name: str, payload: Any) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def error_frame(message: str, *, status: int = 500, kind: str | None = None) -> bytes:
    """An ``error`` event inside an already started stream (the SDK raises on it)."""
    return _event("error", error_json(message, status=status, kind=kind))


class MessageStreamWriter:
    """Renders one streamed answer as Messages SSE events (bytes).

    Readable reasoning and text stream live; a thinking block is closed with its signature —
    the real one when the upstream reported the finished block (``PartDone``, which also places
    verbatim blocks), else the minted value. Tool calls go out whole at the end (their final
    input, one ``input_json_delta``): some upstreams stream arguments in another spelling than
    the stored turn's, and the client must send back exactly what is stored.
    """

    __slots__ = ("_index", "_minted", "_model", "_open", "_own", "_placed", "_response_id",
                 "_shown")

    def __init__(self, *, response_id: str, model: str, minted: str = "") -> None:
        self._response_id = response_id
        self._model = model
        self._minted = minted
        self._index = 0
        self._open: str | None = None  # the kind of the open block
        self._own = 0  # reasoning blocks replayed from the upstream's own (PartDone)
        self._placed = 0  # verbatim blocks replayed in place (PartDone)
        self._shown = False  # a block signed with the minted value went out

    def start(self) -> bytes:
        """``message_start`` and a ``ping``."""
        message: dict[str, Any] = {"id": self._response_id, "type": "message", "role": "assistant",
                   "model": self._model, "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
        return (_event("message_start", {"type": "message_start", "message": message})
                + _event("ping", {"type": "ping"}))

    def _delta(self, delta: Mapping[str, Any]) -> bytes:
        return _event("content_block_delta", {"type": "content_block_delta",
                                              "index": self._index, "delta": delta})

    def _begin(self, block: Mapping[str, Any]) -> bytes:
        self._open = block["type"]
        return _event("content_block_start", {"type": "content_block_start",
                                              "index": self._index, "content_block": block})

    def _close(self, signature: str | None = None) -> bytes:
        if self._open is None:
            return b""
        out = b""
        if self._open == THINKING:
            if signature is None:
                signature = self._minted
                self._shown = True
            out = self._delta({"type": "signature_delta", "signature": signature})
        out += _event("content_block_stop", {"type": "content_block_stop", "index": self._index})
        self._open = None
        self._index += 1
        return out

    def _whole(self, block: Mapping[str, Any]) -> bytes:
        """A block sent at once: start, its content as one delta, stop."""
        kind = block["type"]
        out = self._close()
        if kind == TOOL_USE:
            out += self._begin({**block, "input": {}})
            out += self._delta({"type": "input_json_delta",
                                "partial_json": orjson.dumps(block["input"]).decode()})
        elif kind == THINKING:
            out += self._begin({"type": THINKING, THINKING: "", "signature": ""})
            if block[THINKING]:
                out += self._delta({"type": "thinking_delta", THINKING: block[THINKING]})
            return out + self._close(block["signature"])
        else:
            out += self._begin(block)
        self._open = kind
        return out + self._close()

    def event(self, event: Event) -> bytes | None:
        """The frames for one event (None for events a client is not shown)."""
        if isinstance(event, ReasoningDelta):
            if not event.text:
                return None
            out = b"" if self._open == THINKING else self._close() + self._begin(
                {"type": THINKING, THINKING: "", "signature": ""})
            return out + self._delta({"type": "thinking_delta", THINKING: event.text})
        if isinstance(event, TextDelta):
            if not event.text:
                return None
            out = b"" if self._open == TEXT else self._close() + self._begin(
                {"type": TEXT, TEXT: ""})
            return out + self._delta({"type": "text_delta", TEXT: event.text})
        if isinstance(event, PartDone):
            part = event.part
            if isinstance(part, Opaque) and part.namespace == NS:
                self._placed += 1
                return self._whole(dict(part.native[NS]))
            if not isinstance(part, Reasoning) or not own_reasoning(part):
                return None
            self._own += 1
            if part.kind == "redacted":
                return self._whole({"type": REDACTED, "data": part.data})
            if self._open == THINKING:
                return self._close(part.signature)
            return self._whole({"type": THINKING, THINKING: part.text or "",
                                "signature": part.signature})
        return None

    def finish(self, done: Done) -> bytes:
        """The closing events: blocks not streamed, ``message_delta``, ``message_stop``."""
        out = [self._close()]
        own, placed = self._own, self._placed
        for block in content_json(done.message, self._minted):
            kind = block["type"]
            if kind == TEXT:
                continue  # streamed live
            if kind == THINKING and block["signature"] == self._minted:
                if block[THINKING] or self._shown:
                    continue  # streamed live, or the turn's reference went out already
            elif kind in (THINKING, REDACTED) and own:
                own -= 1  # replayed in place when the upstream finished it
                continue
            elif kind not in (TOOL_USE, THINKING, REDACTED) and placed:
                placed -= 1
                continue
            out.append(self._whole(block))
        delta = {"type": "message_delta",
                 "delta": {"stop_reason": stop_reason(done), "stop_sequence": None},
                 "usage": usage_json(done.usage, done.message)}
        out.append(_event("message_delta", delta))
        out.append(_event("message_stop", {"type": "message_stop"}))
        return b"".join(out)
