"""Fold a streamed Interaction (SSE) into deltas and the final turn.

Events (google-genai 3.6.1 ``InteractionSSEEvent``, discriminated by ``event_type`` in the data,
so an SSE ``event:`` line is not needed): ``interaction.created`` (the id), ``step.start``
(``index``, ``step``), ``step.delta`` (``index``, ``delta``: ``text``, ``thought_summary``
(``content``), ``thought_signature`` (``signature``: ai.google.dev/gemini-api/docs/interactions),
``arguments_delta`` (``arguments``, a JSON fragment)), ``step.stop``, ``interaction.status_update``
and ``interaction.completed`` (the interaction: ``id``, ``status``, ``usage``), and ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.interactions.decode import (
    answer,
    call,
    check_error,
    finish_of,
    thought,
    usage_of,
)
from thoughtline.codecs.interactions.wire import CALL, OUTPUT, THOUGHT, text_of, texts
from thoughtline.errors import ProtocolError
from thoughtline.events import (
    Done,
    Event,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
)
from thoughtline.messages import Part, Text, ToolCall, Usage

_TERMINAL = frozenset({"completed", "requires_action", "incomplete", "budget_exceeded",
                       "cancelled", "failed"})


@dataclass(slots=True)
class _Step:
    kind: str
    start: Mapping[str, Any]
    text: list[str] = field(default_factory=list)
    signature: str = ""
    arguments: list[str] = field(default_factory=list)
    call_index: int = -1
    stopped: bool = False


class StreamFold:
    """Accumulates one streamed interaction (``codecs.base.StreamFold``)."""

    def __init__(self, origin: Any, *, seed: str = "") -> None:
        self.origin = origin
        self.seed = seed
        self.saw_chunk = False
        self._steps: dict[int, _Step] = {}
        self._id = ""
        self._status = ""
        self._usage = Usage()
        self._calls = 0

    @property
    def finished(self) -> bool:
        return self._status in _TERMINAL

    def add_event(self, event_type: str, payload: Any) -> list[Event]:
        if not isinstance(payload, Mapping):
            raise ProtocolError(f"stream event is not a JSON object: {shape.described(payload)}")
        self.saw_chunk = True
        kind = text_of(payload.get("event_type")) or event_type
        if kind == "error":
            raise ProtocolError(f"provider streamed an error: {payload.get('error')!r:.300}")
        if kind in ("interaction.created", "interaction.completed"):
            self._interaction(payload.get("interaction"), completed=kind.endswith("completed"))
        elif kind == "interaction.status_update":
            check_error(payload)
            self._status = text_of(payload.get("status")) or self._status
            self._id = self._id or text_of(payload.get("interaction_id"))
        elif kind == "step.start":
            return self._start(payload)
        elif kind == "step.delta":
            return self._delta(payload)
        elif kind == "step.stop":
            self._at(payload).stopped = True
        return []

    def _interaction(self, raw: Any, *, completed: bool) -> None:
        if not isinstance(raw, Mapping):
            return
        check_error(raw)
        self._id = text_of(raw.get("id")) or self._id
        status = text_of(raw.get("status"))
        if completed and not status:
            status = "completed"
        self._status = status or self._status
        if "usage" in raw:
            self._usage = usage_of(raw.get("usage"))

    def _at(self, payload: Mapping[str, Any]) -> _Step:
        index = shape.position(payload.get("index"), "index", 0)
        found = self._steps.get(index)
        if found is None:
            found = self._steps[index] = _Step(kind="", start={})
        return found

    def _start(self, payload: Mapping[str, Any]) -> list[Event]:
        raw = payload.get("step")
        step = raw if isinstance(raw, Mapping) else {}
        index = shape.position(payload.get("index"), "index", 0)
        slot = self._steps[index] = _Step(kind=text_of(step.get("type")), start=step)
        slot.signature = text_of(step.get("signature"))
        if slot.kind == THOUGHT:  # a start may already hold what later deltas would add
            slot.text.append(texts(step.get("summary")))
        elif slot.kind == OUTPUT:
            slot.text.append(texts(step.get("content")))
        elif slot.kind == CALL:
            slot.call_index = self._calls
            self._calls += 1
            ident = text_of(step.get("id")) or f"call_{self.seed[:12]}_{index}"
            return [ToolCallStarted(slot.call_index, ident, text_of(step.get("name")))]
        return []

    def _delta(self, payload: Mapping[str, Any]) -> list[Event]:
        slot = self._at(payload)
        delta = payload.get("delta")
        if not isinstance(delta, Mapping):
            raise ProtocolError(f"`delta` is not an object: {shape.described(delta)}")
        kind = delta.get("type")
        if kind == "text":
            piece = text_of(delta.get("text"))
            slot.kind = slot.kind or OUTPUT
            slot.text.append(piece)
            return [TextDelta(piece)] if piece else []
        if kind == "thought_summary":
            content = delta.get("content")
            piece = text_of(content.get("text")) if isinstance(content, Mapping) else ""
            slot.kind = slot.kind or THOUGHT
            slot.text.append(piece)
            return [ReasoningDelta(piece)] if piece else []
        if kind == "thought_signature":
            slot.kind = slot.kind or THOUGHT
            slot.signature = text_of(delta.get("signature")) or slot.signature
            return []
        if kind == "arguments_delta" and slot.kind == CALL:
            piece = text_of(delta.get("arguments"))
            slot.arguments.append(piece)
            return [ToolCallDelta(slot.call_index, piece)] if piece else []
        return []

    def _parts(self, complete: bool) -> list[Part]:
        parts: list[Part] = []
        for index in sorted(self._steps):
            slot = self._steps[index]
            if slot.kind == THOUGHT:
                summary = "".join(slot.text)
                step = {"signature": slot.signature,
                        "summary": [{"type": "text", "text": summary}] if summary else None}
                found = thought(step, self.origin, complete=complete or slot.stopped)
                if found is not None:
                    parts.append(found)
            elif slot.kind == OUTPUT and slot.text:
                parts.append(Text(text="".join(slot.text)))
            elif slot.kind == CALL:
                arguments = "".join(slot.arguments) if slot.arguments else None
                parts.append(call(slot.start, f"steps[{index}]", arguments,
                                  fallback_id=f"call_{self.seed[:12]}_{index}"))
        return parts

    def finish(self, *, complete: bool = True) -> Done:
        parts = self._parts(complete)
        calls = any(isinstance(p, ToolCall) for p in parts)
        return Done(message=answer(parts, self.origin, self._id, complete=complete),
                    usage=self._usage, finish_reason=self._status or None,
                    finish=finish_of(self._status, calls=calls) if self.finished else None)
